package dev.loupe.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** systemd/loupe.service passes systemd-analyze verify (with /opt/loupe pointing at this checkout). */
class SystemdUnitTest {
    @TempDir
    Path dir;

    @Test
    void unitVerifies() throws Exception {
        Path repo = Path.of(System.getProperty("loupe.repo", "..")).toRealPath();
        String unit = Files.readString(repo.resolve("systemd/loupe.service"));
        assertTrue(unit.contains("ExecStart=/opt/loupe/loupe run"), unit);
        Path rendered = dir.resolve("loupe.service");
        Files.writeString(rendered, unit.replace("/opt/loupe/", repo + "/"));
        Commands.Result r = Commands.run(List.of("systemd-analyze", "verify", rendered.toString()), 60);
        assertEquals(0, r.exit(), r.output());
        assertTrue(!r.output().contains("loupe.service:"), "no warnings about the unit:\n" + r.output());
    }
}
