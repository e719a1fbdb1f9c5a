package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.fuzz.FuzzInput;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Fuzz target for HotSpot's compressed line number tables as a JVM's memory may hold them (freed, reused, lying):
 * {@link CompressedLineNumbers#decode} and {@link CompressedLineNumbers#line}. Input: a flags byte (bit 0: one excluded
 * byte, JDK 21+), the method's code size (u16), then the table's bytes. Anything thrown, more pairs than bytes, or a
 * line outside a class file's u2 is a finding; a table that does not hold together must decode to null.
 */
public final class CompressedLineNumbersFuzzTarget {
    private CompressedLineNumbersFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        int excluded = in.u8() & 1;
        int codeSize = in.u16();
        byte[] table = in.rest();
        CompressedLineNumbers t = CompressedLineNumbers.decode(ByteBuffer.wrap(table), codeSize, excluded);
        if (t == null) {
            return;
        }
        if (t.pairs() > table.length) {
            throw new IllegalStateException(t.pairs() + " pairs from " + table.length + " bytes");
        }
        for (int bci = -2; bci <= Math.min(codeSize, 512); bci++) {
            int line = t.line(bci);
            if (line < 0 || line > 65_535) {
                throw new IllegalStateException("line " + line + " at bci " + bci);
            }
            if ((bci < -1 || bci >= codeSize) && line != 0) {
                throw new IllegalStateException("a line for bci " + bci + " outside the method's " + codeSize + " bytes");
            }
        }
    }

    /**
     * Tables as javac's LineNumberTables become: compact pairs (bci delta 4, line delta 1), and escaped ones (a bci
     * delta of 40, a line going back 3) in both CompressedStream formats.
     */
    public static void writeSeeds(Path dir) throws Exception {
        Files.write(dir.resolve("seed-compact"), new byte[] {0, 0, 100, 0x00 | 7 << 3 | 0, (byte) (4 << 3 | 1), (byte) (4 << 3 | 1), 0});
        // 0xFF, zigzag(40) = 80, zigzag(-3) = 5, each + excluded
        Files.write(dir.resolve("seed-escaped-jdk21"), new byte[] {1, 0, 100, 8 | 2, (byte) 0xFF, 81, 6, 0});
        Files.write(dir.resolve("seed-escaped-jdk17"), new byte[] {0, 0, 100, 8 | 2, (byte) 0xFF, 80, 5, 0});
    }
}
