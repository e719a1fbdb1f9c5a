package dev.loupe.unwinder.elf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

/**
 * A bounds-checked reader of ELF64 little-endian x86-64 files: program headers, section headers,
 * function symbols ({@code .symtab}, {@code .dynsym}) and the GNU build id. Reads only the parts it
 * needs (positional reads, no mmap: a file truncated under us must give an error, not SIGBUS).
 * Malformed input always ends in {@link ElfException}, never an unchecked exception.
 */
public final class ElfFile {
    public static final int ET_EXEC = 2;
    public static final int ET_DYN = 3;
    private static final int EM_X86_64 = 62;
    private static final int PT_LOAD = 1;
    private static final int PT_NOTE = 4;
    private static final int SHT_SYMTAB = 2;
    private static final int SHT_NOTE = 7;
    private static final int SHT_NOBITS = 8;
    private static final int SHT_DYNSYM = 11;
    private static final int STT_FUNC = 2;
    private static final int STT_GNU_IFUNC = 10;
    private static final int MAX_SYMBOLS = 8_000_000;
    private static final int MAX_SECTION_BYTES = 512 << 20;

    /** Random access to the file's bytes. */
    private interface Source {
        long size();

        ByteBuffer read(long offset, int length) throws IOException;
    }

    private record Section(String name, int type, long offset, long size, int link, long entsize) {}

    private final String name;
    private final Source src;
    private final int type;
    private final List<LoadSegment> loads = new ArrayList<>();
    private final List<long[]> notes = new ArrayList<>(); // {offset, size} of PT_NOTE segments
    private final List<Section> sections = new ArrayList<>();

    private ElfFile(String name, Source src) throws ElfException {
        this.name = name;
        this.src = src;
        ByteBuffer h = bytes(0, 64, "ELF header");
        if (h.getInt(0) != 0x464c457f) { // "\x7fELF" little-endian
            throw error("not an ELF file (no \\x7fELF magic)");
        }
        if (h.get(4) != 2) {
            throw error("not a 64-bit ELF (EI_CLASS " + h.get(4) + ")");
        }
        if (h.get(5) != 1) {
            throw error("not little-endian (EI_DATA " + h.get(5) + ")");
        }
        type = Short.toUnsignedInt(h.getShort(16));
        int machine = Short.toUnsignedInt(h.getShort(18));
        if (machine != EM_X86_64) {
            throw error("not x86-64 (e_machine " + machine + ")");
        }
        long phoff = h.getLong(32);
        long shoff = h.getLong(40);
        int phentsize = Short.toUnsignedInt(h.getShort(54));
        int phnum = Short.toUnsignedInt(h.getShort(56));
        int shentsize = Short.toUnsignedInt(h.getShort(58));
        int shnum = Short.toUnsignedInt(h.getShort(60));
        int shstrndx = Short.toUnsignedInt(h.getShort(62));
        if (phnum > 0) {
            if (phentsize < 56) {
                throw error("bad program header size " + phentsize);
            }
            ByteBuffer ph = bytes(phoff, checkedProduct(phnum, phentsize), "program header table");
            for (int i = 0; i < phnum; i++) {
                int o = i * phentsize;
                int ptype = ph.getInt(o);
                int flags = ph.getInt(o + 4);
                long off = ph.getLong(o + 8);
                long vaddr = ph.getLong(o + 16);
                long filesz = ph.getLong(o + 32);
                long memsz = ph.getLong(o + 40);
                if (ptype == PT_LOAD) {
                    loads.add(new LoadSegment(off, vaddr, filesz, memsz, flags));
                } else if (ptype == PT_NOTE) {
                    notes.add(new long[] {off, filesz});
                }
            }
        }
        if (shnum > 0 && shoff != 0) {
            if (shentsize < 64) {
                throw error("bad section header size " + shentsize);
            }
            ByteBuffer sh = bytes(shoff, checkedProduct(shnum, shentsize), "section header table");
            if (shstrndx >= shnum) {
                throw error("section name table index " + shstrndx + " beyond " + shnum + " sections");
            }
            long strOff = sh.getLong(shstrndx * shentsize + 24);
            long strSize = sh.getLong(shstrndx * shentsize + 32);
            ByteBuffer names = bytes(strOff, sectionLength(strSize, "section name table"), "section name table");
            for (int i = 0; i < shnum; i++) {
                int o = i * shentsize;
                String sname = cString(names, sh.getInt(o));
                sections.add(new Section(sname, sh.getInt(o + 4), sh.getLong(o + 24), sh.getLong(o + 32),
                        sh.getInt(o + 40), sh.getLong(o + 56)));
            }
        }
    }

    public static ElfFile open(Path path) throws ElfException, IOException {
        FileChannel ch = FileChannel.open(path, StandardOpenOption.READ);
        long size = ch.size();
        Source s = new Source() {
            @Override
            public long size() {
                return size;
            }

            @Override
            public ByteBuffer read(long offset, int length) throws IOException {
                ByteBuffer b = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
                while (b.hasRemaining()) {
                    if (ch.read(b, offset + b.position()) < 0) {
                        throw new IOException("unexpected end of file at " + (offset + b.position()));
                    }
                }
                return b.flip();
            }
        };
        try {
            // Everything the symbolizer needs is read eagerly, so the channel can close here.
            ElfFile f = new ElfFile(path.toString(), s);
            f.symbolsCache = f.readSymbols();
            f.buildIdCache = f.readBuildId();
            return f;
        } finally {
            ch.close();
        }
    }

    /** Parses an in-memory image (e.g. the vdso). */
    public static ElfFile parse(String name, ByteBuffer image) throws ElfException {
        ByteBuffer img = image.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        Source s = new Source() {
            @Override
            public long size() {
                return img.limit();
            }

            @Override
            public ByteBuffer read(long offset, int length) {
                return img.slice((int) offset, length).order(ByteOrder.LITTLE_ENDIAN);
            }
        };
        ElfFile f = new ElfFile(name, s);
        f.symbolsCache = f.readSymbols();
        f.buildIdCache = f.readBuildId();
        return f;
    }

    private SymbolTable symbolsCache;
    private Optional<String> buildIdCache;

    public String name() {
        return name;
    }

    /** ET_EXEC (non-PIE executable) or ET_DYN (PIE or shared library), or another e_type. */
    public int type() {
        return type;
    }

    public List<LoadSegment> loadSegments() {
        return List.copyOf(loads);
    }

    public SymbolTable symbols() {
        return symbolsCache;
    }

    public Optional<String> buildId() {
        return buildIdCache;
    }

    /** The virtual address a file offset is loaded at, via the PT_LOAD containing it; -1 if none. */
    public long fileOffsetToVaddr(long fileOffset) {
        for (LoadSegment l : loads) {
            if (fileOffset >= l.offset() && fileOffset - l.offset() < l.fileSize()) {
                return fileOffset - l.offset() + l.vaddr();
            }
        }
        return -1;
    }

    /** A section's bytes by name (e.g. .eh_frame, .gopclntab later). */
    public Optional<ByteBuffer> section(String sectionName) throws ElfException {
        for (Section s : sections) {
            if (s.name().equals(sectionName) && s.type() != SHT_NOBITS) {
                return Optional.of(bytes(s.offset(), sectionLength(s.size(), sectionName), sectionName));
            }
        }
        return Optional.empty();
    }

    private SymbolTable readSymbols() throws ElfException {
        SymbolTable.Builder b = new SymbolTable.Builder();
        for (int wanted : new int[] {SHT_SYMTAB, SHT_DYNSYM}) { // .symtab first: it has local names too
            for (Section s : sections) {
                if (s.type() != wanted || s.size() == 0) {
                    continue;
                }
                if (s.entsize() != 24) {
                    throw error(s.name() + " has entry size " + s.entsize() + ", expected 24");
                }
                if (s.link() <= 0 || s.link() >= sections.size()) {
                    throw error(s.name() + " links to section " + s.link() + ", out of range");
                }
                Section strs = sections.get(s.link());
                ByteBuffer strtab = bytes(strs.offset(), sectionLength(strs.size(), strs.name()), strs.name());
                ByteBuffer syms = bytes(s.offset(), sectionLength(s.size(), s.name()), s.name());
                long count = s.size() / 24;
                if (count + b.count() > MAX_SYMBOLS) {
                    throw error("more than " + MAX_SYMBOLS + " symbols");
                }
                for (int i = 0; i < count; i++) {
                    int o = i * 24;
                    int info = syms.get(o + 4) & 0xf;
                    int shndx = Short.toUnsignedInt(syms.getShort(o + 6));
                    long value = syms.getLong(o + 8);
                    if ((info != STT_FUNC && info != STT_GNU_IFUNC) || shndx == 0 || value == 0) {
                        continue;
                    }
                    String n = cString(strtab, syms.getInt(o));
                    if (n.isEmpty()) {
                        continue;
                    }
                    int at = n.indexOf('@'); // versioned names in .dynsym: memcpy@@GLIBC_2.14
                    b.add(value, syms.getLong(o + 16), at > 0 ? n.substring(0, at) : n);
                }
            }
        }
        return b.build();
    }

    private Optional<String> readBuildId() throws ElfException {
        List<long[]> areas = new ArrayList<>();
        for (Section s : sections) {
            if (s.type() == SHT_NOTE) {
                areas.add(new long[] {s.offset(), s.size()});
            }
        }
        areas.addAll(notes);
        for (long[] a : areas) {
            ByteBuffer n = bytes(a[0], sectionLength(a[1], "note"), "note");
            int p = 0;
            while (p + 12 <= n.limit()) {
                long namesz = Integer.toUnsignedLong(n.getInt(p));
                long descsz = Integer.toUnsignedLong(n.getInt(p + 4));
                int ntype = n.getInt(p + 8);
                long nameEnd = p + 12 + align4(namesz);
                long descEnd = nameEnd + align4(descsz);
                if (descEnd > n.limit() || nameEnd > n.limit()) {
                    break; // malformed note area: stop, do not fail the whole file
                }
                if (ntype == 3 && namesz == 4 && n.get(p + 12) == 'G' && n.get(p + 13) == 'N' && n.get(p + 14) == 'U'
                        && descsz > 0 && descsz <= 64) {
                    byte[] id = new byte[(int) descsz];
                    n.get((int) nameEnd, id);
                    return Optional.of(HexFormat.of().formatHex(id));
                }
                p = (int) descEnd;
            }
        }
        return Optional.empty();
    }

    private static long align4(long v) {
        return (v + 3) & ~3L;
    }

    private int sectionLength(long size, String what) throws ElfException {
        if (size < 0 || size > MAX_SECTION_BYTES) {
            throw error(what + " size " + size + " is out of range");
        }
        return (int) size;
    }

    private int checkedProduct(int a, int b) throws ElfException {
        long p = (long) a * b;
        if (p > MAX_SECTION_BYTES) {
            throw error("table of " + a + " x " + b + " bytes is too large");
        }
        return (int) p;
    }

    private ByteBuffer bytes(long offset, int length, String what) throws ElfException {
        long size = src.size();
        if (offset < 0 || length < 0 || offset > size || size - offset < length) {
            throw error(what + " beyond end of file (offset " + offset + ", length " + length + ", file size " + size + ")");
        }
        try {
            return src.read(offset, length);
        } catch (IOException | RuntimeException e) {
            throw error("cannot read " + what + ": " + e.getMessage());
        }
    }

    private String cString(ByteBuffer b, int offset) throws ElfException {
        if (offset < 0 || offset >= b.limit()) {
            if (offset == 0) {
                return "";
            }
            throw error("string offset " + Integer.toUnsignedString(offset) + " beyond string table of " + b.limit() + " bytes");
        }
        int end = offset;
        while (end < b.limit() && b.get(end) != 0) {
            end++;
        }
        byte[] s = new byte[end - offset];
        b.get(offset, s);
        return new String(s, StandardCharsets.UTF_8);
    }

    private ElfException error(String what) {
        return new ElfException(name + ": " + what);
    }
}
