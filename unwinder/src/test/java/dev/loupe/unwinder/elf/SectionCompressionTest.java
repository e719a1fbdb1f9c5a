package dev.loupe.unwinder.elf;

import dev.loupe.unwinder.TestPrograms;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.zip.DataFormatException;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * zstd streams as the zstd command line writes them (an implementation other than the one reading them): decompressed
 * to the bytes compressed, never past the size a header claims; corrupt, truncated and greedy streams are errors.
 */
class SectionCompressionTest {
    @TempDir
    Path dir;

    private byte[] input() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; sb.length() < 200_000; i++) {
            sb.append("line ").append(i * 7919 % 1000).append(" of the table\n");
        }
        return sb.toString().getBytes();
    }

    private byte[] zstdCli(byte[] in, String... flags) throws Exception {
        Path f = dir.resolve("in");
        Files.write(f, in);
        String cmd = "zstd -q -c " + String.join(" ", flags) + " < '" + f + "' > '" + f + ".zst'";
        TestPrograms.run(List.of("sh", "-c", cmd));
        return Files.readAllBytes(dir.resolve("in.zst"));
    }

    @Test
    void zstdFramesDecompressToWhatWasCompressed() throws Exception {
        byte[] in = input();
        for (String level : List.of("-1", "-19")) {
            byte[] z = zstdCli(in, level);
            assertTrue(z.length < in.length / 4, level + ": " + z.length);
            assertArrayEquals(in, SectionCompression.decompress(SectionCompression.ELFCOMPRESS_ZSTD, ByteBuffer.wrap(z), in.length), level);
            // Never more than the header says: the caller compares the length with its header.
            assertEquals(1000, SectionCompression.decompress(SectionCompression.ELFCOMPRESS_ZSTD, ByteBuffer.wrap(z), 1000).length);
        }
        // Two frames one after the other: both are the section.
        byte[] a = zstdCli(Arrays.copyOf(in, 1000));
        byte[] b = zstdCli(Arrays.copyOfRange(in, 1000, 3000));
        ByteBuffer two = ByteBuffer.allocate(a.length + b.length).put(a).put(b).flip();
        assertArrayEquals(Arrays.copyOf(in, 3000), SectionCompression.decompress(SectionCompression.ELFCOMPRESS_ZSTD, two, 3000));
    }

    @Test
    void corruptTruncatedAndGreedyStreamsAreErrorsThatSaySo() throws Exception {
        byte[] in = input();
        byte[] z = zstdCli(in);
        // Truncated in the middle of a block.
        DataFormatException e = assertThrows(DataFormatException.class, () -> SectionCompression.decompress(
                SectionCompression.ELFCOMPRESS_ZSTD, ByteBuffer.wrap(z, 0, z.length / 2), in.length));
        assertTrue(e.getMessage().startsWith("corrupt zstd stream: "), e.getMessage());
        // Not a zstd frame at all.
        e = assertThrows(DataFormatException.class, () -> SectionCompression.decompress(
                SectionCompression.ELFCOMPRESS_ZSTD, ByteBuffer.wrap("not zstd".repeat(10).getBytes()), 100));
        assertTrue(e.getMessage().startsWith("corrupt zstd stream: "), e.getMessage());
        // Every byte flipped in turn in the first 64: an error or some bytes, never anything else escaping.
        for (int i = 0; i < 64; i++) {
            byte[] bad = z.clone();
            bad[i] ^= 0x5a;
            try {
                assertTrue(SectionCompression.decompress(SectionCompression.ELFCOMPRESS_ZSTD, ByteBuffer.wrap(bad), in.length).length <= in.length);
            } catch (DataFormatException ok) {
                assertTrue(ok.getMessage().startsWith("corrupt zstd stream: "), ok.getMessage());
            }
        }
        // A 128 MiB window (zstd --long=27 on a pipe, size unknown) for a 200 KB section: refused, not allocated.
        byte[] greedy = zstdCli(in, "--long=27");
        e = assertThrows(DataFormatException.class, () -> SectionCompression.decompress(
                SectionCompression.ELFCOMPRESS_ZSTD, ByteBuffer.wrap(greedy), in.length));
        assertTrue(e.getMessage().startsWith("corrupt zstd stream: "), e.getMessage());
        // An unknown type.
        e = assertThrows(DataFormatException.class, () -> SectionCompression.decompress(3, ByteBuffer.wrap(z), in.length));
        assertEquals("compression type 3 (only zlib and zstd are read)", e.getMessage());
    }
}
