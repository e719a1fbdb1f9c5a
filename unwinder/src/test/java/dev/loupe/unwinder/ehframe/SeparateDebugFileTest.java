package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.TestPrograms;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** .debug_frame from a separate debug file, found by .gnu_debuglink (with its CRC) or by build id. */
class SeparateDebugFileTest {
    @TempDir
    Path tmp;

    @Test
    void debugFrameFromDebuglinkAndBuildId() throws Exception {
        Path prog = TestPrograms.compile(tmp, "prog", DebugFrameTest.PROGRAM, "-g", "-fno-asynchronous-unwind-tables",
                "-fomit-frame-pointer", "-Wl,--build-id");
        Path debug = tmp.resolve("prog.debug");
        TestPrograms.splitDebugFile(prog, debug, "--strip-debug");
        assertEquals(null, ElfSections.read(prog).find(".debug_frame"), "stripped");
        Path root = tmp.resolve("root");

        Optional<Path> byLink = DebugFiles.find(prog, root);
        assertEquals(Optional.of(debug), byLink);
        UnwindTable alone = UnwindTableBuilder.build(prog);
        UnwindTable t = UnwindTableBuilder.build(prog, byLink.get());
        assertEquals(0, alone.stats().debugFrameFdes());
        assertTrue(t.stats().debugFrameFdes() >= 4, t.stats().toString());
        ReadelfOracleTest.Result r = ReadelfOracleTest.compare(debug, t, tmp, Set.of(".debug_frame"));
        assertEquals(t.stats().debugFrameFdes(), r.fdes());
        assertTrue(r.mismatches().isEmpty(), String.join("\n", r.mismatches()));

        // A debuglink whose CRC does not match is not taken.
        Files.write(debug, new byte[] {1, 2, 3}, java.nio.file.StandardOpenOption.APPEND);
        assertEquals(Optional.empty(), DebugFiles.find(prog, root));

        // By build id under the debug root.
        String id = TestPrograms.run(List.of("readelf", "-n", prog.toString())).replaceAll("(?s).*Build ID: ([0-9a-f]+).*", "$1").trim();
        Path byId = TestPrograms.buildIdPath(root, id);
        Files.createDirectories(byId.getParent());
        Files.move(debug, byId);
        assertEquals(Optional.of(byId), DebugFiles.find(prog, root));
    }
}
