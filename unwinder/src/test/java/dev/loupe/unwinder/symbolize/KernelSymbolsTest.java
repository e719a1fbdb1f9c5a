package dev.loupe.unwinder.symbolize;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KernelSymbolsTest {

    /** Streaming through a 64 KiB buffer must see exactly what parsing the whole text sees. */
    @Test
    void streamedLoadEqualsWholeParseAcrossBufferBoundaries(@TempDir Path dir) throws IOException {
        StringBuilder text = new StringBuilder();
        long addr = 0xffffffff81000000L;
        int i = 0;
        while (text.length() < 300_000) { // several buffers; line ends fall at every offset mod 64 KiB
            String name = "fn_" + i + "_" + "x".repeat(i % 37);
            char type = "tTwWdb".charAt(i % 6);
            text.append(Long.toHexString(addr)).append(' ').append(type).append(' ').append(name);
            if (i % 5 == 0) {
                text.append("\t[mod").append(i % 3).append(']');
            }
            text.append('\n');
            addr += 16 + (i % 7) * 8;
            i++;
        }
        text.append(Long.toHexString(addr)).append(" T last_unterminated"); // no final newline
        Path file = dir.resolve("kallsyms");
        byte[] bytes = text.toString().getBytes(StandardCharsets.US_ASCII);
        Files.write(file, bytes);

        KernelSymbols whole = KernelSymbols.parse(bytes);
        KernelSymbols streamed = KernelSymbols.load(file);
        assertTrue(whole.table.size() > 3_000, "text symbols: " + whole.table.size());
        assertEquals(whole.table.size(), streamed.table.size());
        for (int k = 0; k < whole.table.size(); k++) {
            assertEquals(whole.table.start(k), streamed.table.start(k), "start of " + k);
            assertEquals(whole.table.name(k), streamed.table.name(k), "name of " + k);
        }
        assertEquals("last_unterminated", streamed.table.lookup(addr));
        assertEquals(whole.lowest, streamed.lowest);
        assertEquals(whole.highest, streamed.highest);
        assertFalse(streamed.restricted);
    }

    @Test
    void zeroAddressesMeanRestricted(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("kallsyms");
        Files.writeString(file, "0000000000000000 T _stext\n0000000000000000 t foo\t[bar]\n");
        KernelSymbols k = KernelSymbols.load(file);
        assertTrue(k.restricted);
        assertEquals(0, k.table.size());
    }

    /**
     * The real /proc/kallsyms (which reports size 0) streamed as parsed whole. BPF programs (other tests,
     * other tools) come and go in it, so the streamed read is compared with text that was the same just
     * before and just after it.
     */
    @Test
    void realKallsymsLoads() throws IOException {
        Path real = Path.of("/proc/kallsyms");
        for (int attempt = 0; attempt < 20; attempt++) {
            byte[] before = Files.readAllBytes(real);
            KernelSymbols k = KernelSymbols.load(real);
            if (Arrays.equals(before, Files.readAllBytes(real))) {
                KernelSymbols whole = KernelSymbols.parse(before);
                assertEquals(whole.table.size(), k.table.size());
                assertEquals(whole.lowest, k.lowest);
                assertEquals(whole.highest, k.highest);
                return;
            }
        }
        fail("/proc/kallsyms changed during each of 20 reads");
    }
}
