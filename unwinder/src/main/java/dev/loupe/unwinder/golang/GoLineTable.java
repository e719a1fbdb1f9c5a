package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.elf.SectionHeader;
import dev.loupe.unwinder.lines.LineTable;
import dev.loupe.unwinder.lines.SourceLine;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * File and line of each pc of a Go binary (pclntab layouts of Go 1.2–1.15, magic 0xfffffffb; 1.16–1.17, 0xfffffffa;
 * 1.18–1.19, 0xfffffff0; 1.20+, 0xfffffff1), also stripped ({@code -ldflags=-s -w}) and PIE, and the calls Go inlined
 * there (the inline tree: {@code FUNCDATA_InlTree} and {@code PCDATA_InlTreeIndex}) as extra lines, innermost first.
 *
 * <p>Memory: the pclntab and the read-only segment holding the inline trees are memory-mapped, not read: only the
 * pages of functions asked about are touched (file-backed, so the kernel may drop them). Decoded pcs are kept in a
 * small LRU ({@link #CACHED_PCS} entries).
 *
 * <p>Format facts (Go's runtime/symtab.go and runtime2.go): {@code _func} = entryoff, nameoff, args, deferreturn, pcsp,
 * pcfile, pcln, npcdata, cuOffset (u32 each), then from 1.20 startLine (i32), then funcID, flag, pad, nfuncdata (u8
 * each), then npcdata u32 pcdata offsets (into pctab) and nfuncdata u32 funcdata offsets (from moduledata.gofunc,
 * ~0 = none). A pc-value table is a sequence of (zig-zag value delta, pc delta / quantum) varint pairs from value -1 at
 * the entry; a zero value delta after the first pair ends it. {@code inlinedCall}: 1.18–1.19 {parent i16, funcID u8,
 * pad, file i32, line i32, nameOff i32, parentPc i32} (20 bytes); 1.20+ {funcID u8, pad[3], nameOff i32, parentPc i32,
 * startLine i32} (16 bytes). The position of an inlined call's caller is that of the pc at entry + parentPc.
 *
 * <p>Before 1.18 (Go's src/debug/gosym/pclntab.go and src/runtime/{symtab,runtime2}.go at go1.15.15, go1.16.15,
 * go1.17.13): the function table holds (entry, funcoff) pairs of absolute uintptrs, so pcs are link-time addresses
 * (Go's linker writes a PIE's relocated words in place too). {@code _func} = entry (uintptr), nameoff, args,
 * deferreturn, pcsp, pcfile, pcln, npcdata (u32 each), from 1.16 cuOffset (u32), then funcID, pad (1.17: flag), pad,
 * nfuncdata (u8 each); then npcdata u32 pcdata offsets and, 8-aligned, nfuncdata absolute funcdata pointers (0 = none).
 * 1.2–1.15: name, pc-value tables and file names are at offsets from the pclntab's start; the file table (its offset a
 * u32 after the function table's closing pc) is a u32 count then u32 name offsets, indexed by the pcfile value.
 * 1.16–1.17: the header gives funcname, cu, filetab, pctab and pcln offsets as 1.18 does, less textStart.
 * {@code inlinedCall} in 1.15–1.17 is 1.18's 20-byte one, its nameOff from the pclntab (1.15) or funcnametab
 * (1.16–1.17). {@code FUNCDATA_InlTree} is 4 in 1.15 (after RegPointerMaps and StackObjects: runtime/funcdata.h), 3
 * from 1.16. Older 0xfffffffb binaries share 1.15's magic with other inline tree layouts (1.12's inlinedCall has no
 * parentPc) and funcdata numbering, so a 0xfffffffb binary's inline trees are read only if its build info says
 * go1.15; the others get lines without inlined frames (the leaf's file:line under the outer function's name).
 */
public final class GoLineTable implements LineTable {
    private static final System.Logger LOG = System.getLogger(GoLineTable.class.getName());
    static final int CACHED_PCS = 1024;
    private static final int MAGIC_12 = 0xfffffffb;
    private static final int MAGIC_116 = 0xfffffffa;
    private static final int MAGIC_118 = 0xfffffff0;
    private static final int MAGIC_120 = 0xfffffff1;
    private static final int PCDATA_INL_TREE_INDEX = 2;
    private static final int FUNCDATA_INL_TREE = 3;
    private static final int FUNCDATA_INL_TREE_115 = 4;
    /** Deeper inlining than this is taken for a cycle in a hostile table. */
    private static final int MAX_INLINE_DEPTH = 64;
    private static final int MAX_STRING = 64 << 10;
    /** moduledata's word index of gofunc: after 6 slices, 19 words of addresses, rodata (1.20 adds covctrs, ecovctrs). */
    private static final int GOFUNC_WORD_118 = 38;
    private static final int GOFUNC_WORD_120 = 40;
    private static final int FTAB_LEN_WORD = 17;

    private final String name;
    private final ByteBuffer tab; // the pclntab, little-endian
    private final int magic;
    private final boolean go120;
    private final boolean absolute; // before 1.18: entries and funcdata are absolute addresses
    private final long pclntabVaddr;
    private final int quantum;
    private final long textStart;
    private final int nfunc;
    private final long funcnameOff;
    private final long cuOff;
    private final long filetabOff;
    private final long pctabOff;
    private final long pclnOff;
    private final List<Mapped> funcData; // the mapped segments holding the inline trees; empty if unknown
    private final long gofunc;
    private final Map<Long, List<SourceLine>> cache = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, List<SourceLine>> eldest) {
            return size() > CACHED_PCS;
        }
    };
    private String problem;

    /** A mapped part of the file and the address it is loaded at. */
    private record Mapped(long vaddr, ByteBuffer bytes) {}

    private GoLineTable(String name, ByteBuffer tab, long pclntabVaddr, long textStart, List<Mapped> funcData, long gofunc)
            throws GoBinaryException {
        this.name = name;
        this.tab = tab.order(ByteOrder.LITTLE_ENDIAN);
        this.magic = (int) u32(0);
        if (magic != MAGIC_12 && magic != MAGIC_116 && magic != MAGIC_118 && magic != MAGIC_120) {
            throw error(String.format("pclntab magic 0x%08x: not a Go 1.2+ pclntab", magic));
        }
        this.go120 = magic == MAGIC_120;
        this.absolute = magic == MAGIC_12 || magic == MAGIC_116;
        this.quantum = u8(6);
        if (u8(7) != 8 || (quantum != 1 && quantum != 2 && quantum != 4)) {
            throw error("implausible header (pc quantum " + quantum + ", pointer size " + u8(7) + ")");
        }
        long n = u64(8);
        long entrySize = absolute ? 16 : 8;
        if (magic == MAGIC_12) {
            this.funcnameOff = 0;
            this.cuOff = 0;
            this.pctabOff = 0;
            this.pclnOff = 0;
            // The file table's offset follows the function table: n (entry, funcoff) pairs and the closing pc.
            this.filetabOff = n < 0 || n > (tab.limit() - 16) / 16 ? -1 : u32(16 + 16 * n + 8);
        } else {
            int shift = magic == MAGIC_116 ? 8 : 0; // 1.18 added textStart after nfiles
            this.funcnameOff = u64(8 + 3 * 8 - shift);
            this.cuOff = u64(8 + 4 * 8 - shift);
            this.filetabOff = u64(8 + 5 * 8 - shift);
            this.pctabOff = u64(8 + 6 * 8 - shift);
            this.pclnOff = u64(8 + 7 * 8 - shift);
        }
        long ftab = ftab();
        if (n < 0 || ftab < 0 || n > (tab.limit() - ftab) / entrySize) {
            throw error("function count " + Long.toUnsignedString(n) + " does not fit in " + tab.limit() + " bytes");
        }
        this.nfunc = (int) n;
        this.textStart = absolute ? 0 : textStart;
        this.pclntabVaddr = pclntabVaddr;
        this.funcData = funcData;
        this.gofunc = gofunc;
    }

    /** Where the function table starts. */
    private long ftab() {
        return magic == MAGIC_12 ? 16 : pclnOff;
    }

    /**
     * The line table of a Go binary, or null if {@code elf} has no pclntab. The pclntab and the read-only segment
     * holding the inline trees are mapped now, while {@code file} can be opened.
     */
    public static GoLineTable open(Path file, ElfFile elf) throws GoBinaryException, IOException {
        SectionHeader s = elf.sectionHeader(".gopclntab").or(() -> elf.sectionHeader(".data.rel.ro.gopclntab")).orElse(null);
        if (s == null || !s.hasContents()) {
            return null;
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            if (s.offset() < 0 || s.size() <= 0 || s.size() > Integer.MAX_VALUE || s.offset() > ch.size() - s.size()) {
                throw new GoBinaryException(file + ": .gopclntab lies outside the file");
            }
            ByteBuffer tab = ch.map(FileChannel.MapMode.READ_ONLY, s.offset(), s.size()).order(ByteOrder.LITTLE_ENDIAN);
            int magic = tab.limit() >= 4 ? tab.getInt(0) : 0;
            boolean absolute = magic == MAGIC_12 || magic == MAGIC_116;
            long headerText = !absolute && tab.limit() >= 8 + 3 * 8 ? tab.getLong(8 + 2 * 8) : 0;
            long textStart = inExecutable(elf.loadSegments(), headerText) ? headerText
                    : elf.sectionHeader(".text").map(SectionHeader::addr).orElse(0L);
            if (textStart == 0 && !absolute) {
                throw new GoBinaryException(file + ": no usable textStart (header " + headerText + ", no .text section)");
            }
            long gofunc = 0;
            if (!absolute) {
                try {
                    gofunc = gofunc(elf, tab, s.addr());
                } catch (ElfException | RuntimeException e) {
                    LOG.log(System.Logger.Level.DEBUG, () -> file + ": no inline trees: " + e.getMessage());
                }
            }
            // Before 1.18 funcdata pointers may point into any read-only segment; 1.18+ into gofunc's.
            boolean trees = magic == MAGIC_12 ? isGo115(file) : magic == MAGIC_116 || gofunc != 0;
            List<Mapped> funcData = new ArrayList<>();
            for (LoadSegment l : trees ? elf.loadSegments() : List.<LoadSegment>of()) {
                if (!l.executable() && (absolute || gofunc - l.vaddr() >= 0 && gofunc - l.vaddr() < l.fileSize())
                        && l.fileSize() > 0 && l.fileSize() <= Integer.MAX_VALUE && l.offset() >= 0 && l.offset() <= ch.size() - l.fileSize()) {
                    funcData.add(new Mapped(l.vaddr(), ch.map(FileChannel.MapMode.READ_ONLY, l.offset(), l.fileSize())
                            .order(ByteOrder.LITTLE_ENDIAN)));
                }
            }
            return new GoLineTable(file.toString(), tab, s.addr(), textStart, List.copyOf(funcData), funcData.isEmpty() ? 0 : gofunc);
        }
    }

    private static boolean isGo115(Path file) {
        try {
            return GoBuildInfo.read(file).flatMap(GoBuildInfo::majorMinor).map(v -> v[0] == 1 && v[1] == 15).orElse(false);
        } catch (GoBinaryException | IOException | RuntimeException e) {
            return false;
        }
    }

    /** A table over pclntab bytes alone (no inline trees): for tests and fuzzing. */
    static GoLineTable parse(String name, ByteBuffer pclntab, long textStart) throws GoBinaryException {
        return new GoLineTable(name, pclntab, 0, textStart, List.of(), 0);
    }

    /**
     * moduledata.gofunc, found as the runtime finds its module: the moduledata is the word in .noptrdata that points at
     * the pclntab (in a PIE, the R_X86_64_RELATIVE relocation that puts it there), checked by its ftab length.
     * 0 if not found.
     */
    private static long gofunc(ElfFile elf, ByteBuffer tab, long pclntabVaddr) throws ElfException {
        SectionHeader nd = elf.sectionHeader(".noptrdata").orElse(null);
        if (nd == null || !nd.hasContents() || tab.limit() < 16) {
            return 0;
        }
        int word = tab.getInt(0) == MAGIC_120 ? GOFUNC_WORD_120 : GOFUNC_WORD_118;
        long nfunc = tab.getLong(8);
        ByteBuffer data = elf.section(".noptrdata").orElseThrow().order(ByteOrder.LITTLE_ENDIAN);
        Map<Long, Long> relative = relativeRelocations(elf, nd);
        for (int o = 0; o + (word + 1) * 8 <= data.limit(); o += 8) {
            long at = nd.addr() + o;
            long value = data.getLong(o) != 0 ? data.getLong(o) : relative.getOrDefault(at, 0L);
            if (value == pclntabVaddr && data.getLong(o + FTAB_LEN_WORD * 8) == nfunc + 1) {
                long g = data.getLong(o + word * 8);
                return g != 0 ? g : relative.getOrDefault(at + word * 8L, 0L);
            }
        }
        return 0;
    }

    /** A PIE's R_X86_64_RELATIVE addends by the address they are written to, for the words of {@code in}. */
    private static Map<Long, Long> relativeRelocations(ElfFile elf, SectionHeader in) throws ElfException {
        Map<Long, Long> out = new java.util.HashMap<>();
        if (elf.sectionHeader(".rela.dyn").isEmpty()) {
            return out;
        }
        ByteBuffer r = elf.section(".rela.dyn").orElseThrow().order(ByteOrder.LITTLE_ENDIAN);
        for (int o = 0; o + 24 <= r.limit(); o += 24) {
            long off = r.getLong(o);
            if ((r.getLong(o + 8) & 0xffffffffL) == 8 && off - in.addr() >= 0 && off - in.addr() < in.size()) {
                out.put(off, r.getLong(o + 16));
            }
        }
        return out;
    }

    private static boolean inExecutable(List<LoadSegment> loads, long vaddr) {
        for (LoadSegment s : loads) {
            if (vaddr != 0 && s.executable() && vaddr - s.vaddr() >= 0 && vaddr - s.vaddr() < s.memSize()) {
                return true;
            }
        }
        return false;
    }

    @Override
    public List<SourceLine> lines(long vaddr) {
        List<SourceLine> hit = cache.get(vaddr);
        if (hit != null) {
            return hit;
        }
        List<SourceLine> found;
        try {
            found = List.copyOf(decode(vaddr));
        } catch (GoBinaryException | RuntimeException e) {
            // A table we cannot read at this pc: the frame keeps its symbol name. Said once per binary.
            if (problem == null) {
                problem = e.getMessage();
                LOG.log(System.Logger.Level.DEBUG, () -> name + ": no lines at 0x" + Long.toHexString(vaddr) + ": " + e.getMessage());
            }
            found = List.of();
        }
        cache.put(vaddr, found);
        return found;
    }

    /** The most the pc cache holds: an entry is a key, a node, a list and a line or two (strings mostly shared). */
    @Override
    public long weight() {
        return CACHED_PCS * 200L;
    }

    @Override
    public String problem() {
        return problem;
    }

    /** Which layout: "go1.2" (1.2–1.15), "go1.16" (1.16–1.17), "go1.18" (1.18–1.19) or "go1.20" (1.20 on). */
    public String format() {
        return switch (magic) {
            case MAGIC_12 -> "go1.2";
            case MAGIC_116 -> "go1.16";
            case MAGIC_118 -> "go1.18";
            default -> "go1.20";
        };
    }

    /** Whether inline trees can be read (1.18+: moduledata.gofunc was found; 0xfffffffb: the binary is Go 1.15). */
    public boolean hasInlineTrees() {
        return !funcData.isEmpty();
    }

    private List<SourceLine> decode(long vaddr) throws GoBinaryException {
        long pc = vaddr - textStart;
        if (nfunc == 0 || pc < 0 || (!absolute && pc >= 0x1_0000_0000L)) {
            return List.of();
        }
        long ftab = ftab();
        int stride = absolute ? 16 : 8;
        if (pc < ftabPc(ftab) || pc >= ftabPc(ftab + (long) stride * nfunc)) {
            return List.of();
        }
        int lo = 0;
        int hi = nfunc - 1;
        while (lo < hi) { // the last entry <= pc
            int mid = (lo + hi + 1) >>> 1;
            if (ftabPc(ftab + (long) stride * mid) <= pc) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        long f = pclnOff + (absolute ? u64(ftab + 16L * lo + 8) : u32(ftab + 8L * lo + 4));
        // Before 1.18 the entry is a uintptr, shifting the u32 fields by 4 (see the class comment).
        int shift = absolute ? 4 : 0;
        long entry = absolute ? u64(f) : u32(f);
        long pcfile = u32(f + 20 + shift);
        long pcln = u32(f + 24 + shift);
        long npcdata = u32(f + 28 + shift);
        long cuOffset = magic == MAGIC_12 ? 0 : u32(f + 32 + shift);
        int startLine = go120 ? (int) u32(f + 36) : 0;
        long fixed = switch (magic) {
            case MAGIC_12 -> 40;
            case MAGIC_116 -> 44;
            default -> go120 ? 44 : 40;
        };
        int nfuncdata = u8(f + fixed - 1);
        String outer = string(funcnameOff + (int) u32(f + 4 + shift), "function name");
        long inlIndexTable = npcdata > PCDATA_INL_TREE_INDEX ? u32(f + fixed + 4L * PCDATA_INL_TREE_INDEX) : 0;
        long inlTree = -1; // the inline tree's address
        int inlTreeSlot = magic == MAGIC_12 ? FUNCDATA_INL_TREE_115 : FUNCDATA_INL_TREE;
        if (!funcData.isEmpty() && nfuncdata > inlTreeSlot && inlIndexTable != 0) {
            if (absolute) {
                long p = f + fixed + 4 * npcdata;
                if (((pclntabVaddr + p) & 4) != 0) { // funcdata pointers are 8-aligned in memory
                    p += 4;
                }
                long ptr = u64(p + 8L * inlTreeSlot);
                inlTree = ptr == 0 ? -1 : ptr;
            } else {
                long off = u32(f + fixed + 4 * npcdata + 4L * FUNCDATA_INL_TREE);
                if (off != 0xffffffffL) {
                    inlTree = gofunc + off;
                }
            }
        }
        List<SourceLine> out = new ArrayList<>(2);
        long at = pc;
        for (int depth = 0; ; depth++) {
            if (depth > MAX_INLINE_DEPTH) {
                throw error("inline tree of " + outer + " deeper than " + MAX_INLINE_DEPTH + " (a cycle?)");
            }
            int fileno = pcvalue(pcfile, entry, at);
            int line = pcvalue(pcln, entry, at);
            String file = fileno < 0 ? null : file(cuOffset, fileno);
            int ix = inlTree < 0 ? -1 : pcvalue(inlIndexTable, entry, at);
            if (ix < 0) {
                out.add(new SourceLine(outer, file, Math.max(0, line), Math.max(0, startLine)));
                return out;
            }
            long call = inlTree + (long) ix * (go120 ? 16 : 20);
            // 1.13-1.15's nameOff counts from the pclntab's start (funcnameOff 0), 1.16+'s from funcnametab.
            String callee = string(funcnameOff + funcDataI32(call + (go120 ? 4 : 12)), "inlined function name");
            int calleeStart = go120 ? funcDataI32(call + 12) : 0;
            out.add(new SourceLine(callee, file, Math.max(0, line), Math.max(0, calleeStart)));
            long parentPc = funcDataI32(call + (go120 ? 8 : 16));
            at = entry + parentPc;
        }
    }

    /** The value of pc-value table {@code table} (an offset into pctab; 0 = none) at pc offset {@code target}. */
    private int pcvalue(long table, long entry, long target) throws GoBinaryException {
        if (table == 0) {
            return -1;
        }
        long p = pctabOff + table;
        long pc = entry;
        int value = -1;
        boolean first = true;
        while (true) {
            long v = varint(p);
            p += v >>> 32;
            int uvdelta = (int) v;
            if (uvdelta == 0 && !first) {
                return -1;
            }
            value += -(uvdelta & 1) ^ (uvdelta >>> 1);
            long d = varint(p);
            p += d >>> 32;
            pc += Integer.toUnsignedLong((int) d) * quantum;
            if (target < pc) {
                return value;
            }
            first = false;
        }
    }

    /** A uint32 varint at {@code p}: the value in the low 32 bits, its length in bytes in the high ones. */
    private long varint(long p) throws GoBinaryException {
        long v = 0;
        for (int i = 0, shift = 0; i < 5; i++, shift += 7) {
            int b = u8(p + i);
            v |= (long) (b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return ((long) (i + 1) << 32) | (v & 0xffffffffL);
            }
        }
        throw error("varint at " + p + " longer than 5 bytes");
    }

    /** The pc (1.18+: offset from textStart) of function table entry at {@code at}. */
    private long ftabPc(long at) throws GoBinaryException {
        return absolute ? u64(at) : u32(at);
    }

    private String file(long cuOffset, int fileno) throws GoBinaryException {
        if (magic == MAGIC_12) {
            if (fileno == 0) { // Go's gosym: no file
                return null;
            }
            if (filetabOff < 0 || fileno >= u32(filetabOff)) {
                throw error("file " + fileno + " is not in the file table");
            }
            return string(u32(filetabOff + 4L * fileno), "file name");
        }
        long fileoff = u32(cuOff + 4 * (cuOffset + fileno));
        return fileoff == 0xffffffffL ? null : string(filetabOff + fileoff, "file name");
    }

    private String string(long off, String what) throws GoBinaryException {
        int start = index(off, 1, what);
        int end = start;
        int stop = (int) Math.min(tab.limit(), (long) start + MAX_STRING);
        while (end < stop && tab.get(end) != 0) {
            end++;
        }
        if (end == stop) {
            throw error(what + " at " + off + " is not terminated");
        }
        byte[] b = new byte[end - start];
        tab.get(start, b);
        return new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }

    private int funcDataI32(long vaddr) throws GoBinaryException {
        for (Mapped m : funcData) {
            long off = vaddr - m.vaddr();
            if (off >= 0 && off <= m.bytes().limit() - 4L) {
                return m.bytes().getInt((int) off);
            }
        }
        throw error("inline tree entry at 0x" + Long.toHexString(vaddr) + " lies outside the read-only segments");
    }

    private int index(long off, int len, String what) throws GoBinaryException {
        if (off < 0 || off > tab.limit() - (long) len) {
            throw error(what + " at offset " + off + " lies outside the " + tab.limit() + "-byte pclntab");
        }
        return (int) off;
    }

    private int u8(long off) throws GoBinaryException {
        return tab.get(index(off, 1, "byte")) & 0xff;
    }

    private long u32(long off) throws GoBinaryException {
        return Integer.toUnsignedLong(tab.getInt(index(off, 4, "field")));
    }

    private long u64(long off) throws GoBinaryException {
        return tab.getLong(index(off, 8, "field"));
    }

    private GoBinaryException error(String what) {
        return new GoBinaryException(name + ": .gopclntab lines: " + what);
    }
}
