package dev.loupe.unwinder.python;

import dev.loupe.unwinder.elf.LoadSegment;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Code objects a CPython binary holds in its own initialized data (3.11+ deep-frozen modules: importlib's bootstrap,
 * encodings, site...), one per binary and shared by every process that maps it. Such an object lies at the same file
 * address in each of those processes and its name, file, first line and line table are the file's, so a short-lived
 * interpreter, whose samples are mostly in that start-up code, costs no reads of its memory for them. Keyed by the
 * address less the process's load bias; bounded by {@link #BUDGET_BYTES} (least recently used dropped).
 *
 * <p>Thread-safe: every process of the binary shares it.
 */
final class StaticCodes {
    static final long BUDGET_BYTES = 2L << 20;
    static final StaticCodes NONE = new StaticCodes(List.of());

    private final long[] ranges; // [start, end) pairs of file-initialized writable data, by virtual address
    private final Map<Long, CodeObjects.Code> codes = new LinkedHashMap<>(256, 0.75f, true);
    private long bytes;

    StaticCodes(List<LoadSegment> segments) {
        List<long[]> rs = new ArrayList<>();
        for (LoadSegment s : segments) {
            if (!s.executable() && s.fileSize() > 0 && (s.flags() & PF_W) != 0) {
                rs.add(new long[] {s.vaddr(), s.vaddr() + s.fileSize()});
            }
        }
        ranges = new long[rs.size() * 2];
        for (int i = 0; i < rs.size(); i++) {
            ranges[2 * i] = rs.get(i)[0];
            ranges[2 * i + 1] = rs.get(i)[1];
        }
    }

    private static final int PF_W = 2;

    /** Whether {@code vaddr} (a process's address less its bias) lies in the binary's initialized data. */
    boolean holds(long vaddr) {
        for (int i = 0; i < ranges.length; i += 2) {
            if (vaddr >= ranges[i] && vaddr < ranges[i + 1]) {
                return true;
            }
        }
        return false;
    }

    synchronized CodeObjects.Code get(long vaddr) {
        return codes.get(vaddr);
    }

    synchronized void put(long vaddr, CodeObjects.Code code) {
        if (codes.put(vaddr, code) == null) {
            bytes += code.bytes();
        }
        var it = codes.entrySet().iterator();
        while (bytes > BUDGET_BYTES && it.hasNext()) {
            bytes -= it.next().getValue().bytes();
            it.remove();
        }
    }

    synchronized int size() {
        return codes.size();
    }
}
