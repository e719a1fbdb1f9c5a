package dev.loupe.unwinder.elf;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The headers of an ELF64 little-endian x86-64 file or image: the ELF header's type, the program headers and
 * the section headers with their names. The one reader of them behind every view ({@link ElfFile} for
 * symbols and the build id, {@code ehframe.ElfSections} for section contents, {@link ElfLoadSegments} for
 * the load bias), with one set of limits; extended numbering (counts in section header 0) is followed.
 * Malformed headers give an {@link ElfException} naming the source and the problem, never an unchecked
 * exception.
 */
public final class ElfHeaders {
    public static final int PT_LOAD = 1;
    public static final int PT_NOTE = 4;

    private static final int EM_X86_64 = 62;
    private static final int PN_XNUM = 0xffff;
    private static final int SHN_XINDEX = 0xffff;
    private static final int MAX_SECTIONS = 1 << 18;
    private static final int MAX_PROGRAM_HEADERS = 1 << 16;
    /** Bound on a header table or the section name table. */
    private static final int MAX_TABLE_BYTES = 64 << 20;

    /** One program header (Elf64_Phdr). */
    public record ProgramHeader(int type, int flags, long offset, long vaddr, long fileSize, long memSize, long align) {}

    private final int type;
    private final List<ProgramHeader> programHeaders;
    private final List<LoadSegment> loadSegments;
    private final List<SectionHeader> sections;

    private ElfHeaders(int type, List<ProgramHeader> programHeaders, List<SectionHeader> sections) {
        this.type = type;
        this.programHeaders = List.copyOf(programHeaders);
        List<LoadSegment> loads = new ArrayList<>();
        for (ProgramHeader p : programHeaders) {
            if (p.type() == PT_LOAD) {
                loads.add(new LoadSegment(p.offset(), p.vaddr(), p.fileSize(), p.memSize(), p.flags()));
            }
        }
        this.loadSegments = List.copyOf(loads);
        this.sections = List.copyOf(sections);
    }

    public static ElfHeaders read(ElfSource src) throws ElfException {
        ByteBuffer h = src.view(0, 64, "ELF header");
        if (h.getInt(0) != 0x464c457f) { // "\x7fELF" read little-endian
            throw src.error("not an ELF file (no \\x7fELF magic)");
        }
        if (h.get(4) != 2) {
            throw src.error("not a 64-bit ELF (EI_CLASS " + h.get(4) + "); only ELF64 x86-64 is supported");
        }
        if (h.get(5) != 1) {
            throw src.error("not little-endian (EI_DATA " + h.get(5) + "); only ELF64 x86-64 is supported");
        }
        int type = Short.toUnsignedInt(h.getShort(16));
        int machine = Short.toUnsignedInt(h.getShort(18));
        if (machine != EM_X86_64) {
            throw src.error("not x86-64 (e_machine " + machine + "); only ELF64 x86-64 is supported");
        }
        long phoff = h.getLong(32);
        long shoff = h.getLong(40);
        int phentsize = Short.toUnsignedInt(h.getShort(54));
        long phnum = Short.toUnsignedInt(h.getShort(56));
        int shentsize = Short.toUnsignedInt(h.getShort(58));
        long shnum = Short.toUnsignedInt(h.getShort(60));
        long shstrndx = Short.toUnsignedInt(h.getShort(62));

        ByteBuffer sh = null;
        if (shoff != 0) {
            if (shentsize < 64) {
                throw src.error("bad section header entry size " + shentsize + " (expected 64)");
            }
            if (shnum == 0 || shstrndx == SHN_XINDEX || phnum == PN_XNUM) {
                // Extended numbering: the real counts live in section header 0.
                ByteBuffer s0 = src.view(shoff, 64, "section header 0");
                if (shnum == 0) {
                    shnum = s0.getLong(32);
                }
                if (shstrndx == SHN_XINDEX) {
                    shstrndx = Integer.toUnsignedLong(s0.getInt(40));
                }
                if (phnum == PN_XNUM) {
                    phnum = Integer.toUnsignedLong(s0.getInt(44));
                }
            }
            if (shnum < 0 || shnum > MAX_SECTIONS) {
                throw src.error("section count " + Long.toUnsignedString(shnum) + " is out of range");
            }
            if (shnum > 0) {
                sh = src.view(shoff, tableBytes(src, shnum, shentsize, "section header table"), "section header table");
            }
        }
        List<ProgramHeader> phs = new ArrayList<>();
        if (phnum > 0) {
            if (phentsize < 56) {
                throw src.error("bad program header entry size " + phentsize + " (expected 56)");
            }
            if (phnum > MAX_PROGRAM_HEADERS) {
                throw src.error("program header count " + phnum + " is out of range");
            }
            if (phoff == 0) {
                throw src.error(phnum + " program headers at offset 0, over the ELF header");
            }
            ByteBuffer ph = src.view(phoff, tableBytes(src, phnum, phentsize, "program header table"), "program header table");
            for (int i = 0; i < phnum; i++) {
                int o = i * phentsize;
                phs.add(new ProgramHeader(ph.getInt(o), ph.getInt(o + 4), ph.getLong(o + 8), ph.getLong(o + 16),
                        ph.getLong(o + 32), ph.getLong(o + 40), ph.getLong(o + 48)));
            }
        }
        List<SectionHeader> sections = new ArrayList<>();
        if (sh != null) {
            int n = (int) shnum;
            ByteBuffer names = null;
            if (shstrndx != 0) { // SHN_UNDEF: sections have no names
                if (shstrndx >= shnum) {
                    throw src.error("section name table index " + shstrndx + " beyond " + n + " sections");
                }
                int o = (int) shstrndx * shentsize;
                long strOff = sh.getLong(o + 24);
                long strSize = sh.getLong(o + 32);
                if (strSize < 0 || strSize > MAX_TABLE_BYTES) {
                    throw src.error("section name table size " + Long.toUnsignedString(strSize) + " is out of range");
                }
                names = ByteBuffer.wrap(src.bytes(strOff, (int) strSize, "section name table"));
            }
            for (int i = 0; i < n; i++) {
                int o = i * shentsize;
                String name = names == null ? "" : cString(src, names, sh.getInt(o));
                sections.add(new SectionHeader(name, sh.getInt(o + 4), sh.getLong(o + 8), sh.getLong(o + 16), sh.getLong(o + 24),
                        sh.getLong(o + 32), sh.getInt(o + 40), sh.getLong(o + 56), sh.getLong(o + 48)));
            }
        }
        return new ElfHeaders(type, phs, sections);
    }

    /** e_type: ET_EXEC, ET_DYN, ... */
    public int type() {
        return type;
    }

    /** Every program header, in file order. */
    public List<ProgramHeader> programHeaders() {
        return programHeaders;
    }

    /** The PT_LOAD program headers, in file order. */
    public List<LoadSegment> loadSegments() {
        return loadSegments;
    }

    /** Every section header, in index order (index 0 included). */
    public List<SectionHeader> sections() {
        return sections;
    }

    /** The first section of this name with contents in the file, or null. */
    public SectionHeader find(String name) {
        for (SectionHeader s : sections) {
            if (s.name().equals(name) && s.hasContents()) {
                return s;
            }
        }
        return null;
    }

    private static int tableBytes(ElfSource src, long count, int entsize, String what) throws ElfException {
        long p = count * entsize; // count <= 2^18, entsize < 2^16: no overflow
        if (p > MAX_TABLE_BYTES) {
            throw src.error(what + " of " + count + " x " + entsize + " bytes is too large");
        }
        return (int) p;
    }

    private static String cString(ElfSource src, ByteBuffer b, int offset) throws ElfException {
        if (offset < 0 || offset >= b.limit()) {
            if (offset == 0) {
                return "";
            }
            throw src.error("string offset " + Integer.toUnsignedString(offset) + " beyond section name table of "
                    + b.limit() + " bytes");
        }
        int end = offset;
        while (end < b.limit() && b.get(end) != 0) {
            end++;
        }
        return new String(b.array(), offset, end - offset, StandardCharsets.UTF_8);
    }
}
