package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.ehframe.EhFrameException;
import dev.loupe.unwinder.ehframe.ElfSections;
import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.elf.SectionHeader;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * One ELF file as the Go readers need it: section headers (with addresses; contents inflated when
 * compressed, via {@link ElfSections}), PT_LOAD segments, and bounded positional reads by file offset or
 * virtual address. The file is re-opened per read, not held open.
 */
final class BinaryImage {
    /** No single read this package makes is larger (a pclntab of the largest Go binaries is ~100 MB). */
    static final int MAX_READ = 512 << 20;

    private final Path path;
    private final ElfSections sections;
    private final List<LoadSegment> loads;
    private final long fileSize;

    private BinaryImage(Path path, ElfSections sections, List<LoadSegment> loads, long fileSize) {
        this.path = path;
        this.sections = sections;
        this.loads = loads;
        this.fileSize = fileSize;
    }

    static BinaryImage open(Path path) throws GoBinaryException, IOException {
        try {
            ElfSections s = ElfSections.read(path);
            long size;
            try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
                size = ch.size();
            }
            return new BinaryImage(path, s, s.loadSegments(), size);
        } catch (EhFrameException e) {
            throw new GoBinaryException(e.getMessage(), e);
        }
    }

    Path path() {
        return path;
    }

    List<LoadSegment> loads() {
        return loads;
    }

    /** The first section of this name with contents, or null. */
    SectionHeader section(String name) {
        return sections.find(name);
    }

    List<SectionHeader> sections() {
        return sections.sections();
    }

    /** A section's contents, inflated if compressed. */
    byte[] contents(SectionHeader s) throws GoBinaryException {
        try {
            return sections.contents(s);
        } catch (EhFrameException e) {
            throw new GoBinaryException(e.getMessage(), e);
        }
    }

    /** The file offset a virtual address is stored at (its PT_LOAD's file part), or -1. */
    long fileOffset(long vaddr) {
        return fileOffset(loads, vaddr);
    }

    static long fileOffset(List<LoadSegment> loads, long vaddr) {
        for (LoadSegment s : loads) {
            if (Long.compareUnsigned(vaddr, s.vaddr()) >= 0 && Long.compareUnsigned(vaddr - s.vaddr(), s.fileSize()) < 0) {
                return vaddr - s.vaddr() + s.offset();
            }
        }
        return -1;
    }

    /** {@code len} bytes at a file offset; the range must lie inside the file. */
    byte[] read(long offset, int len, String what) throws GoBinaryException {
        if (len < 0 || len > MAX_READ || offset < 0 || offset > fileSize || fileSize - offset < len) {
            throw new GoBinaryException(path + ": " + what + " (offset " + offset + ", " + len + " bytes) lies outside the file of "
                    + fileSize + " bytes");
        }
        byte[] b = new byte[len];
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            ByteBuffer bb = ByteBuffer.wrap(b);
            while (bb.hasRemaining()) {
                if (ch.read(bb, offset + bb.position()) < 0) {
                    throw new GoBinaryException(path + ": file ended while reading " + what);
                }
            }
        } catch (IOException e) {
            throw new GoBinaryException(path + ": cannot read " + what + ": " + e.getMessage(), e);
        }
        return b;
    }

    /** Whether {@code len} bytes at {@code vaddr} lie in one PT_LOAD's zero-filled part (past its file contents). */
    boolean inZeroFill(long vaddr, int len) {
        for (LoadSegment s : loads) {
            long off = vaddr - s.vaddr();
            if (off >= s.fileSize() && off >= 0 && off <= s.memSize() - len) {
                return true;
            }
        }
        return false;
    }

    /** {@code len} bytes at a virtual address, all inside one PT_LOAD's file part. */
    byte[] readVaddr(long vaddr, int len, String what) throws GoBinaryException {
        long off = fileOffset(vaddr);
        if (off < 0 || (len > 0 && fileOffset(vaddr + len - 1) != off + len - 1)) {
            throw new GoBinaryException(path + ": " + what + " at 0x" + Long.toHexString(vaddr) + " (" + len
                    + " bytes) is not inside a loaded segment's file contents");
        }
        return read(off, len, what);
    }
}
