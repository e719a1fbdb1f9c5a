package dev.loupe.unwinder.ehframe;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The vdso's table, built from the bytes of this process's [vdso] mapping, matches readelf on the same bytes. */
class VdsoTest {
    @TempDir
    Path tmp;

    @Test
    void vdsoFromMemory() throws Exception {
        long start = -1;
        long end = -1;
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            if (line.endsWith("[vdso]")) {
                String[] r = line.split("\\s+")[0].split("-");
                start = Long.parseUnsignedLong(r[0], 16);
                end = Long.parseUnsignedLong(r[1], 16);
            }
        }
        assertTrue(start > 0, "no [vdso] mapping");
        ByteBuffer image = ByteBuffer.allocate((int) (end - start));
        try (FileChannel mem = FileChannel.open(Path.of("/proc/self/mem"), StandardOpenOption.READ)) {
            while (image.hasRemaining()) {
                if (mem.read(image, start + image.position()) < 0) {
                    break;
                }
            }
        }
        image.flip();
        UnwindTable t = UnwindTableBuilder.build("[vdso]", image.duplicate());
        t.verify();
        assertTrue(t.stats().fdes() >= 4, t.stats().toString());
        assertEquals(0, t.stats().skippedEntries() + t.stats().malformedFdes(), t.stats().firstProblems().toString());
        Path file = tmp.resolve("vdso.so");
        byte[] bytes = new byte[image.remaining()];
        image.get(bytes);
        Files.write(file, bytes);
        ReadelfOracleTest.Result r = ReadelfOracleTest.compare(file, t, tmp, Set.of(".eh_frame"));
        assertEquals(t.stats().fdes(), r.fdes());
        assertTrue(r.mismatches().isEmpty(), String.join("\n", r.mismatches()));
    }
}
