package dev.loupe.unwinder.python;

/**
 * A code object's line table read for one instruction: the line being run at an instruction index (code units), from
 * the table's bytes as the version writes them. Never throws on bad bytes: a table that ends early or runs past
 * itself gives 0 (unknown), never a guess.
 */
public final class LineTable {
    private LineTable() {}

    /**
     * 3.11+'s location table ({@code Objects/locations.md}): entries of a first byte {@code 1ccccnnn} (code c, n+1 code
     * units), then by code: 15 no location; 14 the long form (line delta as a signed varint, then end line, column and
     * end column as varints); 13 no column (line delta); 10-12 one line, delta c-10, two bytes of columns; 0-9 the short
     * form, one byte of columns, delta 0. Varints are 6 bits a byte, bit 6 continuing. Returns the line of
     * {@code index}, 0 if it has none or the table does not reach it.
     */
    public static int line311(byte[] table, int firstLine, int index) {
        if (index < 0) {
            return 0;
        }
        int line = firstLine;
        int addr = 0;
        int[] pos = {0};
        while (pos[0] < table.length) {
            int first = table[pos[0]++] & 0xff;
            if ((first & 0x80) == 0) {
                return 0; // not an entry's first byte: the table is not what this version writes
            }
            int code = (first >> 3) & 15;
            int units = (first & 7) + 1;
            boolean hasLine = true;
            switch (code) {
                case 15 -> hasLine = false;
                case 14 -> {
                    line += signedVarint(table, pos);
                    varint(table, pos);
                    varint(table, pos);
                    varint(table, pos);
                }
                case 13 -> line += signedVarint(table, pos);
                case 10, 11, 12 -> {
                    line += code - 10;
                    pos[0] += 2;
                }
                default -> pos[0] += 1;
            }
            if (pos[0] > table.length) {
                return 0;
            }
            if (index < addr + units) {
                return hasLine ? line : 0;
            }
            addr += units;
        }
        return 0;
    }

    private static int varint(byte[] b, int[] pos) {
        int shift = 0;
        int v = 0;
        while (true) {
            if (pos[0] >= b.length || shift > 28) {
                pos[0] = b.length + 1; // past the end: the caller sees a truncated table
                return 0;
            }
            int x = b[pos[0]++] & 0xff;
            v |= (x & 63) << shift;
            if ((x & 64) == 0) {
                return v;
            }
            shift += 6;
        }
    }

    private static int signedVarint(byte[] b, int[] pos) {
        int u = varint(b, pos);
        return (u & 1) != 0 ? -(u >>> 1) : u >>> 1;
    }

    /**
     * 3.10's {@code co_linetable} ({@code Objects/lnotab_notes.txt} at v3.10.0, read as {@code codeobject.c}'s
     * {@code PyLineTable_NextAddressRange} does): pairs of (bytecode length in bytes, unsigned; line increment, signed,
     * -128 for "no line"), each pair a range of bytecode that starts where the last one ended, at the line reached by
     * adding the increments so far (an empty range adds its increment and is skipped). Returns the line of the range
     * holding byte offset {@code offset}, 0 if that range has no line or the table does not reach it.
     */
    public static int linetable310(byte[] table, int firstLine, int offset) {
        if (offset < 0) {
            return 0;
        }
        int line = firstLine;
        int end = 0;
        for (int i = 0; i + 1 < table.length; i += 2) {
            int start = end;
            end += table[i] & 0xff;
            int delta = table[i + 1];
            boolean none = delta == -128;
            if (!none) {
                line += delta;
            }
            if (start <= offset && offset < end) {
                return none ? 0 : line;
            }
        }
        return 0;
    }

    /**
     * 3.9's {@code co_lnotab} ({@code Objects/lnotab_notes.txt}): pairs of (bytecode offset increment, line increment as a
     * signed byte); the line of byte offset {@code offset} is the first line plus the line increments of the pairs whose
     * offsets, summed, do not pass it. 0 for no offset.
     */
    public static int lnotab39(byte[] table, int firstLine, int offset) {
        if (offset < 0) {
            return 0;
        }
        int line = firstLine;
        int addr = 0;
        for (int i = 0; i + 1 < table.length; i += 2) {
            addr += table[i] & 0xff;
            if (addr > offset) {
                break;
            }
            line += table[i + 1]; // signed since 3.6
        }
        return line;
    }
}
