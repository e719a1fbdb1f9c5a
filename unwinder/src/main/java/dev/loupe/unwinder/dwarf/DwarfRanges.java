package dev.loupe.unwinder.dwarf;

import java.nio.ByteBuffer;

/**
 * A DIE's address ranges from {@code DW_AT_ranges}: DWARF 2-4's {@code .debug_ranges} (address pairs, base address
 * selection entries) and DWARF 5's {@code .debug_rnglists} (DW_RLE_* entries, {@code DW_FORM_rnglistx} through the
 * unit's offset table), with {@code .debug_addr} for the indexed addresses. Each list is bounded by its section.
 */
final class DwarfRanges {
    private static final int DW_FORM_RNGLISTX = 0x23;
    private static final int DW_RLE_END_OF_LIST = 0;
    private static final int DW_RLE_BASE_ADDRESSX = 1;
    private static final int DW_RLE_STARTX_ENDX = 2;
    private static final int DW_RLE_STARTX_LENGTH = 3;
    private static final int DW_RLE_OFFSET_PAIR = 4;
    private static final int DW_RLE_BASE_ADDRESS = 5;
    private static final int DW_RLE_START_END = 6;
    private static final int DW_RLE_START_LENGTH = 7;

    private final String name;
    private final ByteBuffer ranges; // .debug_ranges, may be null
    private final ByteBuffer rnglists; // .debug_rnglists, may be null
    private final ByteBuffer addr; // .debug_addr, may be null

    DwarfRanges(String name, ByteBuffer ranges, ByteBuffer rnglists, ByteBuffer addr) {
        this.name = name;
        this.ranges = ranges;
        this.rnglists = rnglists;
        this.addr = addr;
    }

    /** Growable [low, high) pairs. */
    static final class Pairs {
        long[] v = new long[16];
        int n; // longs used (2 a range)

        void add(long lo, long hi) {
            if (Long.compareUnsigned(lo, hi) >= 0) {
                return; // empty ranges name no code
            }
            if (n + 2 > v.length) {
                v = java.util.Arrays.copyOf(v, v.length * 2);
            }
            v[n++] = lo;
            v[n++] = hi;
        }
    }

    /** Appends the ranges of a {@code DW_AT_ranges} of {@code form} and {@code value} in {@code u} to {@code out}. */
    void read(DebugInfo.Unit u, int form, long value, Pairs out) throws DwarfException {
        if (u.version() < 5) {
            readRanges(u, value, out);
            return;
        }
        long offset = value;
        if (form == DW_FORM_RNGLISTX) {
            Cursor c = cursor(rnglists, ".debug_rnglists");
            long at = u.rnglistsBase() + value * u.offsetSize();
            if (value < 0 || value > rnglists.limit() || at < 0) {
                throw c.error("range list index " + Long.toUnsignedString(value) + " outside the section");
            }
            c.pos = at;
            offset = u.rnglistsBase() + c.unsigned(u.offsetSize());
        }
        readRnglist(u, offset, out);
    }

    private Cursor cursor(ByteBuffer b, String section) throws DwarfException {
        if (b == null) {
            throw new DwarfException(name + ": " + section + " is missing, a unit refers to it");
        }
        return new Cursor(name + ": " + section, b, 0, b.limit());
    }

    /** DWARF 2-4 {@code .debug_ranges}; a GNU split unit's offsets are from its skeleton's DW_AT_GNU_ranges_base. */
    private void readRanges(DebugInfo.Unit u, long offset, Pairs out) throws DwarfException {
        Cursor c = cursor(ranges, ".debug_ranges");
        c.pos = u.rnglistsBase() + offset;
        long base = u.lowPc();
        long max = u.addrSize() == 4 ? 0xffffffffL : -1L;
        while (true) { // each entry consumes 2 addresses: bounded by the section
            long lo = c.unsigned(u.addrSize());
            long hi = c.unsigned(u.addrSize());
            if (lo == 0 && hi == 0) {
                return;
            }
            if (lo == max) {
                base = hi;
            } else {
                out.add(base + lo, base + hi);
            }
        }
    }

    private void readRnglist(DebugInfo.Unit u, long offset, Pairs out) throws DwarfException {
        Cursor c = cursor(rnglists, ".debug_rnglists");
        c.pos = offset;
        long base = u.lowPc();
        while (true) { // each entry consumes at least its kind byte: bounded by the section
            int kind = c.u8();
            switch (kind) {
                case DW_RLE_END_OF_LIST -> {
                    return;
                }
                case DW_RLE_BASE_ADDRESSX -> base = address(u, c.uleb());
                case DW_RLE_STARTX_ENDX -> {
                    long lo = address(u, c.uleb());
                    out.add(lo, address(u, c.uleb()));
                }
                case DW_RLE_STARTX_LENGTH -> {
                    long lo = address(u, c.uleb());
                    out.add(lo, lo + c.uleb());
                }
                case DW_RLE_OFFSET_PAIR -> {
                    long lo = c.uleb();
                    out.add(base + lo, base + c.uleb());
                }
                case DW_RLE_BASE_ADDRESS -> base = c.unsigned(u.addrSize());
                case DW_RLE_START_END -> {
                    long lo = c.unsigned(u.addrSize());
                    out.add(lo, c.unsigned(u.addrSize()));
                }
                case DW_RLE_START_LENGTH -> {
                    long lo = c.unsigned(u.addrSize());
                    out.add(lo, lo + c.uleb());
                }
                default -> throw c.error("range list entry kind " + kind + " at offset " + (c.pos - 1));
            }
        }
    }

    /** Entry {@code index} of the unit's {@code .debug_addr} table (DW_FORM_addrx, DW_RLE_*x). */
    long address(DebugInfo.Unit u, long index) throws DwarfException {
        Cursor c = cursor(addr, ".debug_addr");
        if (index < 0 || index > addr.limit()) {
            throw c.error("address index " + Long.toUnsignedString(index) + " outside the section");
        }
        c.pos = u.addrBase() + index * u.addrSize();
        return c.unsigned(u.addrSize());
    }
}
