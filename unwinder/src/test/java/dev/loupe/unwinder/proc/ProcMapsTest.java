package dev.loupe.unwinder.proc;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcMapsTest {
    @TempDir
    Path dir;

    @Test
    void parsesPathsWithSpacesDeletedAnonymousAndSkipsMalformed() {
        String maps = """
                55d0c0a00000-55d0c0a21000 r-xp 00001000 fd:01 1311                       /opt/my app/bin (deleted)
                7f0000000000-7f0000001000 rw-p 00000000 00:00 0\s
                7ffd12345000-7ffd12347000 r-xp 00000000 00:00 0                          [vdso]
                garbage line
                ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
                7f1-7f0 r-xp 00000000 00:00 0 /backwards
                7f2000000000-7f2000001000 r-xp 00000000 103:02 99 /dev dir/lib (x).so
                7f3000000000-7f3000001000 r-xp zz 00:00 0 /bad-offset

                7f4000000000-7f4000001000 r-xp 00000000 00:00
                7f5000000000-7f5000001000 r--p 00000000 00:00 0 [anon:named region]
                """;
        ProcMaps.Parsed parsed = ProcMaps.parseCounted(maps);
        List<MapEntry> e = parsed.entries();
        assertEquals(6, e.size());
        assertEquals(4, parsed.malformedLines(), "garbage, backwards, bad offset, missing inode; the blank line is not counted");
        MapEntry bin = e.get(0);
        assertEquals(0x55d0c0a00000L, bin.start());
        assertEquals(0x55d0c0a21000L, bin.end());
        assertEquals(0x1000, bin.offset());
        assertEquals(0xfd, bin.devMajor());
        assertEquals(1, bin.devMinor());
        assertEquals(1311, bin.inode());
        assertEquals("/opt/my app/bin", bin.path());
        assertTrue(bin.deleted());
        assertTrue(bin.executable() && bin.fileBacked());
        assertEquals("55d0c0a00000-55d0c0a21000", bin.mapFilesName());
        assertEquals("", e.get(1).path(), "anonymous (the kernel leaves a trailing space)");
        assertFalse(e.get(1).executable());
        assertFalse(e.get(1).deleted());
        assertEquals("[vdso]", e.get(2).path());
        assertFalse(e.get(2).fileBacked());
        assertEquals(0xffffffffff600000L, e.get(3).start(), "unsigned addresses");
        assertEquals(0x103, e.get(4).devMajor(), "majors above 0xff print as 3 hex digits");
        assertEquals("/dev dir/lib (x).so", e.get(4).path());
        assertEquals("[anon:named region]", e.get(5).path());
    }

    @Test
    void readsOwnMaps() throws Exception {
        List<MapEntry> e = ProcMaps.read(Path.of("/proc"), (int) ProcessHandle.current().pid());
        assertTrue(e.stream().anyMatch(m -> m.path().endsWith("/java") || m.path().contains("libjvm.so")));
        assertTrue(e.stream().anyMatch(m -> m.path().equals("[vdso]") && m.executable()));
        assertEquals(0, ProcMaps.readCounted(Path.of("/proc"), (int) ProcessHandle.current().pid()).malformedLines());
    }

    /** Paths are bytes, not necessarily UTF-8: one odd file name must not make the whole file unreadable. */
    @Test
    void invalidUtf8IsDecodedLeniently() throws Exception {
        Path pidDir = Files.createDirectories(dir.resolve("7"));
        byte[] line = "400000-401000 r-xp 00000000 08:01 12 /opt/caf\u00e9-X\n".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
        Files.write(pidDir.resolve("maps"), line); // 0xE9 alone is not valid UTF-8
        List<MapEntry> e = ProcMaps.read(dir, 7);
        assertEquals(1, e.size());
        assertEquals("/opt/caf\uFFFD-X", e.get(0).path());
    }
}
