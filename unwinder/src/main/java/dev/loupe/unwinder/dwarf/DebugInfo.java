package dev.loupe.unwinder.dwarf;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The inlined subroutines of {@code .debug_info} (DWARF 2 to 5, 32- and 64-bit units): which functions a compiler
 * inlined at an address, and where each was called. Opening reads only each unit's header and first DIE (its
 * address ranges: the unit index); a lookup decodes the scope tree of the one unit holding the address
 * ({@link UnitScopes}: subprograms and inlined subroutines with their ranges, nothing else kept) and names its
 * functions by their DIEs ({@code DW_AT_abstract_origin} / {@code DW_AT_specification} followed).
 *
 * <p>Memory: the index, the abbreviation tables, decoded units and names are held within {@code budget} bytes
 * (decoded units are dropped, least recently used first); an index or one unit that alone needs more is a
 * {@link DwarfException}. Malformed input is a {@link DwarfException} naming the problem; work is bounded by the
 * sections' sizes (every DIE, attribute and range entry consumes bytes; reference chains are cut at
 * {@link #MAX_HOPS}).
 */
public final class DebugInfo {
    static final int MAX_HOPS = 8;
    private static final int CACHED_ABBREVS = 16;
    private static final int CACHED_NAMES = 4096;
    private static final long NAME_BYTES = 96; // a cached name: entry, key, record, short string

    static final int DW_TAG_COMPILE_UNIT = 0x11;
    static final int DW_TAG_PARTIAL_UNIT = 0x3c;
    static final int DW_TAG_SUBPROGRAM = 0x2e;
    static final int DW_TAG_INLINED_SUBROUTINE = 0x1d;
    static final int DW_TAG_SKELETON_UNIT = 0x4a;
    private static final int DW_UT_COMPILE = 1;
    private static final int DW_UT_PARTIAL = 3;
    private static final int DW_UT_SKELETON = 4;
    private static final int DW_UT_SPLIT_COMPILE = 5;
    /** Split units' readers kept at once, each reserving a quarter of the budget. */
    private static final int CACHED_SPLITS = 2;
    private static final System.Logger LOG = System.getLogger(DebugInfo.class.getName());

    /**
     * A split unit's file (gcc -gsplit-dwarf's .dwo) or its part of a package (.dwp): where it is, its sections (info,
     * abbrev, str, strOffsets, rnglists), and the bytes of compressed ones it decompressed (charged to its reader).
     */
    public record SplitFile(String path, Sections sections, long decompressed) {
        public SplitFile(String path, Sections sections) {
            this(path, sections, 0);
        }
    }

    /**
     * Opens the file of a skeleton unit's split unit ({@code DW_AT_dwo_name}, relative to {@code compDir}), or its part
     * of a DWARF package ({@code .dwp}) by its {@code dwoId}.
     */
    public interface SplitFiles {
        /**
         * The file, null if there is none where it should be; compressed sections are decompressed only within
         * {@code maxDecompressed} bytes (past that, an error).
         */
        SplitFile open(String dwoName, String compDir, long dwoId, long maxDecompressed) throws DwarfException;
    }

    /** What a split unit takes from its skeleton: its .debug_addr base, range and string bases, base address, line table. */
    private record Bases(long addrBase, long rangesBase, long strOffsetsBase, long lowPc, long stmtList) {}

    /** The sections read; any but info and abbrev may be null. */
    public record Sections(ByteBuffer info, ByteBuffer abbrev, ByteBuffer str, ByteBuffer lineStr, ByteBuffer strOffsets,
                           ByteBuffer addr, ByteBuffer ranges, ByteBuffer rnglists, ByteBuffer aranges) {}

    /** One function of an inline chain: {@code callFile}/{@code callLine} where it was inlined (0 for the outermost). */
    public record Scope(String name, int declLine, long callFile, int callLine) {}

    /**
     * The functions at an address, innermost first, the last the concrete subprogram; {@code stmtList} is the unit's
     * {@code .debug_line} offset, whose file table {@link Scope#callFile()} indexes.
     */
    public record Chain(long stmtList, List<Scope> scopes) {}

    /** A unit's header and its first DIE's attributes that later reads need. */
    record Unit(long offset, long end, int version, int addrSize, int offsetSize, long abbrevOffset, long dieStart,
                boolean code, long stmtList, long lowPc, long addrBase, long rnglistsBase, long strOffsetsBase,
                int compDirForm, long compDirValue) {}

    private final String name;
    private final Sections s;
    private final long budget;
    final DwarfRanges ranges;
    private final Unit[] units; // by offset; the headers' alone until complete[i]
    private final boolean[] complete;
    // The unit index, sorted by start: range i is [lo[i], hi[i]) of units[unitOf[i]].
    private final long[] lo;
    private final long[] hi;
    private final int[] unitOf;
    private final long indexBytes;
    private final Map<Long, DebugAbbrev> abbrevs = new LinkedHashMap<>(16, 0.75f, true);
    private final Map<Integer, UnitScopes> scopes = new LinkedHashMap<>(16, 0.75f, true);
    private final Map<Long, Scope> names = new LinkedHashMap<>(64, 0.75f, true);
    private long held; // abbrevs and scopes cached now, the line-table key, split readers' reserves
    private DebugInfo sup; // the supplementary file (dwz's alternate file), null if none
    private SplitFiles splitFiles; // where skeleton units' split units are read, null: not read
    private final Map<Integer, DebugInfo> splits = new LinkedHashMap<>(4, 0.75f, true); // by skeleton unit
    private final java.util.BitSet whole = new java.util.BitSet(); // units read whole here (no skeleton, or no .dwo)
    private final java.util.Set<String> missingSplits = new java.util.HashSet<>(); // said once each, at most 64 said
    private Bases bases; // in a split file's reader: its unit's bases, from the skeleton
    private int splitUnit = -1; // in a split file's reader: the split unit's index
    private long[] stmtLists; // each code unit's DW_AT_stmt_list << 20 | its index, sorted; built by compDir
    private final int maxNames; // at most an eighth of the budget

    private DebugInfo(String name, Sections s, long budget, Unit[] units, boolean[] complete, long[] lo, long[] hi,
                      int[] unitOf) {
        this.name = name;
        this.s = s;
        this.budget = budget;
        this.ranges = new DwarfRanges(name, s.ranges(), s.rnglists(), s.addr());
        this.units = units;
        this.complete = complete;
        this.lo = lo;
        this.hi = hi;
        this.unitOf = unitOf;
        this.indexBytes = 64 + units.length * 120L + lo.length * 20L;
        this.maxNames = (int) Math.max(16, Math.min(CACHED_NAMES, budget / 8 / NAME_BYTES));
    }

    /**
     * Indexes the units of {@code s.info()} within {@code budget} bytes of heap: from {@code .debug_aranges} where the
     * file has it (no DIE read), else from each unit's first DIE.
     */
    public static DebugInfo open(String name, Sections s, long budget) throws DwarfException {
        if (s.info() == null || s.abbrev() == null) {
            throw new DwarfException(name + ": .debug_info or .debug_abbrev is missing");
        }
        List<Unit> units = new ArrayList<>();
        long p = 0;
        long limit = s.info().limit();
        while (p < limit) { // each unit consumes its header at least
            Unit header = header(name, s.info(), p);
            units.add(header);
            if (64 + units.size() * 120L > budget) {
                throw new DwarfException(name + ": .debug_info: the unit index alone needs more than " + budget + " bytes");
            }
            p = header.end();
        }
        Unit[] all = units.toArray(Unit[]::new);
        boolean[] complete = new boolean[all.length];
        Index index = new Index(name, budget, all.length);
        if (s.aranges() == null || !aranges(name, s.aranges(), all, index)) {
            index = new Index(name, budget, all.length);
            DwarfRanges ranges = new DwarfRanges(name, s.ranges(), s.rnglists(), s.addr());
            for (int i = 0; i < all.length; i++) {
                if (all[i].code()) {
                    all[i] = complete(name, s, ranges, all[i], DebugAbbrev.parse(name, s.abbrev(), all[i].abbrevOffset()),
                            index.pairs);
                    index.owned(i);
                }
                complete[i] = true;
            }
        }
        DwarfRanges.Pairs pairs = index.pairs;
        int[] owner = index.owner;
        int n = pairs.n / 2;
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        long[] v = pairs.v;
        Arrays.sort(order, (x, y) -> Long.compareUnsigned(v[2 * x], v[2 * y]));
        long[] lo = new long[n];
        long[] hi = new long[n];
        int[] unitOf = new int[n];
        for (int i = 0; i < n; i++) {
            lo[i] = v[2 * order[i]];
            hi[i] = v[2 * order[i] + 1];
            unitOf[i] = owner[order[i]];
        }
        return new DebugInfo(name, s, budget, all, complete, lo, hi, unitOf);
    }

    /**
     * A supplementary file's units (DWARF 5 .debug_sup, dwz's .gnu_debugaltlink), whose DIEs another file's references
     * name: headers only, no address index (it holds no code); a file of only strings has none.
     */
    public static DebugInfo openSupplementary(String name, Sections s, long budget) throws DwarfException {
        if ((s.info() == null) != (s.abbrev() == null)) {
            throw new DwarfException(name + ": .debug_info or .debug_abbrev is missing");
        }
        List<Unit> units = new ArrayList<>();
        // No .debug_info: the file holds only strings. Each unit consumes its header at least.
        for (long p = 0; s.info() != null && p < s.info().limit(); ) {
            Unit header = header(name, s.info(), p);
            units.add(header);
            if (64 + units.size() * 120L > budget) {
                throw new DwarfException(name + ": .debug_info: the unit index alone needs more than " + budget + " bytes");
            }
            p = header.end();
        }
        Unit[] all = units.toArray(Unit[]::new);
        return new DebugInfo(name, s, budget, all, new boolean[all.length], new long[0], new long[0], new int[0]);
    }

    /** Names references into {@code sup} (DW_FORM_ref_sup4/8, DW_FORM_GNU_ref_alt) and its strings by its DIEs. */
    public void supplementary(DebugInfo sup) {
        this.sup = sup;
    }

    /** Reads skeleton units' split units (gcc -gsplit-dwarf) from the files {@code files} opens. */
    public void splitFiles(SplitFiles files) {
        this.splitFiles = files;
    }

    private DieReader reader() {
        return new DieReader(name, s, sup == null ? null : sup.s.str());
    }

    /** The unit index as it is built: ranges and the unit each belongs to, within the budget. */
    private static final class Index {
        final String name;
        final long budget;
        final int units;
        final DwarfRanges.Pairs pairs = new DwarfRanges.Pairs();
        int[] owner = new int[8];
        private int filled; // ranges whose owner is set

        Index(String name, long budget, int units) {
            this.name = name;
            this.budget = budget;
            this.units = units;
        }

        /** The ranges added since the last call belong to unit {@code u}. */
        void owned(int u) throws DwarfException {
            for (int i = filled; i < pairs.n / 2; i++) {
                if (i >= owner.length) {
                    owner = Arrays.copyOf(owner, owner.length * 2);
                }
                owner[i] = u;
            }
            filled = pairs.n / 2;
            if (64 + units * 120L + pairs.n * 10L > budget) {
                throw new DwarfException(name + ": .debug_info: the unit index alone needs more than " + budget + " bytes");
            }
        }
    }

    /**
     * Fills {@code index} from {@code .debug_aranges} (DWARF 5 §6.1.2: per unit, address and length pairs); false when
     * it names no range (then units are read instead). Each set and tuple consumes bytes: bounded by the section.
     */
    private static boolean aranges(String name, ByteBuffer section, Unit[] units, Index index) throws DwarfException {
        Cursor c = new Cursor(name + ": .debug_aranges", section, 0, section.limit());
        long limit = section.limit();
        while (c.pos < limit) {
            long start = c.pos;
            c.end = limit;
            long length = c.u32();
            int offsetSize = 4;
            if (length == 0xffffffffL) {
                length = c.u64();
                offsetSize = 8;
            }
            if (length < 0 || length > limit - c.pos) {
                throw c.error("set at " + start + " of length " + Long.toUnsignedString(length) + " runs past the section's end");
            }
            long end = c.pos + length;
            c.end = end;
            int version = c.u16();
            long infoOffset = c.unsigned(offsetSize);
            int addrSize = c.u8();
            int segmentSize = c.u8();
            int unit = unitStartingAt(units, infoOffset);
            if (version == 2 && segmentSize == 0 && (addrSize == 4 || addrSize == 8) && unit >= 0 && units[unit].code()) {
                long tuple = 2L * addrSize;
                c.skip((tuple - (c.pos - start) % tuple) % tuple); // tuples are aligned to their size from the set's start
                while (c.pos <= end - tuple) {
                    long lo = c.unsigned(addrSize);
                    long len = c.unsigned(addrSize);
                    if (lo == 0 && len == 0) {
                        break;
                    }
                    index.pairs.add(lo, lo + len);
                }
                index.owned(unit);
            }
            c.pos = end;
        }
        return index.pairs.n > 0;
    }

    private static int unitStartingAt(Unit[] units, long offset) {
        int lo = 0;
        int hi = units.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (units[mid].offset() < offset) {
                lo = mid + 1;
            } else if (units[mid].offset() > offset) {
                hi = mid - 1;
            } else {
                return mid;
            }
        }
        return -1;
    }

    /**
     * {@code header} with its first DIE's attributes (line table, base address, bases of the indexed forms), its ranges
     * appended to {@code out} if not null; a unit whose first DIE is no compilation unit is marked as holding no code.
     */
    private static Unit complete(String name, Sections s, DwarfRanges ranges, Unit header, DebugAbbrev a,
                                 DwarfRanges.Pairs out) throws DwarfException {
        DieReader r = new DieReader(name, s);
        DieReader.Die d = r.read(r.cursor(header.dieStart(), header.end()), header, a);
        if (d == null || (d.tag != DW_TAG_COMPILE_UNIT && d.tag != DW_TAG_PARTIAL_UNIT && d.tag != DW_TAG_SKELETON_UNIT)) {
            return new Unit(header.offset(), header.end(), header.version(), header.addrSize(), header.offsetSize(),
                    header.abbrevOffset(), header.dieStart(), false, -1, 0, 0, 0, 0, 0, 0);
        }
        Unit bases = new Unit(header.offset(), header.end(), header.version(), header.addrSize(), header.offsetSize(),
                header.abbrevOffset(), header.dieStart(), true, d.stmtList, 0, d.addrBase, d.rnglistsBase, d.strOffsetsBase,
                d.compDirForm, d.compDirValue);
        Unit u = new Unit(bases.offset(), bases.end(), bases.version(), bases.addrSize(), bases.offsetSize(),
                bases.abbrevOffset(), bases.dieStart(), true, d.stmtList, d.low(bases, ranges), d.addrBase, d.rnglistsBase,
                d.strOffsetsBase, d.compDirForm, d.compDirValue);
        if (out != null) {
            d.ranges(u, ranges, out);
        }
        return u;
    }

    /** Unit {@code i} with its first DIE's attributes, read on first use. */
    private Unit unit(int i) throws DwarfException {
        if (!complete[i]) {
            if (units[i].code()) {
                units[i] = complete(name, s, ranges, units[i], abbrev(units[i]), null);
                Unit u = units[i];
                if (bases != null && u.code()) { // a split unit: its addresses and line table are its skeleton's
                    units[i] = new Unit(u.offset(), u.end(), u.version(), u.addrSize(), u.offsetSize(), u.abbrevOffset(),
                            u.dieStart(), true, bases.stmtList(), bases.lowPc(), bases.addrBase(), bases.rangesBase(),
                            bases.strOffsetsBase(), u.compDirForm(), u.compDirValue());
                }
            }
            complete[i] = true;
        }
        return units[i];
    }

    /** The unit header at {@code at}; {@code code} false for units that hold no code (type, skeleton units). */
    private static Unit header(String name, ByteBuffer info, long at) throws DwarfException {
        Cursor c = new Cursor(name + ": .debug_info", info, at, info.limit());
        int offsetSize = c.unitLength(at, 2, info.limit());
        long end = c.end;
        int version = c.u16();
        if (version < 2 || version > 5) {
            return new Unit(at, end, version, 8, offsetSize, 0, end, false, -1, 0, 0, 0, 0, 0, 0); // skipped, not refused
        }
        int unitType = DW_UT_COMPILE;
        int addressSize;
        long abbrevOffset;
        if (version >= 5) {
            unitType = c.u8();
            addressSize = c.u8();
            abbrevOffset = c.unsigned(offsetSize);
            switch (unitType) {
                case 2, 6 -> c.skip(8L + offsetSize); // type units: signature and type offset
                case 4, 5 -> c.skip(8); // skeleton and split units: dwo id
                default -> { }
            }
        } else {
            abbrevOffset = c.unsigned(offsetSize);
            addressSize = c.u8();
        }
        if (addressSize != 4 && addressSize != 8) {
            throw c.error("unit at " + at + " has address size " + addressSize);
        }
        boolean code = unitType == DW_UT_COMPILE || unitType == DW_UT_PARTIAL || unitType == DW_UT_SKELETON
                || unitType == DW_UT_SPLIT_COMPILE;
        return new Unit(at, end, version, addressSize, offsetSize, abbrevOffset, c.pos, code, -1, 0, 0, 0, 0, 0, 0);
    }

    /** The inline chain at {@code pc}; null when no unit's subprogram covers it. */
    public Chain chain(long pc) throws DwarfException {
        int i = find(pc);
        if (i < 0) {
            return null;
        }
        int unit = unitOf[i];
        DebugInfo split = split(unit);
        return split != null ? split.chainIn(split.splitUnit, pc, unit(unit).stmtList()) : chainIn(unit, pc, unit(unit).stmtList());
    }

    private Chain chainIn(int unit, long pc, long stmtList) throws DwarfException {
        UnitScopes us = scopes(unit);
        int[] at = us.at(pc);
        if (at.length == 0) {
            return null;
        }
        List<Scope> out = new ArrayList<>(at.length);
        for (int k = at.length - 1; k >= 0; k--) {
            Scope named = name(us.die(at[k]));
            out.add(new Scope(named.name(), named.declLine(), us.callFile(at[k]), us.callLine(at[k])));
        }
        return new Chain(stmtList, out);
    }

    /**
     * The reader of skeleton unit {@code ui}'s split unit (DWARF 5 DW_UT_skeleton, or DWARF 4 with DW_AT_GNU_dwo_name),
     * opened on first use within a quarter of the budget and checked by its dwo id; null for a unit that is no skeleton
     * or whose split file is missing (said once: its pcs keep their plain lines).
     */
    private DebugInfo split(int ui) throws DwarfException {
        DebugInfo hit = splits.get(ui);
        if (hit != null || splitFiles == null || whole.get(ui)) {
            return hit;
        }
        Unit u = unit(ui);
        DieReader r = reader();
        DieReader.Die d = u.code() ? r.read(r.cursor(u.dieStart(), u.end()), u, abbrev(u)) : null;
        if (d == null || d.dwoNameForm == 0) {
            whole.set(ui);
            return null;
        }
        String dwoName = r.string(u, d.dwoNameForm, d.dwoNameValue);
        String compDir = d.compDirForm == 0 ? null : r.string(u, d.compDirForm, d.compDirValue);
        long id = u.version() >= 5 ? dwoId(name, s.info(), u) : d.gnuDwoId;
        long gnuRangesBase = d.gnuRangesBase;
        if (dwoName == null) {
            whole.set(ui);
            return null;
        }
        long reserve = budget / 4;
        SplitFile f = splitFiles.open(dwoName, compDir, id, reserve / 2); // compressed sections: half the reserve at most
        if (f == null) {
            whole.set(ui); // not looked for again
            if (missingSplits.size() < 64 && missingSplits.add(dwoName)) {
                LOG.log(System.Logger.Level.INFO, () -> name + ": split unit file " + dwoName + " (in " + compDir
                        + ") not found: its code keeps plain source lines");
            }
            return null;
        }
        Sections fs = f.sections();
        Sections ds = new Sections(fs.info(), fs.abbrev(), fs.str(), null, fs.strOffsets(), s.addr(), s.ranges(), fs.rnglists(), null);
        DebugInfo split = openSupplementary(f.path(), ds, reserve - f.decompressed());
        for (int k = 0; k < split.units.length && split.splitUnit < 0; k++) {
            Unit su = split.units[k];
            if (!su.code()) {
                continue;
            }
            boolean same;
            if (su.version() >= 5) {
                same = dwoId(f.path(), ds.info(), su) == id;
            } else {
                DieReader sr = split.reader();
                DieReader.Die sd = sr.read(sr.cursor(su.dieStart(), su.end()), su, split.abbrev(su));
                same = sd != null && sd.gnuDwoId == id;
            }
            if (same) {
                split.splitUnit = k;
            }
        }
        if (split.splitUnit < 0) {
            throw new DwarfException(f.path() + ": .debug_info.dwo: no split unit with dwo id 0x" + Long.toHexString(id)
                    + " (its skeleton's in " + name + ")");
        }
        int offsetSize = split.units[split.splitUnit].offsetSize();
        split.bases = u.version() >= 5
                ? new Bases(u.addrBase(), offsetSize == 4 ? 12 : 20, offsetSize == 4 ? 8 : 16, u.lowPc(), u.stmtList())
                : new Bases(u.addrBase(), gnuRangesBase, 0, u.lowPc(), u.stmtList());
        splits.put(ui, split);
        held += reserve;
        var it = splits.entrySet().iterator();
        while (splits.size() > CACHED_SPLITS && it.hasNext()) {
            var e = it.next();
            if (e.getValue() != split) {
                held -= reserve;
                it.remove();
            }
        }
        return split;
    }

    /** A DWARF 5 skeleton or split unit's dwo id: the header's last 8 bytes. */
    private static long dwoId(String file, ByteBuffer info, Unit u) throws DwarfException {
        if (u.dieStart() < 8 || u.dieStart() > info.limit()) {
            throw new DwarfException(file + ": .debug_info: unit at " + u.offset() + " has no dwo id");
        }
        return info.duplicate().order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong((int) u.dieStart() - 8);
    }

    private int find(long pc) {
        int lo = 0;
        int hi = this.lo.length - 1;
        int found = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(this.lo[mid], pc) <= 0) {
                found = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        // Units' ranges rarely overlap; look back a few in case a longer one starting earlier covers the pc.
        for (int i = found; i >= 0 && i > found - 8; i--) {
            if (Long.compareUnsigned(pc, this.lo[i]) >= 0 && Long.compareUnsigned(pc, this.hi[i]) < 0) {
                return i;
            }
        }
        return -1;
    }

    private UnitScopes scopes(int unit) throws DwarfException {
        UnitScopes us = scopes.get(unit);
        if (us == null) {
            long room = budget - indexBytes - maxNames * NAME_BYTES;
            Unit u = unit(unit);
            us = UnitScopes.decode(reader(), u, abbrev(u), ranges, room);
            scopes.put(unit, us);
            held += us.bytes();
            var it = scopes.entrySet().iterator();
            while (held + indexBytes + maxNames * NAME_BYTES > budget && it.hasNext()) {
                var e = it.next();
                if (e.getValue() != us) {
                    held -= e.getValue().bytes();
                    it.remove();
                }
            }
        }
        return us;
    }

    private DebugAbbrev abbrev(Unit u) throws DwarfException {
        DebugAbbrev a = abbrevs.get(u.abbrevOffset());
        if (a == null) {
            a = DebugAbbrev.parse(name, s.abbrev(), u.abbrevOffset());
            if (a.bytes() > budget / 4) {
                throw new DwarfException(name + ": .debug_abbrev: the table at " + u.abbrevOffset() + " needs " + a.bytes()
                        + " bytes, more than a quarter of the " + budget + "-byte budget");
            }
            abbrevs.put(u.abbrevOffset(), a);
            held += a.bytes();
            var it = abbrevs.entrySet().iterator();
            while ((abbrevs.size() > CACHED_ABBREVS || held + indexBytes + maxNames * NAME_BYTES > budget) && it.hasNext()) {
                var e = it.next();
                if (e.getValue() == a) {
                    continue;
                }
                held -= e.getValue().bytes();
                it.remove();
            }
        }
        return a;
    }

    /**
     * The name and declaration line of the function whose DIE is at {@code die} (a .debug_info offset): its linkage name,
     * else its name, following abstract_origin then specification at most {@link #MAX_HOPS} times; "?" if none.
     */
    private Scope name(long die) throws DwarfException {
        Scope hit = names.get(die);
        if (hit != null) {
            return hit;
        }
        DebugInfo in = this; // the file the DIE at "at" is in
        long at = die;
        int declLine = 0;
        String found = null;
        for (int hop = 0; hop < MAX_HOPS && at >= 0 && found == null; hop++) {
            if ((at & DieReader.IN_SUPPLEMENTARY) != 0) {
                if (sup == null) {
                    break; // the supplementary file was not found: unnamed
                }
                in = sup;
                at &= ~DieReader.IN_SUPPLEMENTARY;
            }
            int ui = in.unitAt(at);
            Unit u = ui < 0 ? null : in.unit(ui);
            if (u == null) {
                throw new DwarfException(in.name + ": .debug_info: reference to " + at + " lies in no unit");
            }
            DieReader r = in.reader();
            DieReader.Die d = r.read(r.cursor(at, u.end()), u, in.abbrev(u));
            if (d == null) {
                break;
            }
            if (declLine == 0 && d.declLine > 0) {
                declLine = (int) Math.min(Integer.MAX_VALUE, d.declLine);
            }
            found = d.linkageForm != 0 ? nameString(r, u, d.linkageForm, d.linkageValue)
                    : d.nameForm != 0 ? nameString(r, u, d.nameForm, d.nameValue) : null;
            at = d.origin >= 0 ? d.origin : d.spec;
        }
        Scope out = new Scope(found == null ? "?" : found, declLine, 0, 0);
        names.put(die, out);
        if (names.size() > maxNames) {
            var it = names.entrySet().iterator();
            it.next();
            it.remove();
        }
        return out;
    }

    /** A name's string; "?" for one that cannot be read (past 4 KiB, outside its section): the chain stays. */
    private static String nameString(DieReader r, Unit u, int form, long v) {
        try {
            String n = r.string(u, form, v);
            return n == null ? "?" : n;
        } catch (DwarfException e) {
            return "?";
        }
    }

    private int unitAt(long offset) {
        int lo = 0;
        int hi = units.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            Unit u = units[mid];
            if (offset < u.dieStart()) {
                hi = mid - 1;
            } else if (offset >= u.end()) {
                lo = mid + 1;
            } else {
                return mid;
            }
        }
        return -1;
    }

    /**
     * {@code DW_AT_comp_dir} of the unit whose line table is at {@code stmtList} (what a DWARF 2-4 line table's relative
     * names are relative to); null if no unit names it. The first call reads every unit's first DIE.
     */
    public String compDir(long stmtList) throws DwarfException {
        if (stmtLists == null) {
            if (units.length >= (1 << 20)) {
                throw new DwarfException(name + ": .debug_info: " + units.length + " units, too many to key by line table");
            }
            long[] keys = new long[units.length];
            int n = 0;
            for (int i = 0; i < units.length; i++) {
                Unit u = unit(i);
                if (u.code() && u.stmtList() >= 0) {
                    keys[n++] = (u.stmtList() << 20) | i; // stmtList and unit together: sorted by stmtList
                }
            }
            stmtLists = Arrays.copyOf(keys, n);
            Arrays.sort(stmtLists);
            held += stmtLists.length * 8L;
        }
        int lo = 0;
        int hi = stmtLists.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            long key = stmtLists[mid] >>> 20;
            if (key < stmtList) {
                lo = mid + 1;
            } else if (key > stmtList) {
                hi = mid - 1;
            } else {
                Unit u = units[(int) (stmtLists[mid] & ((1 << 20) - 1))];
                return u.compDirForm() == 0 ? null : reader().string(u, u.compDirForm(), u.compDirValue());
            }
        }
        return null;
    }

    /** Units read (all kinds). */
    public int unitCount() {
        return units.length;
    }

    /** Address ranges in the unit index. */
    public int rangeCount() {
        return lo.length;
    }

    /** Estimated heap held now: the index, cached abbreviation tables, decoded units and names. */
    public long bytes() {
        return indexBytes + held + names.size() * NAME_BYTES + (sup == null ? 0 : sup.bytes());
    }
}
