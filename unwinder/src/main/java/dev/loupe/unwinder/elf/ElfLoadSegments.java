package dev.loupe.unwinder.elf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Only the PT_LOAD program headers of an ELF64 x86-64 file or image: what it takes to turn a mapping's
 * file offset into the file's virtual addresses (the load bias), without parsing symbols.
 */
public final class ElfLoadSegments {
    private static final int PT_LOAD = 1;

    private ElfLoadSegments() {}

    public static List<LoadSegment> read(Path file) throws IOException, ElfException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer h = read(ch, 0, 64);
            check(file.toString(), h);
            long phoff = h.getLong(32);
            int phentsize = Short.toUnsignedInt(h.getShort(54));
            int phnum = Short.toUnsignedInt(h.getShort(56));
            if (phnum == 0xffff || phentsize < 56 || phoff <= 0 || phoff + (long) phnum * phentsize > ch.size()) {
                throw new ElfException(file + ": bad program header table");
            }
            return segments(read(ch, phoff, phnum * phentsize), phnum, phentsize);
        }
    }

    /** From an in-memory image such as the vdso. */
    public static List<LoadSegment> parse(String name, ByteBuffer image) throws ElfException {
        ByteBuffer b = image.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (b.remaining() < 64) {
            throw new ElfException(name + ": too short for an ELF header");
        }
        ByteBuffer h = b.slice(b.position(), 64).order(ByteOrder.LITTLE_ENDIAN);
        check(name, h);
        long phoff = h.getLong(32);
        int phentsize = Short.toUnsignedInt(h.getShort(54));
        int phnum = Short.toUnsignedInt(h.getShort(56));
        if (phentsize < 56 || phoff <= 0 || phoff + (long) phnum * phentsize > b.remaining()) {
            throw new ElfException(name + ": bad program header table");
        }
        return segments(b.slice(b.position() + (int) phoff, phnum * phentsize).order(ByteOrder.LITTLE_ENDIAN), phnum, phentsize);
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

    private static void check(String name, ByteBuffer h) throws ElfException {
        if (h.getInt(0) != 0x464c457f || h.get(4) != 2 || h.get(5) != 1 || Short.toUnsignedInt(h.getShort(18)) != 62) {
            throw new ElfException(name + ": not an ELF64 little-endian x86-64 file");
        }
    }

    private static List<LoadSegment> segments(ByteBuffer ph, int phnum, int phentsize) {
        List<LoadSegment> out = new ArrayList<>();
        for (int i = 0; i < phnum; i++) {
            int o = i * phentsize;
            if (ph.getInt(o) == PT_LOAD) {
                out.add(new LoadSegment(ph.getLong(o + 8), ph.getLong(o + 16), ph.getLong(o + 32), ph.getLong(o + 40), ph.getInt(o + 4)));
            }
        }
        return out;
    }

    private static ByteBuffer read(FileChannel ch, long offset, int length) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
        while (b.hasRemaining()) {
            if (ch.read(b, offset + b.position()) < 0) {
                throw new IOException("unexpected end of file at " + (offset + b.position()));
            }
        }
        return b.flip();
    }
}
