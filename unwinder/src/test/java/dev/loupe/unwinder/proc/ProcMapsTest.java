package dev.loupe.unwinder.proc;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcMapsTest {
    @Test
    void parsesPathsWithSpacesDeletedAnonymousAndSkipsMalformed() {
        String maps = """
                55d0c0a00000-55d0c0a21000 r-xp 00001000 fd:01 1311 /opt/my app/bin (deleted)
                7f0000000000-7f0000001000 rw-p 00000000 00:00 0
                7ffd12345000-7ffd12347000 r-xp 00000000 00:00 0                          [vdso]
                garbage line
                ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
                7f1-7f0 r-xp 00000000 00:00 0 /backwards
                """;
        List<MapEntry> e = ProcMaps.parse(maps);
        assertEquals(4, e.size());
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
        assertEquals("", e.get(1).path());
        assertFalse(e.get(1).executable());
        assertEquals("[vdso]", e.get(2).path());
        assertFalse(e.get(2).fileBacked());
        assertEquals(0xffffffffff600000L, e.get(3).start(), "unsigned addresses");
    }

    @Test
    void readsOwnMaps() throws Exception {
        List<MapEntry> e = ProcMaps.read(Path.of("/proc"), (int) ProcessHandle.current().pid());
        assertTrue(e.stream().anyMatch(m -> m.path().endsWith("/java") || m.path().contains("libjvm.so")));
        assertTrue(e.stream().anyMatch(m -> m.path().equals("[vdso]") && m.executable()));
    }
}
