package dev.loupe.unwinder.elf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

/**
 * An ELF64 little-endian x86-64 file as the symbolizer needs it: function symbols ({@code .symtab} and
 * {@code .dynsym} merged), the GNU build id and the file-offset to address mapping, over the headers
 * {@link ElfHeaders} reads; bytes come through {@link ElfSource} (positional reads, bounds-checked).
 *
 * <p>Symbol tables are streamed in chunks and their names gathered in name-offset order through a
 * window over the string table, so parsing a 100 MB {@code .strtab} never holds it on the heap; the
 * resulting {@link SymbolTable} is bounded by a byte budget. Everything the symbolizer needs is read by
 * {@link #open}; the file is not held open afterwards ({@link #section} re-opens it).
 *
 * <p>Malformed input always ends in {@link ElfException} naming the file and the problem, never an
 * unchecked exception; every loop is bounded by the file's size or a fixed cap.
 */
public final class ElfFile {
    public static final int ET_EXEC = 2;
    public static final int ET_DYN = 3;
    /** Default bound on the heap a symbol table may take ({@link #open(Path, long)}). */
    /** Note type of the Go toolchain's build id ({@code ELF_NOTE_GOBUILDID_TAG} in cmd/link). */
    static final int GO_BUILD_ID_NOTE = 4;
    private static final long NO_SYMBOLS = -1; // buildIdOf: headers and notes only
    public static final long DEFAULT_MAX_SYMBOL_BYTES = 512L << 20;

    private static final int PF_X = 1;
    private static final int STT_NOTYPE = 0;
    private static final int STT_FUNC = 2;
    private static final int STT_GNU_IFUNC = 10;
    private static final int STB_LOCAL = 0;
    private static final int STB_GLOBAL = 1;
    private static final int SYM_SIZE = 24;
    /** Symbol entries scanned, over all tables: far above any real binary (Chrome has ~1.5M). */
    private static final long MAX_SYMBOL_ENTRIES = 32_000_000;
    private static final int MAX_SECTION_BYTES = Integer.MAX_VALUE - 64;
    private static final int MAX_NOTE_AREA = 1 << 20;
    private static final int SYM_CHUNK = 2730 * SYM_SIZE; // 64 KiB of symbol entries per read
    private static final int NAME_WINDOW = 256 << 10;
    /** Longer names (rare C++ templates) are cut: they still name the function well enough. */
    private static final int MAX_NAME = 64 << 10;

    /** Where the bytes came from; closed after parsing (a file is re-opened by {@link #section}). */
    private final ElfSource source;
    private final ElfHeaders headers;
    // The PT_LOAD segments as arrays: fileOffsetToVaddr is on the per-frame path.
    private final long[] loadOffset;
    private final long[] loadVaddr;
    private final long[] loadFileSize;
    private final boolean[] loadExec;
    private final SymbolTable symbols;
    private final Optional<String> buildId;
    private Optional<String> goBuildId = Optional.empty(); // set by readBuildId, which reads every note

    private ElfFile(ElfSource src, long maxSymbolBytes) throws ElfException {
        this.source = src;
        this.headers = ElfHeaders.read(src);
        List<LoadSegment> ls = headers.loadSegments();
        loadOffset = new long[ls.size()];
        loadVaddr = new long[ls.size()];
        loadFileSize = new long[ls.size()];
        loadExec = new boolean[ls.size()];
        for (int i = 0; i < ls.size(); i++) {
            LoadSegment l = ls.get(i);
            loadOffset[i] = l.offset();
            loadVaddr[i] = l.vaddr();
            loadFileSize[i] = l.fileSize();
            loadExec[i] = (l.flags() & PF_X) != 0;
        }
        // The budget also keeps the builder's name array far below its 2 GiB limit.
        symbols = maxSymbolBytes == NO_SYMBOLS ? SymbolTable.EMPTY : readSymbols(Math.min(maxSymbolBytes, 1L << 30));
        buildId = readBuildId();
    }

    /** Opens and parses a file; symbol tables may take up to {@link #DEFAULT_MAX_SYMBOL_BYTES}. */
    public static ElfFile open(Path path) throws ElfException, IOException {
        return open(path, DEFAULT_MAX_SYMBOL_BYTES);
    }

    /**
     * Opens and parses a file. A symbol table that would take more than {@code maxSymbolBytes} of heap is
     * an {@link ElfException} (the caller could not cache it anyway). IOException: the file cannot be
     * opened at all; read errors after that are ElfExceptions.
     */
    public static ElfFile open(Path path, long maxSymbolBytes) throws ElfException, IOException {
        try (ElfSource src = ElfSource.open(path)) {
            return new ElfFile(src, maxSymbolBytes);
        }
    }

    /**
     * The build id naming this build of the file at {@code path} (GNU, else Go; see {@link #anyBuildId()}), read
     * from its headers and notes only: no symbol table is loaded.
     */
    public static Optional<String> buildIdOf(Path path) throws ElfException, IOException {
        try (ElfSource src = ElfSource.open(path)) {
            return new ElfFile(src, NO_SYMBOLS).anyBuildId();
        }
    }

    /** Opens a file's headers and notes only (no symbol table is loaded): e.g. a debug file read for its DWARF. */
    public static ElfFile openWithoutSymbols(Path path) throws ElfException, IOException {
        try (ElfSource src = ElfSource.open(path)) {
            return new ElfFile(src, NO_SYMBOLS);
        }
    }

    /** Parses an in-memory image (e.g. the vdso), from the buffer's position to its limit. */
    public static ElfFile parse(String name, ByteBuffer image) throws ElfException {
        return new ElfFile(ElfSource.of(name, image), DEFAULT_MAX_SYMBOL_BYTES);
    }

    /** The name given at open/parse (the path for files). */
    public String name() {
        return source.name();
    }

    /** ET_EXEC (non-PIE executable) or ET_DYN (PIE or shared library), or another e_type. */
    public int type() {
        return headers.type();
    }

    public List<LoadSegment> loadSegments() {
        return headers.loadSegments();
    }

    /** Function symbols of {@code .symtab} and {@code .dynsym}, merged (empty if the file has neither). */
    public SymbolTable symbols() {
        return symbols;
    }

    /** The GNU build id as lower-case hex, from {@code .note.gnu.build-id} or a PT_NOTE segment. */
    public Optional<String> buildId() {
        return buildId;
    }

    /**
     * A Go binary's build id (the {@code "Go"} note of type 4 in {@code .note.go.buildid}, as {@code go tool buildid}
     * prints it); Go writes it whether or not the linker adds a GNU one.
     */
    public Optional<String> goBuildId() {
        return goBuildId;
    }

    /** The GNU build id, else the Go build id: what names this build of the binary. */
    public Optional<String> anyBuildId() {
        return buildId.isPresent() ? buildId : goBuildId;
    }

    /** The header of the section of this name, if there is one. */
    public Optional<SectionHeader> sectionHeader(String sectionName) {
        return Optional.ofNullable(headers.find(sectionName));
    }

    /** Whether a section of this name with file contents exists (e.g. {@code .symtab}: not stripped). */
    public boolean hasSection(String sectionName) {
        return headers.find(sectionName) != null;
    }

    /**
     * The virtual address a file offset is loaded at, via the PT_LOAD containing it (executable segments
     * first, as the offsets come from executable mappings); -1 if none.
     */
    public long fileOffsetToVaddr(long fileOffset) {
        for (int pass = 0; pass < 2; pass++) {
            boolean wantExec = pass == 0;
            for (int i = 0; i < loadOffset.length; i++) {
                if (loadExec[i] == wantExec && fileOffset >= loadOffset[i] && fileOffset - loadOffset[i] < loadFileSize[i]) {
                    return fileOffset - loadOffset[i] + loadVaddr[i];
                }
            }
        }
        return -1;
    }

    /**
     * A section's raw bytes by name (e.g. {@code .eh_frame}, {@code .gopclntab}), read now: a file is
     * re-opened and must still have the size it had when parsed. Empty if absent or SHT_NOBITS.
     */
    public Optional<ByteBuffer> section(String sectionName) throws ElfException {
        SectionHeader s = headers.find(sectionName);
        if (s == null) {
            return Optional.empty();
        }
        try (ElfSource src = source.reopen(sectionName)) {
            src.checkRange(s.offset(), s.size(), sectionName);
            return Optional.of(src.view(s.offset(), sectionLength(s.size(), sectionName), sectionName));
        }
    }

    // ---------------- symbols ----------------

    private SymbolTable readSymbols(long maxSymbolBytes) throws ElfException {
        SymbolTable.Builder b = new SymbolTable.Builder();
        long entries = 0;
        List<SectionHeader> sections = headers.sections();
        for (int wanted : new int[] {SectionHeader.SHT_SYMTAB, SectionHeader.SHT_DYNSYM}) {
            for (SectionHeader s : sections) {
                if (s.type() != wanted || s.size() == 0) {
                    continue; // (a debug file's .dynsym is SHT_NOBITS: skipped here)
                }
                if (s.entsize() != SYM_SIZE) {
                    throw error(s.name() + " has entry size " + s.entsize() + ", expected " + SYM_SIZE);
                }
                if (s.link() <= 0 || s.link() >= sections.size()) {
                    throw error(s.name() + " links to section " + Integer.toUnsignedString(s.link()) + ", out of range");
                }
                SectionHeader strs = sections.get(s.link());
                if (strs.type() != SectionHeader.SHT_STRTAB) {
                    throw error(s.name() + " links to " + describe(strs) + ", not a string table");
                }
                source.checkRange(s.offset(), s.size(), s.name());
                source.checkRange(strs.offset(), strs.size(), strs.name());
                long count = s.size() / SYM_SIZE;
                entries += count;
                if (entries > MAX_SYMBOL_ENTRIES) {
                    throw error("more than " + MAX_SYMBOL_ENTRIES + " symbol entries");
                }
                readSymbolTable(s, strs, count, b, maxSymbolBytes);
            }
        }
        return b.build();
    }

    /**
     * Pass 1 streams the entries and keeps function symbols; pass 2 reads their names in name-offset order
     * through a window over the string table.
     */
    private void readSymbolTable(SectionHeader s, SectionHeader strs, long count, SymbolTable.Builder b,
                                 long maxSymbolBytes) throws ElfException {
        // The program's entry point is often an assembly label (NOTYPE), as ld.so's _start is: the outermost frame of
        // every process before main, named like a function.
        long entry = ByteBuffer.wrap(source.bytes(24, 8, "e_entry")).order(ByteOrder.LITTLE_ENDIAN).getLong();
        long[] values = new long[64];
        long[] sizes = new long[64];
        long[] keys = new long[64]; // (name offset << 32) | function index: one primitive sort orders both
        byte[] ranks = new byte[64];
        int nf = 0;
        byte[] chunk = new byte[(int) Math.min(SYM_CHUNK, count * SYM_SIZE)];
        ByteBuffer cb = ByteBuffer.wrap(chunk).order(ByteOrder.LITTLE_ENDIAN);
        for (long first = 0; first < count; ) {
            int n = (int) Math.min(SYM_CHUNK / SYM_SIZE, count - first);
            source.read(s.offset() + first * SYM_SIZE, chunk, n * SYM_SIZE, s.name());
            for (int i = 0; i < n; i++) {
                int o = i * SYM_SIZE;
                int info = chunk[o + 4] & 0xff;
                int stype = info & 0xf;
                int shndx = Short.toUnsignedInt(cb.getShort(o + 6));
                long value = cb.getLong(o + 8);
                long nameOff = Integer.toUnsignedLong(cb.getInt(o));
                if ((stype != STT_FUNC && stype != STT_GNU_IFUNC && !(stype == STT_NOTYPE && value == entry))
                        || shndx == 0 || value == 0 || nameOff == 0) {
                    continue;
                }
                if (nameOff >= strs.size()) {
                    throw error(s.name() + " entry " + (first + i) + " names offset " + nameOff + ", beyond "
                            + strs.name() + " of " + strs.size() + " bytes");
                }
                if (nf == values.length) {
                    int cap = nf * 2;
                    if (25L * cap + b.bytesHeld() > maxSymbolBytes) { // before the names: cap the entries too
                        throw tooLarge(maxSymbolBytes, b.count() + nf);
                    }
                    values = Arrays.copyOf(values, cap);
                    sizes = Arrays.copyOf(sizes, cap);
                    keys = Arrays.copyOf(keys, cap);
                    ranks = Arrays.copyOf(ranks, cap);
                }
                int bind = info >>> 4;
                values[nf] = value;
                sizes[nf] = cb.getLong(o + 16);
                keys[nf] = nameOff << 32 | nf;
                ranks[nf] = (byte) (bind == STB_GLOBAL ? SymbolTable.Builder.GLOBAL
                        : bind == STB_LOCAL ? SymbolTable.Builder.LOCAL : SymbolTable.Builder.WEAK);
                nf++;
            }
            first += n;
        }
        Arrays.sort(keys, 0, nf);
        byte[] window = new byte[(int) Math.min(NAME_WINDOW, strs.size())];
        long winStart = 0;
        int winLen = 0;
        for (int k = 0; k < nf; k++) {
            long off = keys[k] >>> 32;
            int idx = (int) keys[k];
            int end = -1;
            if (off >= winStart && off < winStart + winLen) {
                end = nul(window, (int) (off - winStart), winLen);
            }
            if (end < 0) { // not in the window, or the name runs past it: move the window to the name
                winStart = off;
                winLen = (int) Math.min(window.length, strs.size() - off);
                source.read(strs.offset() + off, window, winLen, strs.name());
                end = nul(window, 0, winLen);
                if (end < 0) {
                    if (winStart + winLen >= strs.size()) {
                        throw error("symbol name at offset " + off + " is not terminated within " + strs.name());
                    }
                    end = winLen; // longer than the window: cut below
                }
            }
            int from = (int) (off - winStart);
            int len = Math.min(end - from, MAX_NAME);
            int at = indexOf(window, from, from + len, (byte) '@'); // versioned: memcpy@GLIBC_2.2.5
            if (at > from) {
                len = at - from;
            }
            b.add(values[idx], sizes[idx], ranks[idx], window, from, len);
            if (b.bytesHeld() > maxSymbolBytes) {
                throw tooLarge(maxSymbolBytes, b.count());
            }
        }
    }

    private ElfException tooLarge(long maxSymbolBytes, long functions) {
        return error("symbol tables need more than " + (maxSymbolBytes >> 20) + " MiB (" + functions
                + " functions so far); too large to keep in memory");
    }

    private static int nul(byte[] b, int from, int to) {
        for (int i = from; i < to; i++) {
            if (b[i] == 0) {
                return i;
            }
        }
        return -1;
    }

    private static int indexOf(byte[] b, int from, int to, byte v) {
        for (int i = from; i < to; i++) {
            if (b[i] == v) {
                return i;
            }
        }
        return -1;
    }

    // ---------------- build id ----------------

    private Optional<String> readBuildId() throws ElfException {
        String gnu = null;
        List<long[]> areas = new ArrayList<>(); // {offset, size, align}
        for (SectionHeader s : headers.sections()) { // the dedicated section first, then any note section, then PT_NOTE
            if (s.type() == SectionHeader.SHT_NOTE && s.name().equals(".note.gnu.build-id")) {
                areas.add(new long[] {s.offset(), s.size(), s.align()});
            }
        }
        for (SectionHeader s : headers.sections()) {
            if (s.type() == SectionHeader.SHT_NOTE && !s.name().equals(".note.gnu.build-id")) {
                areas.add(new long[] {s.offset(), s.size(), s.align()});
            }
        }
        for (ElfHeaders.ProgramHeader p : headers.programHeaders()) {
            if (p.type() == ElfHeaders.PT_NOTE) {
                areas.add(new long[] {p.offset(), p.fileSize(), p.align()});
            }
        }
        for (long[] a : areas) {
            if (a[1] <= 0 || a[1] > MAX_NOTE_AREA) {
                continue; // empty or implausible: not where a build id lives
            }
            ByteBuffer n = source.view(a[0], (int) a[1], "note area");
            long align = a[2] == 8 ? 8 : 4;
            int p = 0;
            while (p + 12 <= n.limit()) {
                long namesz = Integer.toUnsignedLong(n.getInt(p));
                long descsz = Integer.toUnsignedLong(n.getInt(p + 4));
                int ntype = n.getInt(p + 8);
                long nameEnd = p + 12 + align(namesz, align);
                long descEnd = nameEnd + align(descsz, align);
                if (nameEnd + descsz > n.limit()) {
                    break; // malformed note area: stop looking here, do not fail the whole file
                }
                if (ntype == 3 && namesz == 4 && n.get(p + 12) == 'G' && n.get(p + 13) == 'N' && n.get(p + 14) == 'U'
                        && n.get(p + 15) == 0 && descsz > 0 && descsz <= 64) {
                    byte[] id = new byte[(int) descsz];
                    n.get((int) nameEnd, id);
                    gnu = gnu != null ? gnu : HexFormat.of().formatHex(id);
                }
                if (ntype == GO_BUILD_ID_NOTE && namesz == 4 && n.get(p + 12) == 'G' && n.get(p + 13) == 'o'
                        && n.get(p + 14) == 0 && descsz > 0 && descsz <= 256 && goBuildId.isEmpty()) {
                    byte[] id = new byte[(int) descsz];
                    n.get((int) nameEnd, id);
                    goBuildId = Optional.of(new String(id, java.nio.charset.StandardCharsets.US_ASCII));
                }
                if (descEnd <= p) {
                    break;
                }
                p = (int) Math.min(descEnd, n.limit());
            }
        }
        return Optional.ofNullable(gnu);
    }

    private static long align(long v, long a) {
        return (v + a - 1) & -a;
    }

    // ---------------- limits and errors ----------------

    private int sectionLength(long size, String what) throws ElfException {
        if (size < 0 || size > MAX_SECTION_BYTES) {
            throw error(what + " size " + Long.toUnsignedString(size) + " is out of range");
        }
        return (int) size;
    }

    private static String describe(SectionHeader s) {
        return "section '" + s.name() + "' (type " + s.type() + ")";
    }

    private ElfException error(String what) {
        return source.error(what);
    }
}
