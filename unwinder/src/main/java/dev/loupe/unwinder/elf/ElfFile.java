package dev.loupe.unwinder.elf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

/**
 * A bounds-checked reader of ELF64 little-endian x86-64 files: program headers, section headers,
 * function symbols ({@code .symtab} and {@code .dynsym} merged) and the GNU build id.
 *
 * <p>Files are read with positional reads, not mmap: a file truncated under us must give an error, not
 * SIGBUS. Symbol tables are streamed in chunks and their names gathered in name-offset order through a
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
    public static final long DEFAULT_MAX_SYMBOL_BYTES = 512L << 20;

    private static final int EM_X86_64 = 62;
    private static final int PT_LOAD = 1;
    private static final int PT_NOTE = 4;
    private static final int PF_X = 1;
    private static final int SHT_SYMTAB = 2;
    private static final int SHT_STRTAB = 3;
    private static final int SHT_NOTE = 7;
    private static final int SHT_NOBITS = 8;
    private static final int SHT_DYNSYM = 11;
    private static final int STT_FUNC = 2;
    private static final int STT_GNU_IFUNC = 10;
    private static final int STB_LOCAL = 0;
    private static final int STB_GLOBAL = 1;
    private static final int PN_XNUM = 0xffff;
    private static final int SHN_XINDEX = 0xffff;
    private static final int SYM_SIZE = 24;
    /** Symbol entries scanned, over all tables: far above any real binary (Chrome has ~1.5M). */
    private static final long MAX_SYMBOL_ENTRIES = 32_000_000;
    private static final int MAX_SECTIONS = 1 << 18;
    private static final int MAX_TABLE_BYTES = 64 << 20; // header tables and section names
    private static final int MAX_SECTION_BYTES = Integer.MAX_VALUE - 64;
    private static final int MAX_NOTE_AREA = 1 << 20;
    private static final int SYM_CHUNK = 2730 * SYM_SIZE; // 64 KiB of symbol entries per read
    private static final int NAME_WINDOW = 256 << 10;
    /** Longer names (rare C++ templates) are cut: they still name the function well enough. */
    private static final int MAX_NAME = 64 << 10;

    /** Random access to the file's bytes. */
    private interface Source {
        long size();

        /** Fills dst[off, off+len) from the file at offset, or throws. */
        void read(long offset, byte[] dst, int off, int len) throws IOException;
    }

    private record Section(String name, int type, long flags, long offset, long size, int link, long entsize, long align) {}

    private final String name;
    private final Path path; // null for in-memory images
    private final ByteBuffer image; // null for files
    private final long fileSize;
    private final int type;
    private final List<LoadSegment> loads;
    // The PT_LOAD segments as arrays: fileOffsetToVaddr is on the per-frame path.
    private final long[] loadOffset;
    private final long[] loadVaddr;
    private final long[] loadFileSize;
    private final boolean[] loadExec;
    private final List<long[]> noteSegments = new ArrayList<>(); // {offset, size, align} of PT_NOTE
    private final List<Section> sections = new ArrayList<>();
    private final SymbolTable symbols;
    private final Optional<String> buildId;

    private ElfFile(String name, Path path, ByteBuffer image, Source src, long maxSymbolBytes) throws ElfException {
        this.name = name;
        this.path = path;
        this.image = image;
        this.fileSize = src.size();
        ByteBuffer h = bytes(src, 0, 64, "ELF header");
        if (h.getInt(0) != 0x464c457f) { // "\x7fELF" read little-endian
            throw error("not an ELF file (no \\x7fELF magic)");
        }
        if (h.get(4) != 2) {
            throw error("not a 64-bit ELF (EI_CLASS " + h.get(4) + "); only ELF64 x86-64 is supported");
        }
        if (h.get(5) != 1) {
            throw error("not little-endian (EI_DATA " + h.get(5) + "); only ELF64 x86-64 is supported");
        }
        type = Short.toUnsignedInt(h.getShort(16));
        int machine = Short.toUnsignedInt(h.getShort(18));
        if (machine != EM_X86_64) {
            throw error("not x86-64 (e_machine " + machine + "); only ELF64 x86-64 is supported");
        }
        long phoff = h.getLong(32);
        long shoff = h.getLong(40);
        int phentsize = Short.toUnsignedInt(h.getShort(54));
        long phnum = Short.toUnsignedInt(h.getShort(56));
        int shentsize = Short.toUnsignedInt(h.getShort(58));
        long shnum = Short.toUnsignedInt(h.getShort(60));
        int shstrndx = Short.toUnsignedInt(h.getShort(62));

        ByteBuffer sh = null;
        if (shoff != 0) {
            if (shentsize < 64) {
                throw error("bad section header entry size " + shentsize + " (expected 64)");
            }
            if (shnum == 0 || shstrndx == SHN_XINDEX || phnum == PN_XNUM) {
                // Extended numbering: the real counts live in section header 0.
                ByteBuffer s0 = bytes(src, shoff, 64, "section header 0");
                if (shnum == 0) {
                    shnum = s0.getLong(32);
                }
                if (shstrndx == SHN_XINDEX) {
                    shstrndx = s0.getInt(40);
                }
                if (phnum == PN_XNUM) {
                    phnum = Integer.toUnsignedLong(s0.getInt(44));
                }
            }
            if (shnum < 0 || shnum > MAX_SECTIONS) {
                throw error("section count " + Long.toUnsignedString(shnum) + " is out of range");
            }
            if (shnum > 0) {
                sh = bytes(src, shoff, tableBytes(shnum, shentsize, "section header table"), "section header table");
            }
        }
        List<LoadSegment> ls = new ArrayList<>();
        if (phnum > 0) {
            if (phentsize < 56) {
                throw error("bad program header entry size " + phentsize + " (expected 56)");
            }
            if (phnum > 65536) {
                throw error("program header count " + phnum + " is out of range");
            }
            ByteBuffer ph = bytes(src, phoff, tableBytes(phnum, phentsize, "program header table"), "program header table");
            for (int i = 0; i < phnum; i++) {
                int o = i * phentsize;
                int ptype = ph.getInt(o);
                int flags = ph.getInt(o + 4);
                long off = ph.getLong(o + 8);
                long vaddr = ph.getLong(o + 16);
                long filesz = ph.getLong(o + 32);
                long memsz = ph.getLong(o + 40);
                long align = ph.getLong(o + 48);
                if (ptype == PT_LOAD) {
                    ls.add(new LoadSegment(off, vaddr, filesz, memsz, flags));
                } else if (ptype == PT_NOTE) {
                    noteSegments.add(new long[] {off, filesz, align});
                }
            }
        }
        loads = List.copyOf(ls);
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
        if (sh != null) {
            int n = (int) shnum;
            ByteBuffer names = null;
            if (shstrndx != 0) { // SHN_UNDEF: sections have no names
                if (Integer.toUnsignedLong(shstrndx) >= shnum) {
                    throw error("section name table index " + Integer.toUnsignedString(shstrndx) + " beyond " + n + " sections");
                }
                int o = shstrndx * shentsize;
                long strOff = sh.getLong(o + 24);
                long strSize = sh.getLong(o + 32);
                if (strSize < 0 || strSize > MAX_TABLE_BYTES) {
                    throw error("section name table size " + Long.toUnsignedString(strSize) + " is out of range");
                }
                names = bytes(src, strOff, (int) strSize, "section name table");
            }
            for (int i = 0; i < n; i++) {
                int o = i * shentsize;
                String sname = names == null ? "" : cString(names, sh.getInt(o), "section name table");
                sections.add(new Section(sname, sh.getInt(o + 4), sh.getLong(o + 8), sh.getLong(o + 24), sh.getLong(o + 32),
                        sh.getInt(o + 40), sh.getLong(o + 56), sh.getLong(o + 48)));
            }
        }
        // The budget also keeps the builder's name array far below its 2 GiB limit.
        symbols = readSymbols(src, Math.min(maxSymbolBytes, 1L << 30));
        buildId = readBuildId(src);
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
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            return new ElfFile(path.toString(), path, null, channelSource(ch, ch.size()), maxSymbolBytes);
        }
    }

    /** Parses an in-memory image (e.g. the vdso), from the buffer's position to its limit. */
    public static ElfFile parse(String name, ByteBuffer image) throws ElfException {
        ByteBuffer img = image.slice();
        Source s = new Source() {
            @Override
            public long size() {
                return img.limit();
            }

            @Override
            public void read(long offset, byte[] dst, int off, int len) {
                img.get((int) offset, dst, off, len);
            }
        };
        return new ElfFile(name, null, img, s, DEFAULT_MAX_SYMBOL_BYTES);
    }

    private static Source channelSource(FileChannel ch, long size) {
        return new Source() {
            @Override
            public long size() {
                return size;
            }

            @Override
            public void read(long offset, byte[] dst, int off, int len) throws IOException {
                ByteBuffer b = ByteBuffer.wrap(dst, off, len);
                while (b.hasRemaining()) {
                    if (ch.read(b, offset + (b.position() - off)) < 0) {
                        throw new IOException("unexpected end of file at offset " + (offset + b.position() - off));
                    }
                }
            }
        };
    }

    /** The name given at open/parse (the path for files). */
    public String name() {
        return name;
    }

    /** ET_EXEC (non-PIE executable) or ET_DYN (PIE or shared library), or another e_type. */
    public int type() {
        return type;
    }

    public List<LoadSegment> loadSegments() {
        return loads;
    }

    /** Function symbols of {@code .symtab} and {@code .dynsym}, merged (empty if the file has neither). */
    public SymbolTable symbols() {
        return symbols;
    }

    /** The GNU build id as lower-case hex, from {@code .note.gnu.build-id} or a PT_NOTE segment. */
    public Optional<String> buildId() {
        return buildId;
    }

    /** Whether a section of this name with file contents exists (e.g. {@code .symtab}: not stripped). */
    public boolean hasSection(String sectionName) {
        for (Section s : sections) {
            if (s.name().equals(sectionName) && s.type() != SHT_NOBITS) {
                return true;
            }
        }
        return false;
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
        for (Section s : sections) {
            if (s.name().equals(sectionName) && s.type() != SHT_NOBITS) {
                if (image != null) {
                    checkRange(s.offset(), s.size(), sectionName);
                    return Optional.of(image.slice((int) s.offset(), (int) s.size()).order(ByteOrder.LITTLE_ENDIAN));
                }
                try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
                    if (ch.size() != fileSize) {
                        throw error("file changed size since it was parsed (" + fileSize + " -> " + ch.size() + ")");
                    }
                    return Optional.of(bytes(channelSource(ch, fileSize), s.offset(), sectionLength(s.size(), sectionName),
                            sectionName));
                } catch (IOException e) {
                    throw error("cannot re-open to read " + sectionName + ": " + e.getMessage());
                }
            }
        }
        return Optional.empty();
    }

    // ---------------- symbols ----------------

    private SymbolTable readSymbols(Source src, long maxSymbolBytes) throws ElfException {
        SymbolTable.Builder b = new SymbolTable.Builder();
        long entries = 0;
        for (int wanted : new int[] {SHT_SYMTAB, SHT_DYNSYM}) {
            for (Section s : sections) {
                if (s.type() != wanted || s.size() == 0) {
                    continue; // (a debug file's .dynsym is SHT_NOBITS: skipped here)
                }
                if (s.entsize() != SYM_SIZE) {
                    throw error(s.name() + " has entry size " + s.entsize() + ", expected " + SYM_SIZE);
                }
                if (s.link() <= 0 || s.link() >= sections.size()) {
                    throw error(s.name() + " links to section " + Integer.toUnsignedString(s.link()) + ", out of range");
                }
                Section strs = sections.get(s.link());
                if (strs.type() != SHT_STRTAB) {
                    throw error(s.name() + " links to " + describe(strs) + ", not a string table");
                }
                checkRange(s.offset(), s.size(), s.name());
                checkRange(strs.offset(), strs.size(), strs.name());
                long count = s.size() / SYM_SIZE;
                entries += count;
                if (entries > MAX_SYMBOL_ENTRIES) {
                    throw error("more than " + MAX_SYMBOL_ENTRIES + " symbol entries");
                }
                readSymbolTable(src, s, strs, count, b, maxSymbolBytes);
            }
        }
        return b.build();
    }

    /**
     * Pass 1 streams the entries and keeps function symbols; pass 2 reads their names in name-offset order
     * through a window over the string table.
     */
    private void readSymbolTable(Source src, Section s, Section strs, long count, SymbolTable.Builder b,
                                 long maxSymbolBytes) throws ElfException {
        long[] values = new long[64];
        long[] sizes = new long[64];
        long[] keys = new long[64]; // (name offset << 32) | function index: one primitive sort orders both
        byte[] ranks = new byte[64];
        int nf = 0;
        byte[] chunk = new byte[(int) Math.min(SYM_CHUNK, count * SYM_SIZE)];
        ByteBuffer cb = ByteBuffer.wrap(chunk).order(ByteOrder.LITTLE_ENDIAN);
        for (long first = 0; first < count; ) {
            int n = (int) Math.min(SYM_CHUNK / SYM_SIZE, count - first);
            read(src, s.offset() + first * SYM_SIZE, chunk, n * SYM_SIZE, s.name());
            for (int i = 0; i < n; i++) {
                int o = i * SYM_SIZE;
                int info = chunk[o + 4] & 0xff;
                int stype = info & 0xf;
                int shndx = Short.toUnsignedInt(cb.getShort(o + 6));
                long value = cb.getLong(o + 8);
                long nameOff = Integer.toUnsignedLong(cb.getInt(o));
                if ((stype != STT_FUNC && stype != STT_GNU_IFUNC) || shndx == 0 || value == 0 || nameOff == 0) {
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
                read(src, strs.offset() + off, window, winLen, strs.name());
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

    private Optional<String> readBuildId(Source src) throws ElfException {
        List<long[]> areas = new ArrayList<>(); // {offset, size, align}
        for (Section s : sections) { // the dedicated section first, then any note section, then PT_NOTE
            if (s.type() == SHT_NOTE && s.name().equals(".note.gnu.build-id")) {
                areas.add(new long[] {s.offset(), s.size(), s.align()});
            }
        }
        for (Section s : sections) {
            if (s.type() == SHT_NOTE && !s.name().equals(".note.gnu.build-id")) {
                areas.add(new long[] {s.offset(), s.size(), s.align()});
            }
        }
        areas.addAll(noteSegments);
        for (long[] a : areas) {
            if (a[1] <= 0 || a[1] > MAX_NOTE_AREA) {
                continue; // empty or implausible: not where a build id lives
            }
            ByteBuffer n = bytes(src, a[0], (int) a[1], "note area");
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
                    return Optional.of(HexFormat.of().formatHex(id));
                }
                if (descEnd <= p) {
                    break;
                }
                p = (int) Math.min(descEnd, n.limit());
            }
        }
        return Optional.empty();
    }

    private static long align(long v, long a) {
        return (v + a - 1) & -a;
    }

    // ---------------- bounds-checked access ----------------

    private int tableBytes(long count, int entsize, String what) throws ElfException {
        long p = count * entsize; // count <= 2^18 or 2^16, entsize < 2^16: no overflow
        if (p > MAX_TABLE_BYTES) {
            throw error(what + " of " + count + " x " + entsize + " bytes is too large");
        }
        return (int) p;
    }

    private int sectionLength(long size, String what) throws ElfException {
        if (size < 0 || size > MAX_SECTION_BYTES) {
            throw error(what + " size " + Long.toUnsignedString(size) + " is out of range");
        }
        return (int) size;
    }

    private void checkRange(long offset, long length, String what) throws ElfException {
        if (offset < 0 || length < 0 || offset > fileSize || fileSize - offset < length) {
            throw error(what + " beyond end of file (offset " + Long.toUnsignedString(offset) + ", length "
                    + Long.toUnsignedString(length) + ", file size " + fileSize + ")");
        }
    }

    private ByteBuffer bytes(Source src, long offset, int length, String what) throws ElfException {
        checkRange(offset, length, what); // before allocating: a bogus length must not cost memory
        byte[] b = new byte[length];
        read(src, offset, b, length, what);
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    private void read(Source src, long offset, byte[] dst, int length, String what) throws ElfException {
        checkRange(offset, length, what);
        try {
            src.read(offset, dst, 0, length);
        } catch (IOException | RuntimeException e) {
            throw error("cannot read " + what + " at offset " + offset + ": " + e.getMessage());
        }
    }

    private String cString(ByteBuffer b, int offset, String table) throws ElfException {
        if (offset < 0 || offset >= b.limit()) {
            if (offset == 0) {
                return "";
            }
            throw error("string offset " + Integer.toUnsignedString(offset) + " beyond " + table + " of " + b.limit() + " bytes");
        }
        int end = offset;
        while (end < b.limit() && b.get(end) != 0) {
            end++;
        }
        return new String(b.array(), offset, end - offset, java.nio.charset.StandardCharsets.UTF_8);
    }

    private static String describe(Section s) {
        return "section '" + s.name() + "' (type " + s.type() + ")";
    }

    private ElfException error(String what) {
        return new ElfException(name + ": " + what);
    }
}
