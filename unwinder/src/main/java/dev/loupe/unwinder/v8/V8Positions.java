package dev.loupe.unwinder.v8;

import java.util.Arrays;

/**
 * A function's source position table as V8 writes it into a ByteArray (V8 10-12; {@code source-position-table.cc}):
 * entries of two variable-length integers each (7 bits a byte, low bits first, the high bit set on all but the
 * last byte; zig-zag signed), deltas from the entry before: the code offset (a bytecode offset, or a pc offset in
 * optimized code), its sign telling a statement's position ({@code >= 0}) from an expression's ({@code -delta - 1}),
 * then the source position as {@code SourcePosition::raw()}: bit 0 external, bits 1-30 the script offset, bits 31-46
 * the inlining id plus 1. The position of code offset {@code o} is the last entry's at or before it, as
 * {@code AbstractCode::SourcePosition} takes it.
 *
 * @param codeOffsets   ascending (not strictly: several positions may share an offset)
 * @param scriptOffsets the script offset of each entry (characters from the script's start)
 */
record V8Positions(int[] codeOffsets, int[] scriptOffsets) {
    /** Entries read at most (a table longer than this is no table this reads). */
    static final int MAX_ENTRIES = 1 << 20;

    /** The table's entries; {@link V8Objects.NotObject} for bytes that are no such table (cut short, not ascending). */
    static V8Positions decode(byte[] b, int length) throws V8Objects.NotObject {
        int[] codes = new int[16];
        int[] scripts = new int[16];
        int n = 0;
        int[] at = {0};
        long code = 0;
        long raw = 0;
        while (at[0] < length) {
            long delta = varint(b, length, at);
            code += delta >= 0 ? delta : -delta - 1;
            raw += varint(b, length, at);
            if (code < 0 || code > Integer.MAX_VALUE || raw < 0) {
                throw new V8Objects.NotObject("source position table: code offset " + code + ", position " + raw);
            }
            if (n == MAX_ENTRIES) {
                throw new V8Objects.NotObject("source position table of more than " + MAX_ENTRIES + " entries");
            }
            if (n == codes.length) {
                codes = Arrays.copyOf(codes, 2 * n);
                scripts = Arrays.copyOf(scripts, 2 * n);
            }
            codes[n] = (int) code;
            scripts[n++] = (int) ((raw >>> 1) & ((1 << 30) - 1));
        }
        return new V8Positions(Arrays.copyOf(codes, n), Arrays.copyOf(scripts, n));
    }

    private static long varint(byte[] b, int length, int[] at) throws V8Objects.NotObject {
        long bits = 0;
        for (int shift = 0; ; shift += 7) {
            if (at[0] >= length || shift > 63) {
                throw new V8Objects.NotObject("source position table cut short at byte " + at[0]);
            }
            int current = b[at[0]++] & 0xff;
            bits |= (long) (current & 0x7f) << shift;
            if ((current & 0x80) == 0) {
                return (bits >>> 1) ^ -(bits & 1);
            }
        }
    }

    /** The script offset of code offset {@code offset}, or -1 when no entry is at or before it. */
    int scriptOffset(int offset) {
        int position = -1;
        for (int i = 0; i < codeOffsets.length && codeOffsets[i] <= offset; i++) {
            position = scriptOffsets[i];
        }
        return position;
    }

    long bytes() {
        return 32 + 8L * codeOffsets.length;
    }
}
