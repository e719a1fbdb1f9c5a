package dev.loupe.unwinder.v8;

import dev.loupe.unwinder.ehframe.EhFrameException;
import dev.loupe.unwinder.ehframe.FdeRanges;
import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfHeaders;
import dev.loupe.unwinder.elf.ElfSource;
import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.elf.SymbolScan;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * V8's postmortem metadata as one binary (node, or a library embedding V8) exports it: every {@code v8dbg_*} symbol
 * of its .dynsym/.symtab with the value the file initializes it to (the name without the prefix, e.g.
 * {@code off_fp_function} = -16), and the range of the embedded builtins ({@code Builtins_*} functions: the
 * interpreter's entry trampoline and bytecode handlers among them), in file virtual addresses. A binary stripped of
 * those symbols (Debian 12's libnode.so.108 keeps only .dynsym) has them found as its executable segments' largest
 * range no {@code .eh_frame} FDE covers, of at least {@link #MIN_BUILTINS_GAP} bytes: the embedded builtins are
 * generated code without call frame information (in node 20 and 22, whose symbols give the range, that gap is the
 * builtins' range and its alignment padding: {@code V8MetadataTest}). A constant the
 * compiler left in .bss is zero, as in every process (the tables are constant initializers). Read once per file.
 *
 * @param values      by name without {@code v8dbg_}
 * @param builtinsLow first byte of the lowest {@code Builtins_} function, 0 when there is none
 * @param builtinsHigh end of the highest one
 */
public record V8Metadata(Map<String, Long> values, long builtinsLow, long builtinsHigh, List<LoadSegment> loadSegments) {
    static final String PREFIX = "v8dbg_";
    private static final String BUILTINS = "Builtins_";
    /** The least size of an uncovered range taken for the builtins (V8 10-12's are 1.4-2 MB). */
    static final long MIN_BUILTINS_GAP = 512 << 10;

    public V8Metadata {
        values = Map.copyOf(values);
        loadSegments = List.copyOf(loadSegments);
    }

    /**
     * Reads {@code file}'s metadata.
     *
     * @throws V8Layout.Unsupported the file is no ELF file this can read, or exports no {@code v8dbg_} symbol
     * @throws IOException it cannot be read now
     */
    public static V8Metadata read(Path file) throws IOException, V8Layout.Unsupported {
        try (ElfSource src = ElfSource.open(file)) {
            ElfHeaders h = ElfHeaders.read(src);
            Map<String, long[]> symbols = new HashMap<>();
            long[] builtins = {Long.MAX_VALUE, 0};
            SymbolScan.scan(src, h, (names, off, value, size) -> {
                if (names[off] == 'v' && SymbolScan.startsWith(names, off, PREFIX)) {
                    symbols.putIfAbsent(SymbolScan.name(names, off).substring(PREFIX.length()), new long[] {value, size});
                } else if (names[off] == 'B' && SymbolScan.startsWith(names, off, BUILTINS) && size > 0) {
                    builtins[0] = Math.min(builtins[0], value);
                    builtins[1] = Math.max(builtins[1], value + size);
                }
            });
            if (symbols.isEmpty()) {
                throw new V8Layout.Unsupported(file + " exports no " + PREFIX + " symbols");
            }
            List<LoadSegment> segments = h.loadSegments();
            Map<String, Long> values = new HashMap<>();
            for (Map.Entry<String, long[]> e : symbols.entrySet()) {
                long[] s = e.getValue();
                if (s[1] != 4 && s[1] != 8) {
                    continue; // not one of the int/long constants (a function, an array)
                }
                Long v = initialValue(src, segments, s[0], (int) s[1]);
                if (v != null) {
                    values.put(e.getKey(), v);
                }
            }
            if (builtins[1] == 0) {
                long[] gap = builtinsGap(file, segments);
                if (gap != null) {
                    builtins[0] = gap[0];
                    builtins[1] = gap[1];
                }
            }
            return new V8Metadata(values, builtins[1] == 0 ? 0 : builtins[0], builtins[1], segments);
        } catch (ElfException e) {
            throw new V8Layout.Unsupported(file + ": " + e.getMessage());
        }
    }

    /** The largest range of the executable segments no FDE covers, if at least {@link #MIN_BUILTINS_GAP}; else null. */
    static long[] builtinsGap(Path file, List<LoadSegment> segments) throws IOException {
        FdeRanges fdes;
        try {
            fdes = FdeRanges.read(file);
        } catch (EhFrameException e) {
            return null;
        }
        long[] best = null;
        for (LoadSegment s : segments) {
            if (s.executable()) {
                long[] gap = fdes.largestGap(s.vaddr(), s.vaddr() + s.memSize());
                if (gap != null && gap[1] - gap[0] >= MIN_BUILTINS_GAP && (best == null || gap[1] - gap[0] > best[1] - best[0])) {
                    best = gap;
                }
            }
        }
        return best;
    }

    /** The value the file gives the {@code size}-byte integer at {@code vaddr}, 0 in a segment's zeroed part, null outside. */
    private static Long initialValue(ElfSource src, List<LoadSegment> segments, long vaddr, int size) throws ElfException {
        for (LoadSegment s : segments) {
            if (vaddr >= s.vaddr() && vaddr + size <= s.vaddr() + s.memSize()) {
                if (vaddr + size > s.vaddr() + s.fileSize()) {
                    return vaddr >= s.vaddr() + s.fileSize() ? 0L : null;
                }
                ByteBuffer b = ByteBuffer.wrap(src.bytes(s.offset() + (vaddr - s.vaddr()), size, "v8dbg value"))
                        .order(ByteOrder.LITTLE_ENDIAN);
                return size == 4 ? (long) b.getInt(0) : b.getLong(0);
            }
        }
        return null;
    }

    /** The value of {@code name} (without the prefix), or null. */
    public Long get(String name) {
        return values.get(name);
    }

    /** The names (without prefix) that start with {@code prefix}, for messages. */
    List<String> names(String prefix) {
        List<String> out = new ArrayList<>();
        for (String n : values.keySet()) {
            if (n.startsWith(prefix)) {
                out.add(n);
            }
        }
        out.sort(null);
        return out;
    }
}
