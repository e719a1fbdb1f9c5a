package dev.loupe.unwinder.dwarf;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SectionCompression;
import dev.loupe.unwinder.elf.SectionHeader;
import dev.loupe.unwinder.lines.LineTable;
import dev.loupe.unwinder.lines.SourceLine;
import dev.loupe.unwinder.elf.SymbolTable;

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
import java.util.zip.DataFormatException;

/**
 * Native code's source lines from DWARF {@code .debug_line} (in the binary or its separate debug file). Opening maps
 * the sections' bytes (nothing is read); the first lookup inflates a compressed section (SHF_COMPRESSED, zlib or zstd; at
 * most {@link #MAX_INFLATED} bytes) and indexes its sequences ({@link DebugLine}); later lookups decode one unit.
 * A frame gets its symbol's name with the DWARF file and line; where {@code .debug_info} says code was inlined
 * ({@link DebugInfo}), the inlined functions come first: the innermost at the pc's line, each other at the line its
 * callee was inlined at, the symbol's function last. The inline data of a binary lives within {@link #inlineWeight}
 * bytes (inflated sections included); past that, or on malformed .debug_info, frames keep their plain line and the
 * problem is said once.
 */
public final class DwarfLineTable implements LineTable {
    private static final System.Logger LOG = System.getLogger(DwarfLineTable.class.getName());
    /** A compressed .debug_line inflating to more than this gives no lines (a 500 MB debug file's is far smaller). */
    static final long MAX_INFLATED = 64L << 20;
    private static final int CACHED_PCS = 1024;
    /** The most heap one binary's inline data may hold (libc6-dbg's, inflated sections included, takes about 9 MiB). */
    static final long MAX_INLINE_BYTES = 16L << 20;
    private static final String[] SECTIONS = {".debug_line", ".debug_line_str", ".debug_str", ".debug_info", ".debug_abbrev",
            ".debug_str_offsets", ".debug_addr", ".debug_ranges", ".debug_rnglists", ".debug_aranges"};
    private static final int INFO = 3;
    /** A supplementary file's sections (dwz's alternate file: the DIEs and strings references point into there). */
    private static final String[] SUP_SECTIONS = {".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str"};
    private static final int SUP = SECTIONS.length; // raw[SUP + i] is the supplementary file's SUP_SECTIONS[i]

    private final String name;
    private final String supName; // the supplementary file, null if none
    private final Path file; // the file read, and the process's root: where split units' files are looked for (null: not)
    private final Path root;
    private final List<Path> packageFiles; // where a DWARF package (.dwp) may be, in order
    private final ByteBuffer[] raw; // SECTIONS then SUP_SECTIONS as mapped (compressed or not)
    private final boolean[] compressed;
    private final ByteBuffer[] inflated = new ByteBuffer[SECTIONS.length + SUP_SECTIONS.length]; // once inflated
    private final SymbolTable symbols;
    private DebugLine lines; // built on the first lookup
    private String problem;
    private DebugInfo inline; // opened on the first lookup
    private String inlineProblem; // why there is no inline data, said once
    private final long inlineWeight; // the bound of the inline data: inflated sections and DebugInfo's budget
    private final long inflatedForInline;
    private final Map<Long, List<SourceLine>> cache = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, List<SourceLine>> eldest) {
            return size() > CACHED_PCS;
        }
    };
    private final long weight;

    private DwarfLineTable(String name, String supName, ByteBuffer[] raw, boolean[] compressed, SymbolTable symbols) {
        this(name, supName, null, null, List.of(), raw, compressed, symbols, MAX_INLINE_BYTES);
    }

    private DwarfLineTable(String name, String supName, Path file, Path root, List<Path> packageFiles, ByteBuffer[] raw,
                           boolean[] compressed, SymbolTable symbols, long maxInlineBytes) {
        this.name = name;
        this.packageFiles = packageFiles;
        this.supName = supName;
        this.file = file;
        this.root = root;
        this.raw = raw;
        this.compressed = compressed;
        this.symbols = symbols;
        long inflated = 0;
        long inflatedInfo = 0;
        for (int i = 0; i < raw.length; i++) {
            if (raw[i] != null && compressed[i] && raw[i].limit() >= 24) {
                long n = Math.min(MAX_INFLATED, raw[i].order(ByteOrder.LITTLE_ENDIAN).getLong(8));
                if (n > 0) {
                    if (i < INFO) {
                        inflated += n;
                    } else {
                        inflatedInfo += n;
                    }
                }
            }
        }
        // What it may hold: inflated sections, the sequence index (bounded by the section's size), the units and pcs cached.
        long lineBytes = raw[0] == null ? 0 : compressed[0] ? inflated : raw[0].limit();
        long infoBytes = raw[INFO] == null ? 0 : compressed[INFO] ? inflatedInfo : raw[INFO].limit();
        if (raw[SUP] != null && supName != null) {
            infoBytes += compressed[SUP] ? 0 : raw[SUP].limit(); // the supplementary file's DIEs are read for names
        }
        this.inflatedForInline = inflatedInfo;
        // The inline data's own budget grows with .debug_info (index, scopes of the units looked up, abbreviations), and
        // with .debug_addr: split units (.dwo, not counted in .debug_info) have an address there for each of their ranges.
        long addrBytes = raw[6] == null ? 0 : raw[6].limit();
        this.inlineWeight = raw[INFO] == null || raw[INFO + 1] == null ? 0
                : Math.min(maxInlineBytes, inflatedInfo + infoBytes / 4 + addrBytes * 4 + (256L << 10));
        this.weight = inflated + lineBytes / 8 + (DebugLine.CACHED_UNITS + 1) * 32L * 1024 + CACHED_PCS * 300L + inlineWeight;
    }

    /**
     * The DWARF line table of {@code dwarfFile} (the binary or its debug file; {@code dwarfElf} parsed from it) for a
     * binary whose functions {@code symbols} names; null if it has no {@code .debug_line}.
     */
    public static DwarfLineTable open(Path dwarfFile, ElfFile dwarfElf, SymbolTable symbols) throws DwarfException, IOException {
        return open(dwarfFile, dwarfElf, symbols, Path.of("/"));
    }

    /**
     * As above, a supplementary file the DWARF points into (dwz's alternate file, {@link SupplementaryFile}) looked for
     * in {@code root} (the process's root file system) first, then on the host.
     */
    public static DwarfLineTable open(Path dwarfFile, ElfFile dwarfElf, SymbolTable symbols, Path root)
            throws DwarfException, IOException {
        return open(dwarfFile, dwarfElf, symbols, root, dwarfFile);
    }

    /**
     * As above for the DWARF of {@code binary} (the binary itself or its separate debug file {@code dwarfFile}): a split
     * DWARF package is looked for as {@code dwarfFile.dwp}, then {@code binary.dwp}, as gdb looks for it.
     */
    public static DwarfLineTable open(Path dwarfFile, ElfFile dwarfElf, SymbolTable symbols, Path root, Path binary)
            throws DwarfException, IOException {
        SectionHeader line = dwarfElf.sectionHeader(".debug_line").orElse(null);
        if (line == null || !line.hasContents() || line.size() == 0) {
            return null;
        }
        ByteBuffer[] raw = new ByteBuffer[SECTIONS.length + SUP_SECTIONS.length];
        boolean[] compressed = new boolean[raw.length];
        map(dwarfFile, dwarfElf, SECTIONS, raw, compressed, 0);
        Path sup = null;
        try {
            SupplementaryFile.Link link = SupplementaryFile.link(dwarfFile.toString(), dwarfElf);
            sup = link == null ? null : SupplementaryFile.find(dwarfFile, link, root);
            if (sup != null) {
                map(sup, ElfFile.openWithoutSymbols(sup), SUP_SECTIONS, raw, compressed, SUP);
            } else if (link != null) {
                LOG.log(System.Logger.Level.INFO, () -> dwarfFile + ": its supplementary debug file " + link.name()
                        + " was not found: functions defined there are named \"?\" when inlined");
            }
        } catch (DwarfException | ElfException | IOException e) {
            LOG.log(System.Logger.Level.INFO, () -> dwarfFile + ": no supplementary debug file read: " + e.getMessage());
            java.util.Arrays.fill(raw, SUP, raw.length, null);
            sup = null;
        }
        java.util.LinkedHashSet<Path> packages = new java.util.LinkedHashSet<>();
        for (Path p : List.of(dwarfFile, binary)) {
            if (p.getFileName() != null) {
                packages.add(p.resolveSibling(p.getFileName() + ".dwp"));
            }
        }
        return new DwarfLineTable(dwarfFile.toString(), sup == null ? null : sup.toString(), dwarfFile, root,
                List.copyOf(packages), raw, compressed, symbols, MAX_INLINE_BYTES);
    }

    /** Maps {@code names}' sections of {@code file} into {@code raw} from {@code at}: absent ones stay null. */
    private static void map(Path file, ElfFile elf, String[] names, ByteBuffer[] raw, boolean[] compressed, int at)
            throws DwarfException, IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            for (int i = 0; i < names.length; i++) {
                SectionHeader s = elf.sectionHeader(names[i]).orElse(null);
                if (s == null || !s.hasContents() || s.size() == 0) {
                    continue;
                }
                if (s.offset() < 0 || s.size() > Integer.MAX_VALUE || s.offset() > ch.size() - s.size()) {
                    throw new DwarfException(file + ": " + names[i] + " lies outside the file");
                }
                raw[at + i] = ch.map(FileChannel.MapMode.READ_ONLY, s.offset(), s.size());
                compressed[at + i] = (s.flags() & SectionHeader.SHF_COMPRESSED) != 0;
            }
        }
    }

    /** A table over section bytes (uncompressed or SHF_COMPRESSED with their Elf64_Chdr): for tests and fuzzing. */
    public static DwarfLineTable of(String name, ByteBuffer debugLine, boolean compressed, SymbolTable symbols) {
        ByteBuffer[] raw = new ByteBuffer[SECTIONS.length + SUP_SECTIONS.length];
        boolean[] packed = new boolean[raw.length];
        raw[0] = debugLine;
        packed[0] = compressed;
        return new DwarfLineTable(name, null, raw, packed, symbols);
    }

    /**
     * A table over uncompressed sections by name ({@code .debug_line}, {@code .debug_info}, ... as in an ELF file; absent
     * ones missing; a supplementary file's as "sup.debug_info", ...): for tests and fuzzing.
     */
    public static DwarfLineTable of(String name, Map<String, ByteBuffer> sections, SymbolTable symbols, long maxInlineBytes) {
        ByteBuffer[] raw = new ByteBuffer[SECTIONS.length + SUP_SECTIONS.length];
        for (int i = 0; i < SECTIONS.length; i++) {
            raw[i] = sections.get(SECTIONS[i]);
        }
        for (int i = 0; i < SUP_SECTIONS.length; i++) {
            raw[SUP + i] = sections.get("sup" + SUP_SECTIONS[i]);
        }
        boolean sup = sections.keySet().stream().anyMatch(k -> k.startsWith("sup."));
        return new DwarfLineTable(name, sup ? name + " (supplementary)" : null, null, null, List.of(), raw,
                new boolean[raw.length], symbols, maxInlineBytes);
    }


    @Override
    public List<SourceLine> lines(long vaddr) {
        List<SourceLine> hit = cache.get(vaddr);
        if (hit != null) {
            return hit;
        }
        List<SourceLine> found = List.of();
        try {
            DebugLine.Position p = table() == null ? null : lines.find(vaddr);
            String fn = p == null ? null : symbols.lookup(vaddr);
            if (fn != null && p.line() > 0) {
                found = List.of(new SourceLine(fn, p.file(), p.line(), 0));
                List<SourceLine> chain = inlined(vaddr, fn, p);
                if (chain != null) {
                    found = chain;
                }
            }
        } catch (DwarfException | RuntimeException e) {
            fail(e);
        }
        cache.put(vaddr, found);
        return found;
    }

    /**
     * The lines of the functions inlined at {@code vaddr} and of the one they are inlined into, innermost first (see
     * {@link SourceLine}), {@code p} the pc's own position; null where .debug_info gives none (no inlining: the plain
     * line, which then also lacks a start line) or cannot be read (said once in {@link #inlineProblem()}).
     */
    private List<SourceLine> inlined(long vaddr, String fn, DebugLine.Position p) {
        try {
            DebugInfo info = inline();
            DebugInfo.Chain c = info == null ? null : info.chain(vaddr);
            if (c == null || c.scopes().isEmpty()) {
                return null;
            }
            List<DebugInfo.Scope> s = c.scopes();
            List<SourceLine> out = new ArrayList<>(s.size());
            String file = p.file();
            int line = p.line();
            for (int i = 0; i < s.size(); i++) {
                boolean outermost = i == s.size() - 1;
                out.add(new SourceLine(outermost ? fn : s.get(i).name(), file, line, s.get(i).declLine()));
                if (!outermost) { // the caller's line: where this one was inlined
                    file = c.stmtList() < 0 ? null : lines.file(c.stmtList(), s.get(i).callFile());
                    line = s.get(i).callLine();
                }
            }
            return out;
        } catch (DwarfException | RuntimeException e) {
            failInline(e);
            return null;
        }
    }

    /** The inline reader, opened on first use within the budget; null once it failed or when there is no .debug_info. */
    private DebugInfo inline() throws DwarfException {
        if (inline != null || inlineProblem != null || inlineWeight == 0) {
            return inline;
        }
        long budget = inlineWeight - inflatedForInline;
        if (budget < (16L << 10)) {
            throw new DwarfException(name + ": .debug_info: the " + inlineWeight + "-byte budget for this binary's inline data"
                    + " leaves " + budget + " bytes once its sections are inflated (" + inflatedForInline + " bytes)");
        }
        // A supplementary file gets a quarter: its index is headers only; it holds abbreviations and names' DIEs.
        long supBudget = supName == null ? 0 : budget / 4;
        DebugInfo info = DebugInfo.open(name, new DebugInfo.Sections(section(INFO, SECTIONS[INFO]), section(4, SECTIONS[4]),
                section(2, SECTIONS[2]), section(1, SECTIONS[1]), section(5, SECTIONS[5]), section(6, SECTIONS[6]),
                section(7, SECTIONS[7]), section(8, SECTIONS[8]), section(9, SECTIONS[9])), budget - supBudget);
        if (supBudget > 0) {
            info.supplementary(DebugInfo.openSupplementary(supName, new DebugInfo.Sections(section(SUP, supName + " .debug_info"),
                    section(SUP + 1, supName + " .debug_abbrev"), section(SUP + 2, supName + " .debug_str"),
                    section(SUP + 3, supName + " .debug_line_str"), null, null, null, null, null), supBudget));
        }
        if (file != null) {
            info.splitFiles(this::splitFile);
        }
        inline = info;
        LOG.log(System.Logger.Level.DEBUG, () -> name + ": " + inline.unitCount() + " units, " + inline.rangeCount()
                + " ranges indexed for inlined functions");
        return inline;
    }

    /** A DWARF 2-4 unit's compilation directory from .debug_info; null without one (its names then stay relative). */
    private String compDir(long lineTable) {
        try {
            DebugInfo info = inline();
            return info == null ? null : info.compDir(lineTable);
        } catch (DwarfException | RuntimeException e) {
            failInline(e);
            return null;
        }
    }

    private static final String[] DWO_SECTIONS = {".debug_info.dwo", ".debug_abbrev.dwo", ".debug_str.dwo",
            ".debug_str_offsets.dwo", ".debug_rnglists.dwo", ".debug_cu_index"};
    private static final int CU_INDEX = 5;

    /** A DWARF package's sections (decompressed where they were compressed) and its unit index. */
    private record Package(Path path, ByteBuffer[] sections, DwarfPackage index, long decompressed) {}

    private Package pkg; // the package file, once looked for (NO_PACKAGE: none, or unreadable: said once)
    private static final Package NO_PACKAGE = new Package(null, null, null, 0);

    /**
     * A split unit's sections (gcc -gsplit-dwarf): its part of a DWARF package, {@code FILE.dwp} beside the file read
     * or the binary (gdb's names), when the package holds {@code dwoId}; else its {@code .dwo} file: {@code dwoName}
     * as it is if absolute, else in {@code compDir}, each in the process's root first; then its name next to the file
     * read (.dwo files copied beside the binary). Null if none.
     */
    private DebugInfo.SplitFile splitFile(String dwoName, String compDir, long dwoId, long maxDecompressed) throws DwarfException {
        Package p = dwp(maxDecompressed);
        if (p != null) {
            DwarfPackage.Contributions c = p.index().find(dwoId);
            if (c != null) {
                ByteBuffer[] b = p.sections();
                String n = p.path().toString();
                return new DebugInfo.SplitFile(n + " (unit 0x" + Long.toHexString(dwoId) + ")", new DebugInfo.Sections(
                        DwarfPackage.slice(n, DWO_SECTIONS[0], b[0], c, DwarfPackage.SECT_INFO),
                        DwarfPackage.slice(n, DWO_SECTIONS[1], b[1], c, DwarfPackage.SECT_ABBREV), b[2], null,
                        DwarfPackage.slice(n, DWO_SECTIONS[3], b[3], c, DwarfPackage.SECT_STR_OFFSETS), null, null,
                        p.index().version() >= 5 ? DwarfPackage.slice(n, DWO_SECTIONS[4], b[4], c, DwarfPackage.SECT_RNGLISTS) : null,
                        null), p.decompressed());
            }
        }
        List<Path> candidates = new ArrayList<>();
        try {
            Path dwo = Path.of(dwoName);
            Path named = dwo.isAbsolute() ? dwo : compDir != null && compDir.startsWith("/") ? Path.of(compDir).resolve(dwo) : null;
            if (named != null) {
                if (!root.equals(Path.of("/"))) {
                    candidates.add(root.resolve(named.toString().substring(1)));
                }
                candidates.add(named);
            }
            if (file.getParent() != null && dwo.getFileName() != null) {
                candidates.add(file.getParent().resolve(dwo.getFileName()));
            }
        } catch (java.nio.file.InvalidPathException e) {
            throw new DwarfException(name + ": .debug_info: split unit file name " + dwoName + ": " + e.getMessage());
        }
        for (Path c : candidates) {
            if (!java.nio.file.Files.isRegularFile(c)) {
                continue;
            }
            ByteBuffer[] b = new ByteBuffer[DWO_SECTIONS.length - 1];
            long decompressed = splitSections(c, b, maxDecompressed);
            if (b[0] == null || b[1] == null) {
                throw new DwarfException(c + ": .debug_info.dwo or .debug_abbrev.dwo is missing");
            }
            return new DebugInfo.SplitFile(c.toString(), new DebugInfo.Sections(b[0], b[1], b[2], null, b[3], null, null, b[4], null),
                    decompressed);
        }
        return null;
    }

    /** The package file, opened on first use; null if there is none (or it cannot be read: said once). */
    private Package dwp(long maxDecompressed) throws DwarfException {
        if (pkg == null) {
            pkg = NO_PACKAGE;
            for (Path c : packageFiles) {
                if (!java.nio.file.Files.isRegularFile(c)) {
                    continue;
                }
                ByteBuffer[] b = new ByteBuffer[DWO_SECTIONS.length];
                long decompressed = splitSections(c, b, maxDecompressed);
                if (b[0] == null || b[1] == null || b[CU_INDEX] == null) {
                    throw new DwarfException(c + ": a DWARF package needs .debug_info.dwo, .debug_abbrev.dwo and .debug_cu_index");
                }
                DwarfPackage index = DwarfPackage.parse(c.toString(), b[CU_INDEX]);
                pkg = new Package(c, b, index, decompressed);
                LOG.log(System.Logger.Level.DEBUG, () -> c + ": DWARF package of " + index.unitCount() + " units");
                break;
            }
        }
        return pkg == NO_PACKAGE ? null : pkg;
    }

    /**
     * Maps the first {@code into.length} of {@link #DWO_SECTIONS} of {@code c}, decompressing compressed ones (zlib or
     * zstd) within {@code maxDecompressed} bytes in all; returns the bytes decompressed.
     */
    private long splitSections(Path c, ByteBuffer[] into, long maxDecompressed) throws DwarfException {
        boolean[] packed = new boolean[into.length];
        try {
            map(c, ElfFile.openWithoutSymbols(c), java.util.Arrays.copyOf(DWO_SECTIONS, into.length), into, packed, 0);
        } catch (ElfException | IOException e) {
            throw new DwarfException(c + ": " + e.getMessage());
        }
        long total = 0;
        for (int i = 0; i < into.length; i++) {
            if (packed[i]) {
                long size = into[i].limit() >= 24 ? into[i].duplicate().order(ByteOrder.LITTLE_ENDIAN).getLong(8) : 0;
                if (size < 0 || size > maxDecompressed - total) {
                    throw new DwarfException(c + ": " + DWO_SECTIONS[i] + " decompresses to " + Long.toUnsignedString(size)
                            + " bytes, more than the " + Math.max(0, maxDecompressed - total) + " left for split units");
                }
                into[i] = decompressed(c.toString(), into[i], DWO_SECTIONS[i]);
                total += into[i].limit();
            }
        }
        return total;
    }

    private void failInline(Exception e) {
        if (inlineProblem == null) {
            inlineProblem = e.getMessage() == null ? e.toString() : e.getMessage();
            inline = null;
            LOG.log(System.Logger.Level.INFO, () -> "no inlined functions from " + name + " (plain source lines kept): "
                    + inlineProblem);
        }
    }

    /** Why frames lack inlined functions, if reading .debug_info failed or passed its budget; null when none did. */
    public String inlineProblem() {
        return inlineProblem;
    }

    /** Heap the inline data holds now (index, decoded units, names; inflated sections not counted), 0 before use. */
    public long inlineBytes() {
        return inline == null ? 0 : inline.bytes();
    }

    /** The index, built on first use; null once it failed (the failure is kept: never retried, said once). */
    public DebugLine table() throws DwarfException {
        if (lines == null && problem == null) {
            try {
                lines = DebugLine.parse(name, section(0, ".debug_line"), section(1, ".debug_line_str"), section(2, ".debug_str"),
                        this::compDir);
                LOG.log(System.Logger.Level.DEBUG, () -> name + ": " + lines.sequenceCount() + " line sequences");
            } catch (DwarfException | RuntimeException e) {
                fail(e);
                throw e;
            }
        }
        return lines;
    }

    private void fail(Exception e) {
        if (problem == null) {
            problem = e.getMessage();
            LOG.log(System.Logger.Level.DEBUG, () -> "no source lines from " + name + ": " + e.getMessage());
        }
    }

    private ByteBuffer section(int i, String what) throws DwarfException {
        ByteBuffer b = raw[i];
        if (b == null || !compressed[i]) {
            return b;
        }
        if (inflated[i] == null) {
            inflated[i] = inflatedSection(i, what); // .debug_str serves both readers: inflated once
        }
        return inflated[i].duplicate();
    }

    private ByteBuffer inflatedSection(int i, String what) throws DwarfException {
        return decompressed(name, raw[i], what);
    }

    /** A SHF_COMPRESSED section's bytes (from its Elf64_Chdr) decompressed, at most {@link #MAX_INFLATED} of them. */
    private static ByteBuffer decompressed(String name, ByteBuffer b, String what) throws DwarfException {
        if (b.limit() < 24) {
            throw new DwarfException(name + ": " + what + ": compression header truncated");
        }
        b = b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int type = b.getInt(0);
        long size = b.getLong(8);
        if (!SectionCompression.known(type)) {
            throw new DwarfException(name + ": " + what + ": " + SectionCompression.name(type));
        }
        if (size < 0 || size > MAX_INFLATED) {
            throw new DwarfException(name + ": " + what + " inflates to " + Long.toUnsignedString(size) + " bytes, more than "
                    + MAX_INFLATED);
        }
        return ByteBuffer.wrap(inflate(name, type, b, (int) size, what));
    }

    private static byte[] inflate(String name, int type, ByteBuffer b, int size, String what) throws DwarfException {
        try {
            byte[] out = SectionCompression.decompress(type, b.slice(24, b.limit() - 24), size);
            if (out.length != size) {
                throw new DwarfException(name + ": " + what + " decompressed to " + out.length + " bytes, its header says " + size);
            }
            return out;
        } catch (DataFormatException e) {
            throw new DwarfException(name + ": " + what + ": " + e.getMessage());
        }
    }

    @Override
    public long weight() {
        return weight;
    }

    @Override
    public String problem() {
        return problem;
    }
}
