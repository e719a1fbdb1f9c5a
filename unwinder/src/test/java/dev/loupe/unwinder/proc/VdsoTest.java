package dev.loupe.unwinder.proc;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class VdsoTest {
    static final Path PROC = Path.of("/proc");

    @TempDir
    Path dir;

    /** Our own image is the whole [vdso] mapping, an ELF, and the same bytes another process has at another address. */
    @Test
    void ownImageIsTheImageOfEveryProcess() throws Exception {
        MapEntry own = Vdso.mapping(PROC.resolve("self")).orElseThrow();
        byte[] image = Vdso.ownImage();
        assertEquals(own.end() - own.start(), image.length);
        assertArrayEquals(new byte[] {0x7f, 'E', 'L', 'F'}, Arrays.copyOf(image, 4));
        Process other = new ProcessBuilder("sleep", "60").start();
        try {
            Path otherDir = PROC.resolve(Long.toString(other.pid()));
            MapEntry theirs = null;
            for (int i = 0; i < 200 && theirs == null; i++) {
                // Once sleep runs (not the spawn helper before its exec): sleep's own [vdso].
                boolean execd = ProcMaps.read(PROC, (int) other.pid()).stream().anyMatch(m -> m.path().endsWith("/sleep"));
                theirs = execd ? Vdso.mapping(otherDir).orElse(null) : null;
                if (theirs == null) {
                    Thread.sleep(10);
                }
            }
            assertNotEquals(null, theirs, "sleep's [vdso]");
            assertNotEquals(own.start(), theirs.start(), "ASLR: another address");
            assertArrayEquals(image, Vdso.read(otherDir, theirs));
        } finally {
            other.destroyForcibly();
            other.waitFor();
        }
    }

    @Test
    void missingMappingAndImplausibleSize() throws Exception {
        Path fake = Files.createDirectories(dir.resolve("42"));
        Files.writeString(fake.resolve("maps"), "7f0000000000-7f0000001000 r-xp 00000000 08:01 12 /opt/app\n");
        assertEquals(Optional.empty(), Vdso.mapping(fake));
        MapEntry huge = new MapEntry(0x7f0000000000L, 0x7f0000200000L, "r-xp", 0, 0, 0, 0, "[vdso]", false);
        assertEquals("implausible [vdso] size 2097152", assertThrows(IOException.class, () -> Vdso.read(fake, huge)).getMessage());
    }
}
