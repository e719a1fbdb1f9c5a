package dev.loupe.unwinder.dwarf;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@code .debug_line} section (DWARF 2 to 5, 32- and 64-bit units): which source file and line each address
 * comes from. Opening it runs every line program once to index its sequences (address ranges and the unit they are
 * in: three numbers a sequence, no rows kept); a lookup decodes only the unit holding the address, and keeps the
 * last {@link #CACHED_UNITS} decoded units. The section itself stays in the caller's buffer (memory-mapped for an
 * uncompressed section).
 *
 * <p>Malformed input (truncated headers, lengths past the end, unknown forms, zero line_range) is a
 * {@link DwarfException} naming the problem; work is bounded by the section's size (every opcode consumes bytes).
 */
public final class DebugLine {
    static final int CACHED_UNITS = 16;
    /** More sequences than this in one file is taken for hostile input (a sequence is at least a few bytes). */
    private static final int MAX_SEQUENCES = 4 << 20;

    private static final int DW_LNS_COPY = 1;
    private static final int DW_LNS_ADVANCE_PC = 2;
    private static final int DW_LNS_ADVANCE_LINE = 3;
    private static final int DW_LNS_SET_FILE = 4;
    private static final int DW_LNS_CONST_ADD_PC = 8;
    private static final int DW_LNS_FIXED_ADVANCE_PC = 9;
    private static final int DW_LNE_END_SEQUENCE = 1;
    private static final int DW_LNE_SET_ADDRESS = 2;
    private static final int DW_LNE_DEFINE_FILE = 3;
    private static final int DW_LNCT_PATH = 1;
    private static final int DW_LNCT_DIRECTORY_INDEX = 2;
    private static final int DW_FORM_BLOCK = 0x09;
    private static final int DW_FORM_DATA1 = 0x0b;
    private static final int DW_FORM_DATA2 = 0x05;
    private static final int DW_FORM_DATA4 = 0x06;
    private static final int DW_FORM_DATA8 = 0x07;
    private static final int DW_FORM_DATA16 = 0x1e;
    private static final int DW_FORM_STRING = 0x08;
    private static final int DW_FORM_STRP = 0x0e;
    private static final int DW_FORM_UDATA = 0x0f;
    private static final int DW_FORM_LINE_STRP = 0x1f;
    private static final int DW_FORM_STRX = 0x1a;
    private static final int DW_FORM_STRX1 = 0x25;
    private static final int DW_FORM_STRX4 = 0x28;

    /** Where a DWARF 2-4 unit's relative names are relative to: its unit's DW_AT_comp_dir (from .debug_info). */
    public interface CompDirs {
        CompDirs NONE = lineTable -> null;

        /** The compilation directory of the unit whose line table is at {@code lineTable}; null if unknown. */
        String compDir(long lineTable);
    }

    /** A source position: {@code file} null when the table names none. */
    public record Position(String file, int line) {}

    private final String name;
    private final ByteBuffer section;
    private final ByteBuffer lineStr; // .debug_line_str, may be null
    private final ByteBuffer str; // .debug_str, may be null
    private final CompDirs compDirs;
    // The index, sorted by start: sequence i covers [seqStart[i], seqEnd[i]) and is rows [seqRow[i], seqRowEnd[i]] of
    // the unit at seqUnit[i] (the last its end_sequence row).
    private long[] seqStart = new long[64];
    private long[] seqEnd = new long[64];
    private long[] seqUnit = new long[64];
    private int[] seqRow = new int[64];
    private int[] seqRowEnd = new int[64];
    private int sequences;
    private final Map<Long, Unit> decoded = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Unit> eldest) {
            return size() > CACHED_UNITS;
        }
    };

    /** One unit's header fields a program needs. */
    private record Header(long start, long end, long program, int version, int offsetSize, int minInstLength,
                          boolean defaultIsStmt, int lineBase, int lineRange, int opcodeBase, int[] standardLengths,
                          long filesAt) {}

    /** A decoded unit: its rows (address, line, file index) and its file names. */
    private record Unit(long[] address, int[] line, int[] file, String[] files, int fileBase) {
        long weight() {
            return 64 + address.length * 16L + files.length * 64L;
        }
    }

    private DebugLine(String name, ByteBuffer section, ByteBuffer lineStr, ByteBuffer str, CompDirs compDirs) {
        this.name = name;
        this.compDirs = compDirs;
        this.section = section;
        this.lineStr = lineStr;
        this.str = str;
    }

    /**
     * Indexes a {@code .debug_line} section.
     *
     * @param name    for errors, e.g. the file's path
     * @param lineStr {@code .debug_line_str} (DWARF 5 {@code DW_FORM_line_strp}), or null
     * @param str     {@code .debug_str} ({@code DW_FORM_strp}), or null
     */
    public static DebugLine parse(String name, ByteBuffer section, ByteBuffer lineStr, ByteBuffer str) throws DwarfException {
        return parse(name, section, lineStr, str, CompDirs.NONE);
    }

    /** As above; {@code compDirs} names the directory DWARF 2-4 units' relative names are in. */
    public static DebugLine parse(String name, ByteBuffer section, ByteBuffer lineStr, ByteBuffer str, CompDirs compDirs)
            throws DwarfException {
        DebugLine d = new DebugLine(name, section, lineStr, str, compDirs);
        d.index();
        return d;
    }

    private Cursor cursor(long pos, long end) {
        return new Cursor(name + ": .debug_line", section, pos, end);
    }

    private void index() throws DwarfException {
        long p = 0;
        long limit = section.limit();
        while (p < limit) {
            Header h = header(p);
            run(h, null);
            p = h.end();
        }
        int[] order = new int[sequences];
        for (int i = 0; i < sequences; i++) {
            order[i] = i;
        }
        Integer[] boxed = Arrays.stream(order).boxed().toArray(Integer[]::new);
        Arrays.sort(boxed, (a, b) -> Long.compareUnsigned(seqStart[a], seqStart[b]));
        long[] s = new long[sequences];
        long[] e = new long[sequences];
        long[] u = new long[sequences];
        int[] r = new int[sequences];
        int[] re = new int[sequences];
        for (int i = 0; i < sequences; i++) {
            s[i] = seqStart[boxed[i]];
            e[i] = seqEnd[boxed[i]];
            u[i] = seqUnit[boxed[i]];
            r[i] = seqRow[boxed[i]];
            re[i] = seqRowEnd[boxed[i]];
        }
        seqStart = s;
        seqEnd = e;
        seqUnit = u;
        seqRow = r;
        seqRowEnd = re;
    }

    private Header header(long at) throws DwarfException {
        Cursor c = cursor(at, section.limit());
        int offsetSize = c.unitLength(at, 0, section.limit());
        long end = c.end;
        int version = c.u16();
        if (version < 2 || version > 5) {
            throw c.error("unit at " + at + " has version " + version + " (2 to 5 are read)");
        }
        if (version >= 5) {
            int addressSize = c.u8();
            c.u8(); // segment selector size
            if (addressSize != 8 && addressSize != 4) {
                throw c.error("unit at " + at + " has address size " + addressSize);
            }
        }
        long headerLength = c.unsigned(offsetSize);
        if (headerLength < 0 || headerLength > end - c.pos) {
            throw c.error("unit at " + at + ": header length " + Long.toUnsignedString(headerLength) + " runs past the unit");
        }
        long program = c.pos + headerLength;
        int minInst = c.u8();
        if (version >= 4) {
            c.u8(); // maximum_operations_per_instruction: VLIW only, 1 on x86-64
        }
        boolean defaultIsStmt = c.u8() != 0;
        int lineBase = c.i8();
        int lineRange = c.u8();
        int opcodeBase = c.u8();
        if (lineRange == 0) {
            throw c.error("unit at " + at + " has line_range 0");
        }
        if (opcodeBase == 0) {
            throw c.error("unit at " + at + " has opcode_base 0");
        }
        int[] lengths = new int[opcodeBase];
        for (int i = 1; i < opcodeBase; i++) {
            lengths[i] = c.u8();
        }
        return new Header(at, end, program, version, offsetSize, minInst, defaultIsStmt, lineBase, lineRange, opcodeBase,
                lengths, c.pos);
    }

    /**
     * Runs a unit's line program. With {@code rows} null, indexes its sequences; else appends every row (address, line,
     * file) to {@code rows} (end-of-sequence rows too: they close the last row's range).
     */
    private void run(Header h, Rows rows) throws DwarfException {
        Cursor c = cursor(h.program(), h.end());
        long address = 0;
        int file = 1;
        long line = 1;
        long seqFirst = -1; // the first row's address of the open sequence, -1 when none
        int rowCount = 0;
        int seqFirstRow = 0;
        while (c.pos < h.end()) {
            int op = c.u8();
            boolean emit = false;
            boolean endSequence = false;
            if (op >= h.opcodeBase()) {
                int adjusted = op - h.opcodeBase();
                address += (long) (adjusted / h.lineRange()) * h.minInstLength();
                line += h.lineBase() + adjusted % h.lineRange();
                emit = true;
            } else if (op == 0) {
                long len = c.uleb();
                if (len == 0 || len > h.end() - c.pos) {
                    throw c.error("extended opcode of length " + Long.toUnsignedString(len) + " at " + c.pos + " runs past the unit");
                }
                long next = c.pos + len;
                int sub = c.u8();
                switch (sub) {
                    case DW_LNE_END_SEQUENCE -> {
                        emit = true;
                        endSequence = true;
                    }
                    case DW_LNE_SET_ADDRESS -> address = c.unsigned((int) Math.min(8, len - 1));
                    default -> { } // define_file (DWARF ≤ 4, unused by compilers), set_discriminator, vendor ones: skipped
                }
                c.pos = next;
            } else if (op == DW_LNS_COPY) {
                emit = true;
            } else if (op == DW_LNS_ADVANCE_PC) {
                address += c.uleb() * h.minInstLength();
            } else if (op == DW_LNS_ADVANCE_LINE) {
                line += c.sleb();
            } else if (op == DW_LNS_SET_FILE) {
                file = (int) Math.min(Integer.MAX_VALUE, c.uleb());
            } else if (op == DW_LNS_CONST_ADD_PC) {
                address += (long) ((255 - h.opcodeBase()) / h.lineRange()) * h.minInstLength();
            } else if (op == DW_LNS_FIXED_ADVANCE_PC) {
                address += c.u16();
            } else {
                for (int i = 0; i < h.standardLengths()[op]; i++) {
                    c.uleb(); // set_column, negate_stmt, prologue_end, set_isa...: nothing we keep
                }
            }
            if (!emit) {
                continue;
            }
            if (rows != null) {
                rows.add(address, endSequence ? -1 : (int) Math.max(0, Math.min(Integer.MAX_VALUE, line)), file);
            }
            if (seqFirst == -1) {
                seqFirst = address;
                seqFirstRow = rowCount;
            }
            rowCount++;
            if (endSequence) {
                if (rows == null && Long.compareUnsigned(address, seqFirst) > 0) {
                    addSequence(seqFirst, address, h.start(), seqFirstRow, rowCount - 1);
                }
                address = 0;
                file = 1;
                line = 1;
                seqFirst = -1;
            }
        }
    }

    private void addSequence(long start, long end, long unit, int row, int endRow) throws DwarfException {
        if (sequences == MAX_SEQUENCES) {
            throw cursor(0, 0).error("more than " + MAX_SEQUENCES + " line sequences");
        }
        if (sequences == seqStart.length) {
            int n = sequences * 2;
            seqStart = Arrays.copyOf(seqStart, n);
            seqEnd = Arrays.copyOf(seqEnd, n);
            seqUnit = Arrays.copyOf(seqUnit, n);
            seqRow = Arrays.copyOf(seqRow, n);
            seqRowEnd = Arrays.copyOf(seqRowEnd, n);
        }
        seqStart[sequences] = start;
        seqEnd[sequences] = end;
        seqUnit[sequences] = unit;
        seqRow[sequences] = row;
        seqRowEnd[sequences] = endRow;
        sequences++;
    }

    /** Rows as a unit is decoded. */
    private static final class Rows {
        long[] address = new long[256];
        int[] line = new int[256];
        int[] file = new int[256];
        int n;

        void add(long a, int l, int f) {
            if (n == address.length) {
                address = Arrays.copyOf(address, n * 2);
                line = Arrays.copyOf(line, n * 2);
                file = Arrays.copyOf(file, n * 2);
            }
            address[n] = a;
            line[n] = l;
            file[n] = f;
            n++;
        }
    }

    /** The file and line at {@code address} (a link-time address), or null if no sequence covers it. */
    public Position find(long address) throws DwarfException {
        int lo = 0;
        int hi = sequences - 1;
        int found = -1;
        while (lo <= hi) { // the last sequence starting at or before address
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(seqStart[mid], address) <= 0) {
                found = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        // Sequences rarely overlap; look back a few in case a longer one starting earlier covers the address.
        for (int i = found; i >= 0 && i > found - 8; i--) {
            if (Long.compareUnsigned(address, seqStart[i]) >= 0 && Long.compareUnsigned(address, seqEnd[i]) < 0) {
                return inSequence(i, address);
            }
        }
        return null;
    }

    private Position inSequence(int seq, long address) throws DwarfException {
        Unit u = unit(seqUnit[seq]);
        int first = seqRow[seq];
        int last = seqRowEnd[seq]; // the end_sequence row
        if (first < 0 || last < first || last >= u.address().length) {
            throw cursor(0, 0).error("sequence rows " + first + ".." + last + " outside its unit's " + u.address().length + " rows");
        }
        int lo = first;
        int hi = last - 1;
        int at = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(u.address()[mid], address) <= 0) {
                at = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        if (at < 0 || u.line()[at] < 0) {
            return null;
        }
        int f = u.file()[at] - u.fileBase();
        String file = f >= 0 && f < u.files().length ? u.files()[f] : null;
        return new Position(file, u.line()[at]);
    }

    private Unit unit(long offset) throws DwarfException {
        Unit u = decoded.get(offset);
        if (u == null) {
            Header h = header(offset);
            Rows rows = new Rows();
            run(h, rows);
            List<String> files = files(h);
            u = new Unit(Arrays.copyOf(rows.address, rows.n), Arrays.copyOf(rows.line, rows.n), Arrays.copyOf(rows.file, rows.n),
                    files.toArray(String[]::new), h.version() >= 5 ? 0 : 1);
            decoded.put(offset, u);
        }
        return u;
    }

    /**
     * Entry {@code index} of the file table of the unit at {@code offset} (a {@code DW_AT_stmt_list}; DWARF 5 counts
     * from 0, earlier versions from 1), null if the table has no such entry. Decodes the unit like a lookup.
     */
    public String file(long offset, long index) throws DwarfException {
        if (offset < 0 || offset >= section.limit()) {
            throw cursor(0, 0).error("line table offset " + offset + " lies outside the " + section.limit() + "-byte section");
        }
        Unit u = unit(offset);
        long f = index - u.fileBase();
        return f >= 0 && f < u.files().length ? u.files()[(int) f] : null;
    }

    /** Estimated heap of the decoded units kept now. */
    public long cachedBytes() {
        long w = 0;
        for (Unit u : decoded.values()) {
            w += u.weight();
        }
        return w;
    }

    /** Heap of the sequence index. */
    public long indexBytes() {
        return 64 + seqStart.length * 32L;
    }

    public int sequenceCount() {
        return sequences;
    }

    // ---------------- file names ----------------

    /**
     * The unit's file names, made absolute as addr2line and gdb do: a relative directory is in the compilation
     * directory (DWARF 5: directory 0; earlier: DW_AT_comp_dir, asked of {@link #compDirs} only when a name is relative).
     */
    private List<String> files(Header h) throws DwarfException {
        Cursor c = cursor(h.filesAt(), h.program());
        List<String> out = new ArrayList<>();
        if (h.version() < 5) {
            List<String> dirs = new ArrayList<>();
            for (String d = c.cstring(); !d.isEmpty(); d = c.cstring()) {
                dirs.add(d);
            }
            String compDir = null;
            boolean asked = false;
            for (String f = c.cstring(); !f.isEmpty(); f = c.cstring()) {
                long dir = c.uleb();
                c.uleb(); // mtime
                c.uleb(); // length
                String name = join(dir >= 1 && dir <= dirs.size() ? dirs.get((int) dir - 1) : null, f);
                if (!name.startsWith("/") && !asked) {
                    compDir = compDirs.compDir(h.start());
                    asked = true;
                }
                out.add(join(compDir, name));
            }
            return out;
        }
        List<String[]> dirs = entries(c, h);
        List<String[]> files = entries(c, h);
        String dir0 = dirs.isEmpty() ? null : dirs.get(0)[0];
        for (String[] f : files) {
            String dir = null;
            if (f[1] != null) {
                long d = Long.parseLong(f[1]); // any u64 a hostile table gives: out of range means no directory
                dir = d >= 0 && d < dirs.size() ? dirs.get((int) d)[0] : null;
                dir = d > 0 && dir != null ? join(dir0, dir) : dir;
            }
            out.add(f[0] == null ? null : join(dir, f[0]));
        }
        return out;
    }

    private static String join(String dir, String file) {
        if (dir == null || dir.isEmpty() || file.startsWith("/")) {
            return file;
        }
        return dir.endsWith("/") ? dir + file : dir + "/" + file;
    }

    /** DWARF 5 directory or file entries: {path, directory index as text or null} each. */
    private List<String[]> entries(Cursor c, Header h) throws DwarfException {
        int formats = c.u8();
        long[] type = new long[formats];
        long[] form = new long[formats];
        for (int i = 0; i < formats; i++) {
            type[i] = c.uleb();
            form[i] = c.uleb();
        }
        long count = c.uleb();
        if (count < 0 || count > (h.program() - c.pos)) { // every entry takes at least one byte
            throw c.error("unit at " + h.start() + " claims " + Long.toUnsignedString(count) + " entries in a smaller header");
        }
        List<String[]> out = new ArrayList<>((int) count);
        for (long e = 0; e < count; e++) {
            String path = null;
            String dir = null;
            for (int i = 0; i < formats; i++) {
                Object v = value(c, h, (int) form[i]);
                if (type[i] == DW_LNCT_PATH && v instanceof String s) {
                    path = s;
                } else if (type[i] == DW_LNCT_DIRECTORY_INDEX && v instanceof Long l) {
                    dir = Long.toString(l);
                }
            }
            out.add(new String[] {path, dir});
        }
        return out;
    }

    /** One attribute value: a String for string forms (null when its section is missing), a Long for numbers, else null. */
    private Object value(Cursor c, Header h, int form) throws DwarfException {
        return switch (form) {
            case DW_FORM_STRING -> c.cstring();
            case DW_FORM_LINE_STRP -> stringIn(lineStr, ".debug_line_str", c.unsigned(h.offsetSize()));
            case DW_FORM_STRP -> stringIn(str, ".debug_str", c.unsigned(h.offsetSize()));
            case DW_FORM_UDATA -> c.uleb();
            case DW_FORM_DATA1 -> (long) c.u8();
            case DW_FORM_DATA2 -> (long) c.u16();
            case DW_FORM_DATA4 -> c.u32();
            case DW_FORM_DATA8 -> c.u64();
            case DW_FORM_DATA16 -> {
                c.skip(16);
                yield null;
            }
            case DW_FORM_BLOCK -> {
                c.skip(c.uleb());
                yield null;
            }
            case DW_FORM_STRX -> { // needs the unit's .debug_str_offsets base from .debug_info: name unknown
                c.uleb();
                yield null;
            }
            default -> {
                if (form >= DW_FORM_STRX1 && form <= DW_FORM_STRX4) {
                    c.skip(form - DW_FORM_STRX1 + 1);
                    yield null;
                }
                throw c.error("unit at " + h.start() + " uses form 0x" + Integer.toHexString(form) + " in its file table");
            }
        };
    }

    private String stringIn(ByteBuffer section, String sectionName, long offset) throws DwarfException {
        if (section == null) {
            return null;
        }
        return new Cursor(name + ": " + sectionName, section, 0, section.limit()).cstringAt(offset);
    }
}
