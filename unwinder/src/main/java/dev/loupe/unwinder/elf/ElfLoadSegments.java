package dev.loupe.unwinder.elf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;

/**
 * Only the PT_LOAD program headers of an ELF64 x86-64 file or image ({@link ElfHeaders}): what it takes to
 * turn a mapping's file offset into the file's virtual addresses (the load bias), without parsing symbols.
 */
public final class ElfLoadSegments {
    private ElfLoadSegments() {}

    /** IOException: the file cannot be opened; ElfException: its headers are malformed. */
    public static List<LoadSegment> read(Path file) throws IOException, ElfException {
        try (ElfSource src = ElfSource.open(file)) {
            return ElfHeaders.read(src).loadSegments();
        }
    }

    /** From an in-memory image such as the vdso, from the buffer's position to its limit. */
    public static List<LoadSegment> parse(String name, ByteBuffer image) throws ElfException {
        return ElfHeaders.read(ElfSource.of(name, image)).loadSegments();
    }

    /**
     * The load bias of a mapping of this file: runtime address minus file vaddr, from the segment holding
     * the mapping's file offset (executable segments first). Throws if no segment holds it.
     */
    public static long bias(List<LoadSegment> segments, long mappingStart, long mappingFileOffset) throws ElfException {
        for (int pass = 0; pass < 2; pass++) {
            for (LoadSegment s : segments) {
                boolean exec = (s.flags() & 1) != 0;
                if (exec == (pass == 0) && mappingFileOffset >= s.offset() && mappingFileOffset - s.offset() < Math.max(1, s.fileSize())) {
                    return mappingStart - (s.vaddr() + (mappingFileOffset - s.offset()));
                }
            }
        }
        throw new ElfException("no PT_LOAD holds file offset 0x" + Long.toHexString(mappingFileOffset));
    }
}
