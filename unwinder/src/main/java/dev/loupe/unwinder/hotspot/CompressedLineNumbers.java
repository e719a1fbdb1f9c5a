package dev.loupe.unwinder.hotspot;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A method's line number table as HotSpot keeps it after the bytecodes in its {@code ConstMethod}
 * (oops/method.hpp's {@code CompressedLineNumberReadStream}): (bci, line) pairs as deltas from (0, 0), each one byte
 * {@code bci_delta << 3 | line_delta} when the bci delta fits 5 bits and the line delta 3 (and the byte is not 0xFF),
 * else 0xFF and two sign-folded CompressedStream ints ({@code (v >>> 1) ^ -(v & 1)}); a 0 byte ends the table. The
 * pairs are in class-file order, neither sorted nor one to one: a bci's line is that of a pair at the bci, else of the
 * pair with the largest bci below it ({@code Method::line_number_from_bci}).
 */
final class CompressedLineNumbers {
    /** A class file's LineNumberTable has at most 65,535 entries; a table longer than that is garbage. */
    static final int MAX_PAIRS = 65_535;

    private final int codeSize;
    private final int[] bcis;
    private final int[] lines;

    private CompressedLineNumbers(int codeSize, int[] bcis, int[] lines) {
        this.codeSize = codeSize;
        this.bcis = bcis;
        this.lines = lines;
    }

    /**
     * The table at {@code b}'s position, decoded with {@code excluded} bytes left out of the CompressedStream ints (1
     * from JDK 21, 0 before; see NmethodScopes); null unless it ends with its 0 byte inside {@code b} and every pair
     * has a bci in {@code [0, codeSize)} and a line in {@code [0, 65535]}, as the class file's verifier allowed.
     */
    static CompressedLineNumbers decode(ByteBuffer b, int codeSize, int excluded) {
        int[] pos = {b.position()};
        int[] bcis = new int[16];
        int[] lines = new int[16];
        int n = 0;
        long bci = 0;
        long line = 0;
        while (true) {
            if (pos[0] >= b.limit()) {
                return null;
            }
            int next = b.get(pos[0]++) & 0xFF;
            if (next == 0) {
                return new CompressedLineNumbers(codeSize, Arrays.copyOf(bcis, n), Arrays.copyOf(lines, n));
            }
            if (next == 0xFF) {
                long d1 = NmethodScopes.readInt(b, pos, excluded);
                long d2 = d1 < 0 ? -1 : NmethodScopes.readInt(b, pos, excluded);
                if (d2 < 0) {
                    return null;
                }
                bci += signed(d1);
                line += signed(d2);
            } else {
                bci += next >> 3;
                line += next & 7;
            }
            if (bci < 0 || bci >= codeSize || line < 0 || line > 65_535 || n == MAX_PAIRS) {
                return null;
            }
            if (n == bcis.length) {
                bcis = Arrays.copyOf(bcis, n * 2);
                lines = Arrays.copyOf(lines, n * 2);
            }
            bcis[n] = (int) bci;
            lines[n++] = (int) line;
        }
    }

    /** The table's smallest line (0 if it has none): the method's first statement. */
    int firstLine() {
        int min = 0;
        for (int line : lines) {
            if (line > 0 && (min == 0 || line < min)) {
                min = line;
            }
        }
        return min;
    }

    /** CompressedStream's sign folding undone: 0, -1, 1, -2, ... from 0, 1, 2, 3, ... */
    private static long signed(long folded) {
        int v = (int) folded;
        return (v >>> 1) ^ -(v & 1);
    }

    /**
     * The line of {@code bci} (-1, the synchronization entry, is 0's), or 0 when the table has none for it or the bci is
     * not one of the method's.
     */
    int line(int bci) {
        if (bci == -1) {
            bci = 0;
        }
        if (bci < 0 || bci >= codeSize) {
            return 0;
        }
        int bestBci = -1;
        int best = 0;
        for (int i = 0; i < bcis.length; i++) {
            if (bcis[i] == bci) {
                return lines[i];
            }
            if (bcis[i] < bci && bcis[i] >= bestBci) {
                bestBci = bcis[i];
                best = lines[i];
            }
        }
        return best;
    }

    /** Whether {@code o} has the same pairs (two decodings of one table that agree). */
    boolean sameAs(CompressedLineNumbers o) {
        return codeSize == o.codeSize && Arrays.equals(bcis, o.bcis) && Arrays.equals(lines, o.lines);
    }

    int pairs() {
        return bcis.length;
    }

    /** Heap held: the two arrays. */
    long bytes() {
        return 32 + 8L * bcis.length;
    }
}
