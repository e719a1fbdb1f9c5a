package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.proc.Vdso;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The vdso's table, built from the bytes of this process's [vdso] mapping, matches readelf on the same bytes. */
class VdsoTest {
    @TempDir
    Path tmp;

    @Test
    void vdsoFromMemory() throws Exception {
        ByteBuffer image = ByteBuffer.wrap(Vdso.ownImage());
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
