package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.ehframe.EhFrameException.Problem;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfHeaders;
import dev.loupe.unwinder.elf.ElfSource;
import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.elf.SectionCompression;
import dev.loupe.unwinder.elf.SectionHeader;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.DataFormatException;

/**
 * The section headers (with their addresses and flags, which {@code ElfFile} does not expose) and the
 * executable PT_LOAD ranges of an ELF64 little-endian x86-64 file, as {@link ElfHeaders} reads them, and
 * section contents with SHF_COMPRESSED (zlib or zstd) and GNU {@code .zdebug_*} sections inflated. Every size is
 * checked against the file before anything is allocated; errors are {@link EhFrameException}s.
 */
public final class ElfSections {
    /** Section contents (after inflation) this reader will hold: eh_frame of the largest binaries is ~50 MB. */
    static final int MAX_CONTENT = 512 << 20;

    /** Where the bytes came from; closed after the headers are read (a file is re-opened by {@link #contents}). */
    private final ElfSource source;
    private final ElfHeaders headers;
    private final long[] execRanges; // {vaddr, end} pairs of executable PT_LOAD segments

    private ElfSections(ElfSource source) throws EhFrameException {
        this.source = source;
        try {
            this.headers = ElfHeaders.read(source);
        } catch (ElfException e) {
            throw new EhFrameException(Problem.BAD_ELF, e.getMessage());
        }
        List<long[]> exec = new ArrayList<>();
        for (LoadSegment l : headers.loadSegments()) {
            long vaddr = l.vaddr();
            long memsz = l.memSize();
            if (l.executable() && memsz > 0 && vaddr + memsz > vaddr) {
                exec.add(new long[] {vaddr, vaddr + memsz});
            }
        }
        execRanges = new long[exec.size() * 2];
        for (int i = 0; i < exec.size(); i++) {
            execRanges[2 * i] = exec.get(i)[0];
            execRanges[2 * i + 1] = exec.get(i)[1];
        }
    }

    /** Reads the headers of a file; contents are read on demand by {@link #contents}. */
    public static ElfSections read(Path path) throws EhFrameException, IOException {
        try (ElfSource src = ElfSource.open(path)) {
            return new ElfSections(src);
        }
    }

    /** An in-memory image (e.g. the vdso), from the buffer's position to its limit. */
    static ElfSections parse(String name, ByteBuffer image) throws EhFrameException {
        return new ElfSections(ElfSource.of(name, image));
    }

    public String name() {
        return source.name();
    }

    public List<SectionHeader> sections() {
        return headers.sections();
    }

    /** The PT_LOAD program headers, in file order. */
    public List<LoadSegment> loadSegments() {
        return headers.loadSegments();
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

    /** The first section with this name that has file contents, or null. */
    public SectionHeader find(String sectionName) {
        return headers.find(sectionName);
    }

    /** A section's contents, inflated if SHF_COMPRESSED or a GNU {@code .zdebug_*} section. */
    public byte[] contents(SectionHeader s) throws EhFrameException {
        if (s.size() < 0 || s.size() > MAX_CONTENT) {
            throw new EhFrameException(Problem.TOO_LARGE, name() + ": " + s.name() + " of " + Long.toUnsignedString(s.size()) + " bytes is too large");
        }
        byte[] raw;
        try (ElfSource src = source.reopen(s.name())) {
            raw = src.bytes(s.offset(), (int) s.size(), s.name());
        } catch (ElfException e) {
            throw new EhFrameException(Problem.BAD_ELF, e.getMessage());
        }
        if ((s.flags() & SectionHeader.SHF_COMPRESSED) != 0) {
            if (raw.length < 24) {
                throw new EhFrameException(Problem.TRUNCATED, name() + ": " + s.name() + ": compression header truncated");
            }
            int type = u32(raw, 0);
            long size = u64(raw, 8);
            if (!SectionCompression.known(type)) {
                throw new EhFrameException(Problem.BAD_COMPRESSION, name() + ": " + s.name() + ": " + SectionCompression.name(type));
            }
            return inflate(type, raw, 24, size, s.name());
        }
        if (s.name().startsWith(".zdebug_") && raw.length >= 12 && raw[0] == 'Z' && raw[1] == 'L' && raw[2] == 'I' && raw[3] == 'B') {
            long size = 0;
            for (int i = 4; i < 12; i++) {
                size = size << 8 | (raw[i] & 0xff); // big-endian
            }
            return inflate(SectionCompression.ELFCOMPRESS_ZLIB, raw, 12, size, s.name());
        }
        return raw;
    }

    private byte[] inflate(int type, byte[] raw, int from, long size, String what) throws EhFrameException {
        if (size < 0 || size > MAX_CONTENT) {
            throw new EhFrameException(Problem.TOO_LARGE, name() + ": " + what + " inflates to " + Long.toUnsignedString(size) + " bytes, too large");
        }
        try {
            byte[] out = SectionCompression.decompress(type, ByteBuffer.wrap(raw, from, raw.length - from), (int) size);
            if (out.length != size) {
                throw new EhFrameException(Problem.BAD_COMPRESSION, name() + ": " + what + " inflated to " + out.length + " bytes, header says " + size);
            }
            return out;
        } catch (DataFormatException e) {
            throw new EhFrameException(Problem.BAD_COMPRESSION, name() + ": " + what + ": " + e.getMessage());
        }
    }

    static int u32(byte[] b, int o) {
        return (b[o] & 0xff) | (b[o + 1] & 0xff) << 8 | (b[o + 2] & 0xff) << 16 | (b[o + 3] & 0xff) << 24;
    }

    static long u64(byte[] b, int o) {
        return (u32(b, o) & 0xffffffffL) | (long) u32(b, o + 4) << 32;
    }
}
