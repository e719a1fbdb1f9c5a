package dev.loupe.unwinder.dwarf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A DWARF package file's unit index ({@code .debug_cu_index}: DWARF 5's, and the GNU extension's version 2 that
 * binutils' {@code dwp} writes for DWARF 4): which part of each {@code .dwo} section holds the split unit of a dwo id.
 * A package is the split units' {@code .dwo} files of a program put together (gcc {@code -gsplit-dwarf}, then
 * {@code dwp} or {@code llvm-dwp}); each section of a unit is a contribution, at an offset and of a size the index gives.
 * The index is checked against its section before anything is read from it; a probe visits each slot at most once.
 */
final class DwarfPackage {
    /** Columns of the index's table (DWARF 5 section 7.3.5.3; version 2 numbers them alike except these). */
    static final int SECT_INFO = 1;
    static final int SECT_ABBREV = 3;
    static final int SECT_LINE = 4;
    static final int SECT_STR_OFFSETS = 6;
    static final int SECT_RNGLISTS = 8; // DWARF 5 only (version 2's 8 is .debug_macro.dwo)

    /** A unit's part of each section: offset and size by column id, -1 where the unit has none. */
    record Contributions(long dwoId, long[] offset, long[] size) {
        long offset(int sect) {
            return sect < offset.length ? offset[sect] : -1;
        }

        long size(int sect) {
            return sect < size.length ? size[sect] : -1;
        }
    }

    private final String name;
    private final ByteBuffer index;
    private final int version;
    private final int columns;
    private final int units;
    private final int slots;
    private final int[] columnIds;

    private DwarfPackage(String name, ByteBuffer index, int version, int columns, int units, int slots, int[] columnIds) {
        this.name = name;
        this.index = index;
        this.version = version;
        this.columns = columns;
        this.units = units;
        this.slots = slots;
        this.columnIds = columnIds;
    }

    /** Reads the index's header and checks that its tables lie within the section. */
    static DwarfPackage parse(String name, ByteBuffer cuIndex) throws DwarfException {
        ByteBuffer b = cuIndex.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        String what = name + ": .debug_cu_index";
        if (b.limit() < 16) {
            throw new DwarfException(what + ": truncated header (" + b.limit() + " bytes)");
        }
        int version = b.getInt(0); // version 5: a 2-byte version and 2 bytes of padding, 0
        if (version != 2 && version != 5) {
            throw new DwarfException(what + ": version " + Integer.toUnsignedString(version) + " (2 and 5 are read)");
        }
        long columns = b.getInt(4) & 0xffffffffL;
        long units = b.getInt(8) & 0xffffffffL;
        long slots = b.getInt(12) & 0xffffffffL;
        if (columns == 0 || columns > 16 || units > slots || slots > (1 << 24) || (slots & (slots - 1)) != 0) {
            throw new DwarfException(what + ": " + columns + " columns, " + units + " units, " + slots
                    + " slots (slots a power of two, no fewer than units; at most 16 columns)");
        }
        long need = 16 + slots * 12 + columns * 4 + 2 * units * columns * 4;
        if (need > b.limit()) {
            throw new DwarfException(what + ": its tables need " + need + " bytes, the section has " + b.limit());
        }
        int[] ids = new int[(int) columns];
        int at = (int) (16 + slots * 12);
        for (int c = 0; c < columns; c++) {
            ids[c] = b.getInt(at + 4 * c);
            if (ids[c] <= 0 || ids[c] > 8) {
                throw new DwarfException(what + ": column " + c + " is section " + Integer.toUnsignedString(ids[c]));
            }
        }
        return new DwarfPackage(name, b, version, (int) columns, (int) units, (int) slots, ids);
    }

    int version() {
        return version;
    }

    int unitCount() {
        return units;
    }

    /** The contributions of the unit with {@code dwoId}, null if the package has none. */
    Contributions find(long dwoId) throws DwarfException {
        int mask = slots - 1;
        int h = (int) (dwoId & mask);
        int step = (int) ((dwoId >>> 32) & mask) | 1;
        for (int probes = 0; probes < slots; probes++, h = (h + step) & mask) {
            long sig = index.getLong(16 + 8 * h);
            int row = index.getInt(16 + 8 * slots + 4 * h);
            if (row == 0) {
                return null; // an empty slot ends the probe
            }
            if (sig == dwoId && row != 0) {
                if (row < 0 || row > units) {
                    throw new DwarfException(name + ": .debug_cu_index: slot " + h + " names row " + Integer.toUnsignedString(row)
                            + " of " + units);
                }
                return contributions(dwoId, row - 1);
            }
        }
        return null;
    }

    private Contributions contributions(long dwoId, int row) {
        long[] offset = new long[9];
        long[] size = new long[9];
        java.util.Arrays.fill(offset, -1);
        java.util.Arrays.fill(size, -1);
        int offsets = 16 + slots * 12 + columns * 4;
        int sizes = offsets + units * columns * 4;
        for (int c = 0; c < columns; c++) {
            int sect = columnIds[c];
            if (version == 2 && sect == SECT_RNGLISTS) {
                continue; // version 2's column 8 is .debug_macro.dwo, not read
            }
            offset[sect] = index.getInt(offsets + 4 * (row * columns + c)) & 0xffffffffL;
            size[sect] = index.getInt(sizes + 4 * (row * columns + c)) & 0xffffffffL;
        }
        return new Contributions(dwoId, offset, size);
    }

    /**
     * {@code section}'s contribution of column {@code sect}: its slice; the whole section where the index has no such
     * column (a section every unit shares), null where the section is missing.
     */
    static ByteBuffer slice(String name, String sectionName, ByteBuffer section, Contributions c, int sect) throws DwarfException {
        if (section == null) {
            return null;
        }
        long off = c.offset(sect);
        long size = c.size(sect);
        if (off < 0) {
            return section;
        }
        if (off + size > section.limit()) {
            throw new DwarfException(name + ": " + sectionName + ": the contribution of unit 0x" + Long.toHexString(c.dwoId())
                    + " at " + off + " of " + size + " bytes passes the section's end (" + section.limit() + ")");
        }
        return section.slice((int) off, (int) size);
    }
}
