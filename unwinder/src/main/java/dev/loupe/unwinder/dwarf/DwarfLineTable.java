package dev.loupe.unwinder.dwarf;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfFile;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.DataFormatException;

/**
 * Native code's source lines from DWARF {@code .debug_line} (in the binary or its separate debug file). Opening maps
 * the sections' bytes (nothing is read); the first lookup inflates a compressed section (SHF_COMPRESSED, zlib; at
 * most {@link #MAX_INFLATED} bytes) and indexes its sequences ({@link DebugLine}); later lookups decode one unit.
 * A frame gets its symbol's name with the DWARF file and line (inlined subroutines from .debug_info are not read).
 */
public final class DwarfLineTable implements LineTable {
    private static final System.Logger LOG = System.getLogger(DwarfLineTable.class.getName());
    /** A compressed .debug_line inflating to more than this gives no lines (a 500 MB debug file's is far smaller). */
    static final long MAX_INFLATED = 64L << 20;
    private static final int ELFCOMPRESS_ZLIB = 1;
    private static final int CACHED_PCS = 1024;

    private final String name;
    private final ByteBuffer[] raw; // .debug_line, .debug_line_str, .debug_str as mapped (compressed or not)
    private final boolean[] compressed;
    private final SymbolTable symbols;
    private DebugLine lines; // built on the first lookup
    private String problem;
    private final Map<Long, List<SourceLine>> cache = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, List<SourceLine>> eldest) {
            return size() > CACHED_PCS;
        }
    };
    private final long weight;

    private DwarfLineTable(String name, ByteBuffer[] raw, boolean[] compressed, SymbolTable symbols) {
        this.name = name;
        this.raw = raw;
        this.compressed = compressed;
        this.symbols = symbols;
        long inflated = 0;
        for (int i = 0; i < raw.length; i++) {
            if (raw[i] != null && compressed[i] && raw[i].limit() >= 24) {
                inflated += Math.min(MAX_INFLATED, raw[i].order(ByteOrder.LITTLE_ENDIAN).getLong(8));
            }
        }
        // What it may hold: inflated sections, the sequence index (bounded by the section's size), the units and pcs cached.
        long lineBytes = raw[0] == null ? 0 : compressed[0] ? inflated : raw[0].limit();
        this.weight = inflated + lineBytes / 8 + (DebugLine.CACHED_UNITS + 1) * 32L * 1024 + CACHED_PCS * 200L;
    }

    /**
     * The DWARF line table of {@code dwarfFile} (the binary or its debug file; {@code dwarfElf} parsed from it) for a
     * binary whose functions {@code symbols} names; null if it has no {@code .debug_line}.
     */
    public static DwarfLineTable open(Path dwarfFile, ElfFile dwarfElf, SymbolTable symbols) throws DwarfException, IOException {
        SectionHeader line = dwarfElf.sectionHeader(".debug_line").orElse(null);
        if (line == null || !line.hasContents() || line.size() == 0) {
            return null;
        }
        String[] names = {".debug_line", ".debug_line_str", ".debug_str"};
        ByteBuffer[] raw = new ByteBuffer[3];
        boolean[] compressed = new boolean[3];
        try (FileChannel ch = FileChannel.open(dwarfFile, StandardOpenOption.READ)) {
            for (int i = 0; i < 3; i++) {
                SectionHeader s = dwarfElf.sectionHeader(names[i]).orElse(null);
                if (s == null || !s.hasContents() || s.size() == 0) {
                    continue;
                }
                if (s.offset() < 0 || s.size() > Integer.MAX_VALUE || s.offset() > ch.size() - s.size()) {
                    throw new DwarfException(dwarfFile + ": " + names[i] + " lies outside the file");
                }
                raw[i] = ch.map(FileChannel.MapMode.READ_ONLY, s.offset(), s.size());
                compressed[i] = (s.flags() & SectionHeader.SHF_COMPRESSED) != 0;
            }
        }
        return new DwarfLineTable(dwarfFile.toString(), raw, compressed, symbols);
    }

    /** A table over section bytes (uncompressed or SHF_COMPRESSED with their Elf64_Chdr): for tests and fuzzing. */
    public static DwarfLineTable of(String name, ByteBuffer debugLine, boolean compressed, SymbolTable symbols) {
        return new DwarfLineTable(name, new ByteBuffer[] {debugLine, null, null}, new boolean[] {compressed, false, false}, symbols);
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
            }
        } catch (DwarfException | RuntimeException e) {
            fail(e);
        }
        cache.put(vaddr, found);
        return found;
    }

    /** The index, built on first use; null once it failed (the failure is kept: never retried, said once). */
    public DebugLine table() throws DwarfException {
        if (lines == null && problem == null) {
            try {
                lines = DebugLine.parse(name, section(0, ".debug_line"), section(1, ".debug_line_str"), section(2, ".debug_str"));
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
        if (b.limit() < 24) {
            throw new DwarfException(name + ": " + what + ": compression header truncated");
        }
        b = b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int type = b.getInt(0);
        long size = b.getLong(8);
        if (type != ELFCOMPRESS_ZLIB) {
            throw new DwarfException(name + ": " + what + ": compression type " + type + " (only zlib is read)");
        }
        if (size < 0 || size > MAX_INFLATED) {
            throw new DwarfException(name + ": " + what + " inflates to " + Long.toUnsignedString(size) + " bytes, more than "
                    + MAX_INFLATED);
        }
        return ByteBuffer.wrap(inflate(b, (int) size, what));
    }

    private byte[] inflate(ByteBuffer b, int size, String what) throws DwarfException {
        try {
            byte[] out = dev.loupe.unwinder.elf.ZlibSection.inflate(b.slice(24, b.limit() - 24), size);
            if (out.length != size) {
                throw new DwarfException(name + ": " + what + " inflated to " + out.length + " bytes, its header says " + size);
            }
            return out;
        } catch (DataFormatException e) {
            throw new DwarfException(name + ": " + what + ": corrupt zlib stream: " + e.getMessage());
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
