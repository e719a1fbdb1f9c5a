package dev.loupe.unwinder.dwarf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/** Bounds-checked little-endian reads over one section: every read past {@code end} is a {@link DwarfException}. */
final class Cursor {
    private static final int MAX_STRING = 4096;

    private final String what; // "FILE: .debug_line", the prefix of every error
    private final ByteBuffer b;
    long pos;
    long end;

    Cursor(String what, ByteBuffer b, long pos, long end) {
        this.what = what;
        this.b = b.order(ByteOrder.LITTLE_ENDIAN);
        this.pos = pos;
        this.end = Math.min(end, b.limit());
    }

    DwarfException error(String problem) {
        return new DwarfException(what + ": " + problem);
    }

    private int at(int n) throws DwarfException {
        if (pos < 0 || pos > end - n) {
            throw error("truncated: " + n + " bytes wanted at offset " + pos + ", the data ends at " + end);
        }
        int i = (int) pos;
        pos += n;
        return i;
    }

    int u8() throws DwarfException {
        return b.get(at(1)) & 0xff;
    }

    int i8() throws DwarfException {
        return b.get(at(1));
    }

    int u16() throws DwarfException {
        return b.getShort(at(2)) & 0xffff;
    }

    long u32() throws DwarfException {
        return Integer.toUnsignedLong(b.getInt(at(4)));
    }

    long u64() throws DwarfException {
        return b.getLong(at(8));
    }

    /**
     * A unit's initial length at the cursor (DWARF's 32-bit form, or 0xffffffff and the 64-bit one), checked against
     * the data's end ({@code limit}) and at least {@code minLength}; the unit's end becomes this cursor's end. Returns the
     * unit's offset size: 4 or 8. {@code at}: where the unit starts, for errors.
     */
    int unitLength(long at, long minLength, long limit) throws DwarfException {
        long length = u32();
        int offsetSize = 4;
        if (length == 0xffffffffL) {
            length = u64();
            offsetSize = 8;
        } else if (length >= 0xfffffff0L) {
            throw error("unit at " + at + " has reserved length 0x" + Long.toHexString(length));
        }
        if (length < minLength || length > limit - pos) {
            throw error("unit at " + at + " of length " + Long.toUnsignedString(length) + " runs past the section's end ("
                    + limit + ")");
        }
        end = pos + length;
        return offsetSize;
    }

    /** An unsigned value of {@code size} bytes (1, 2, 4 or 8). */
    long unsigned(int size) throws DwarfException {
        return switch (size) {
            case 1 -> u8();
            case 2 -> u16();
            case 4 -> u32();
            case 8 -> u64();
            default -> throw error("unsupported value size " + size);
        };
    }

    long uleb() throws DwarfException {
        long v = 0;
        for (int shift = 0; shift < 70; shift += 7) {
            int x = u8();
            if (shift < 64) {
                v |= (long) (x & 0x7f) << shift;
            }
            if ((x & 0x80) == 0) {
                return v;
            }
        }
        throw error("LEB128 longer than 10 bytes at offset " + pos);
    }

    long sleb() throws DwarfException {
        long v = 0;
        int shift = 0;
        int x;
        do {
            if (shift >= 70) {
                throw error("LEB128 longer than 10 bytes at offset " + pos);
            }
            x = u8();
            if (shift < 64) {
                v |= (long) (x & 0x7f) << shift;
            }
            shift += 7;
        } while ((x & 0x80) != 0);
        if (shift < 64 && (x & 0x40) != 0) {
            v |= -1L << shift;
        }
        return v;
    }

    void skip(long n) throws DwarfException {
        if (n < 0 || pos > end - n) {
            throw error("truncated: skipping " + n + " bytes at offset " + pos + ", the data ends at " + end);
        }
        pos += n;
    }

    /** A NUL-terminated UTF-8 string at the cursor. */
    String cstring() throws DwarfException {
        int to = terminator(pos);
        String s = string((int) pos, to);
        pos = to + 1L;
        return s;
    }

    /** Moves past a NUL-terminated string of any length (within the data). */
    void skipCString() throws DwarfException {
        while (u8() != 0) { // each step consumes a byte: past end is the truncation error
        }
    }

    /** A NUL-terminated UTF-8 string at {@code off} of this cursor's buffer (another section's, for string forms). */
    String cstringAt(long off) throws DwarfException {
        return string((int) off, terminator(off));
    }

    /** The index of the NUL ending the string at {@code off}. */
    private int terminator(long off) throws DwarfException {
        long limit = Math.min(end, b.limit());
        if (off < 0 || off >= limit) {
            throw error("string at offset " + off + " lies outside the " + limit + "-byte section");
        }
        int to = (int) off;
        int stop = (int) Math.min(limit, off + MAX_STRING);
        while (to < stop && b.get(to) != 0) {
            to++;
        }
        if (to == stop) {
            throw error("string at offset " + off + " is not terminated within " + MAX_STRING + " bytes");
        }
        return to;
    }

    private String string(int from, int to) {
        byte[] s = new byte[to - from];
        b.get(from, s);
        return new String(s, StandardCharsets.UTF_8);
    }
}
