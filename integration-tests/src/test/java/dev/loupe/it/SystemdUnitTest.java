package dev.loupe.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * systemd/loupe.service passes systemd-analyze verify without warnings (with /usr/bin/loupe pointing at the
 * package's launcher in this checkout) and rates at most 3.0 in systemd-analyze security. SystemdServiceTest
 * runs it for real.
 */
class SystemdUnitTest {
    @TempDir
    Path dir;

    @Test
    void unitVerifiesAndIsLeastPrivileged() throws Exception {
        Path repo = Path.of(System.getProperty("loupe.repo", "..")).toRealPath();
        String unit = Files.readString(repo.resolve("systemd/loupe.service"));
        assertTrue(unit.contains("ExecStart=/usr/bin/loupe run --config /etc/loupe/loupe.yaml"), unit);
        assertTrue(unit.contains("\nType=notify\n") && unit.contains("\nUser=loupe\n"), unit);
        assertFalse(unit.contains("ProtectKernelLogs=yes"), "it would drop CAP_SYSLOG, which kallsyms needs");
        Path rendered = dir.resolve("loupe.service");
        Files.writeString(rendered, unit.replace("/usr/bin/loupe", repo.resolve("systemd/loupe-launcher.sh").toString()));
        Commands.Result r = Commands.run(List.of("systemd-analyze", "verify", rendered.toString()), 60);
        assertEquals(0, r.exit(), r.output());
        assertFalse(r.output().contains("loupe.service:"), "no warnings about the unit:\n" + r.output());

        Commands.Result s = Commands.run(List.of("systemd-analyze", "security", "--offline=true", rendered.toString()), 60);
        Matcher m = Pattern.compile("Overall exposure level for loupe.service: (\\d+\\.\\d)").matcher(s.output());
        assertTrue(m.find(), s.output());
        assertTrue(Double.parseDouble(m.group(1)) <= 3.0, s.output());
    }
}
