package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.ehframe.EhFrameException.Problem;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * The section headers (with their addresses and flags, which {@code ElfFile} does not expose) and the
 * executable PT_LOAD ranges of an ELF64 little-endian x86-64 file, and section contents with SHF_COMPRESSED
 * (zlib) and GNU {@code .zdebug_*} sections inflated. Every size is checked against the file before
 * anything is allocated; errors are {@link EhFrameException}s.
 */
public final class ElfSections {
    static final int SHT_NOBITS = 8;
    static final long SHF_COMPRESSED = 0x800;
    private static final int ELFCOMPRESS_ZLIB = 1;
    private static final int MAX_SECTIONS = 1 << 16;
    /** Section contents (after inflation) this reader will hold: eh_frame of the largest binaries is ~50 MB. */
    static final int MAX_CONTENT = 512 << 20;

    /** A section header: name, sh_type, sh_flags, sh_addr, sh_offset, sh_size. */
    public record Section(String name, int type, long flags, long addr, long offset, long size) {}

    /** Random access to the file's bytes. */
    private interface Source {
        long size();

        void read(long offset, byte[] dst, int len) throws IOException;
    }

    private final String name;
    private final List<Section> sections;
    private final long[] execRanges; // {vaddr, end} pairs of executable PT_LOAD segments
    private final Path path;
    private final ByteBuffer image;
    private final long fileSize;

    private ElfSections(String name, Path path, ByteBuffer image, Source src) throws EhFrameException {
        this.name = name;
        this.path = path;
        this.image = image;
        this.fileSize = src.size();
        byte[] h = read(src, 0, 64, "ELF header");
        if (u32(h, 0) != 0x464c457f || h[4] != 2 || h[5] != 1 || u16(h, 18) != 62) {
            throw new EhFrameException(Problem.BAD_ELF, name + ": not an ELF64 little-endian x86-64 file");
        }
        long phoff = u64(h, 32);
        long shoff = u64(h, 40);
        int phentsize = u16(h, 54);
        long phnum = u16(h, 56);
        int shentsize = u16(h, 58);
        long shnum = u16(h, 60);
        long shstrndx = u16(h, 62);
        if (shoff != 0 && (shnum == 0 || shstrndx == 0xffff || phnum == 0xffff)) {
            byte[] s0 = read(src, shoff, 64, "section header 0"); // extended numbering
            if (shnum == 0) {
                shnum = u64(s0, 32);
            }
            if (shstrndx == 0xffff) {
                shstrndx = u32(s0, 40) & 0xffffffffL;
            }
            if (phnum == 0xffff) {
                phnum = u32(s0, 44) & 0xffffffffL;
            }
        }
        List<long[]> exec = new ArrayList<>();
        if (phnum > 0 && phoff != 0) {
            if (phentsize < 56 || phnum > 65536) {
                throw new EhFrameException(Problem.BAD_ELF, name + ": bad program header table (" + phnum + " x " + phentsize + ")");
            }
            byte[] ph = read(src, phoff, (int) phnum * phentsize, "program headers");
            for (int i = 0; i < phnum; i++) {
                int o = i * phentsize;
                if (u32(ph, o) == 1 && (u32(ph, o + 4) & 1) != 0) { // PT_LOAD, PF_X
                    long vaddr = u64(ph, o + 16);
                    long memsz = u64(ph, o + 40);
                    if (memsz > 0 && vaddr + memsz > vaddr) {
                        exec.add(new long[] {vaddr, vaddr + memsz});
                    }
                }
            }
        }
        execRanges = new long[exec.size() * 2];
        for (int i = 0; i < exec.size(); i++) {
            execRanges[2 * i] = exec.get(i)[0];
            execRanges[2 * i + 1] = exec.get(i)[1];
        }
        List<Section> list = new ArrayList<>();
        if (shoff != 0 && shnum > 0) {
            if (shentsize < 64 || shnum < 0 || shnum > MAX_SECTIONS) {
                throw new EhFrameException(Problem.BAD_ELF, name + ": bad section header table (" + shnum + " x " + shentsize + ")");
            }
            byte[] sh = read(src, shoff, (int) shnum * shentsize, "section headers");
            byte[] names = new byte[0];
            if (shstrndx != 0) {
                if (shstrndx >= shnum) {
                    throw new EhFrameException(Problem.BAD_ELF, name + ": section name table index " + shstrndx + " out of range");
                }
                int o = (int) shstrndx * shentsize;
                long size = u64(sh, o + 32);
                if (size < 0 || size > (64 << 20)) {
                    throw new EhFrameException(Problem.BAD_ELF, name + ": section name table too large");
                }
                names = read(src, u64(sh, o + 24), (int) size, "section name table");
            }
            for (int i = 0; i < shnum; i++) {
                int o = i * shentsize;
                list.add(new Section(cString(names, u32(sh, o)), u32(sh, o + 4), u64(sh, o + 8), u64(sh, o + 16),
                        u64(sh, o + 24), u64(sh, o + 32)));
            }
        }
        sections = List.copyOf(list);
    }

    /** Reads the headers of a file; contents are read on demand by {@link #contents}. */
    public static ElfSections read(Path path) throws EhFrameException, IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            return new ElfSections(path.toString(), path, null, channel(ch));
        }
    }

    /** An in-memory image (e.g. the vdso), from the buffer's position to its limit. */
    static ElfSections parse(String name, ByteBuffer image) throws EhFrameException {
        ByteBuffer img = image.slice();
        return new ElfSections(name, null, img, memory(img));
    }

    public String name() {
        return name;
    }

    public List<Section> sections() {
        return sections;
    }

    /** {vaddr, end} pairs of the executable PT_LOAD segments. */
    long[] execRanges() {
        return execRanges.clone();
    }

    /** Whether [begin, end) lies inside one executable PT_LOAD segment. */
    boolean inExecutableSegment(long begin, long end) {
        for (int i = 0; i < execRanges.length; i += 2) {
            if (Long.compareUnsigned(begin, execRanges[i]) >= 0 && Long.compareUnsigned(end, execRanges[i + 1]) <= 0
                    && Long.compareUnsigned(begin, end) < 0) {
                return true;
            }
        }
        return false;
    }

    /** The first section with this name that has file contents. */
    public Section find(String sectionName) {
        for (Section s : sections) {
            if (s.name().equals(sectionName) && s.type() != SHT_NOBITS) {
                return s;
            }
        }
        return null;
    }

    /** A section's contents, inflated if SHF_COMPRESSED or a GNU {@code .zdebug_*} section. */
    public byte[] contents(Section s) throws EhFrameException {
        if (s.size() < 0 || s.size() > MAX_CONTENT) {
            throw new EhFrameException(Problem.TOO_LARGE, name + ": " + s.name() + " of " + Long.toUnsignedString(s.size()) + " bytes is too large");
        }
        byte[] raw;
        if (path != null) {
            try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
                if (ch.size() != fileSize) {
                    throw new EhFrameException(Problem.BAD_ELF, name + ": file changed size since it was opened");
                }
                raw = read(channel(ch), s.offset(), (int) s.size(), s.name());
            } catch (IOException e) {
                throw new EhFrameException(Problem.BAD_ELF, name + ": cannot read " + s.name() + ": " + e.getMessage());
            }
        } else {
            raw = read(memory(image), s.offset(), (int) s.size(), s.name());
        }
        if ((s.flags() & SHF_COMPRESSED) != 0) {
            if (raw.length < 24) {
                throw new EhFrameException(Problem.TRUNCATED, name + ": " + s.name() + ": compression header truncated");
            }
            int type = u32(raw, 0);
            long size = u64(raw, 8);
            if (type != ELFCOMPRESS_ZLIB) {
                throw new EhFrameException(Problem.BAD_COMPRESSION, name + ": " + s.name() + ": compression type " + type
                        + " is not supported (only zlib)");
            }
            return inflate(raw, 24, size, s.name());
        }
        if (s.name().startsWith(".zdebug_") && raw.length >= 12 && raw[0] == 'Z' && raw[1] == 'L' && raw[2] == 'I' && raw[3] == 'B') {
            long size = 0;
            for (int i = 4; i < 12; i++) {
                size = size << 8 | (raw[i] & 0xff); // big-endian
            }
            return inflate(raw, 12, size, s.name());
        }
        return raw;
    }

    private byte[] inflate(byte[] raw, int from, long size, String what) throws EhFrameException {
        if (size < 0 || size > MAX_CONTENT) {
            throw new EhFrameException(Problem.TOO_LARGE, name + ": " + what + " inflates to " + Long.toUnsignedString(size) + " bytes, too large");
        }
        // Grow with the data actually inflated: a header claiming 512 MiB must not cost 512 MiB up front.
        byte[] out = new byte[(int) Math.min(size, Math.max(4096, 4L * raw.length))];
        Inflater inf = new Inflater();
        try {
            inf.setInput(raw, from, raw.length - from);
            int n = 0;
            while (n < size) {
                if (n == out.length) {
                    out = java.util.Arrays.copyOf(out, (int) Math.min(size, 2L * out.length));
                }
                int k = inf.inflate(out, n, out.length - n);
                if (k == 0 && (inf.finished() || inf.needsInput() || inf.needsDictionary())) {
                    break;
                }
                n += k;
            }
            if (n != size) {
                throw new EhFrameException(Problem.BAD_COMPRESSION, name + ": " + what + " inflated to " + n + " bytes, header says " + size);
            }
            return out;
        } catch (DataFormatException e) {
            throw new EhFrameException(Problem.BAD_COMPRESSION, name + ": " + what + ": corrupt zlib stream: " + e.getMessage());
        } finally {
            inf.end();
        }
    }

    private byte[] read(Source src, long offset, int len, String what) throws EhFrameException {
        if (offset < 0 || len < 0 || offset > src.size() || src.size() - offset < len) {
            throw new EhFrameException(Problem.BAD_ELF, name + ": " + what + " beyond end of file (offset "
                    + Long.toUnsignedString(offset) + ", length " + len + ", file size " + src.size() + ")");
        }
        byte[] b = new byte[len];
        try {
            src.read(offset, b, len);
        } catch (IOException | RuntimeException e) {
            throw new EhFrameException(Problem.BAD_ELF, name + ": cannot read " + what + ": " + e.getMessage());
        }
        return b;
    }

    private static Source channel(FileChannel ch) throws IOException {
        long size = ch.size();
        return new Source() {
            @Override
            public long size() {
                return size;
            }

            @Override
            public void read(long offset, byte[] dst, int len) throws IOException {
                ByteBuffer b = ByteBuffer.wrap(dst, 0, len);
                while (b.hasRemaining()) {
                    if (ch.read(b, offset + b.position()) < 0) {
                        throw new IOException("unexpected end of file");
                    }
                }
            }
        };
    }

    private static Source memory(ByteBuffer img) {
        return new Source() {
            @Override
            public long size() {
                return img.limit();
            }

            @Override
            public void read(long offset, byte[] dst, int len) {
                img.get((int) offset, dst, 0, len);
            }
        };
    }

    private static String cString(byte[] b, int off) {
        if (off < 0 || off >= b.length) {
            return "";
        }
        int end = off;
        while (end < b.length && b[end] != 0) {
            end++;
        }
        return new String(b, off, end - off, StandardCharsets.ISO_8859_1);
    }

    static int u16(byte[] b, int o) {
        return (b[o] & 0xff) | (b[o + 1] & 0xff) << 8;
    }

    static int u32(byte[] b, int o) {
        return (b[o] & 0xff) | (b[o + 1] & 0xff) << 8 | (b[o + 2] & 0xff) << 16 | (b[o + 3] & 0xff) << 24;
    }

    static long u64(byte[] b, int o) {
        return (u32(b, o) & 0xffffffffL) | (long) u32(b, o + 4) << 32;
    }
}
