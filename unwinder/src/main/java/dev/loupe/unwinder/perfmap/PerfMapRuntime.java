package dev.loupe.unwinder.perfmap;

import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.runtime.ManagedRuntime;
import dev.loupe.unwinder.runtime.RuntimeProcess;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * JIT code named by the runtime's own perf map ({@code /tmp/perf-PID.map}): Node with {@code --perf-basic-prof}, .NET
 * with {@code DOTNET_PerfMapEnabled=1}, Python 3.12+ with {@code -X perf}, LuaJIT, Erlang, and a JVM's
 * {@code Compiler.perfmap}. Any process with anonymous executable memory may have one; the file is looked for on the
 * first unnamed address there ({@link ProcessPerfMap}). All processes' maps together hold at most {@link #totalBytes}
 * of heap, each within its {@link PerfMapFile.Limits}.
 */
public final class PerfMapRuntime implements ManagedRuntime {
    /** All processes' perf maps together hold at most this much heap by default. */
    public static final long DEFAULT_TOTAL_BYTES = 32L << 20;

    private final Path procRoot;
    final PerfMapFile.Limits limits;
    private final long totalBytes;
    private final Set<ProcessPerfMap> open = ConcurrentHashMap.newKeySet();
    final AtomicLong entries = new AtomicLong();
    final AtomicLong linesSkipped = new AtomicLong();
    final AtomicLong bytesOverCap = new AtomicLong();

    PerfMapRuntime(Path procRoot, PerfMapFile.Limits limits, long totalBytes) {
        this.procRoot = procRoot;
        this.limits = limits;
        this.totalBytes = totalBytes;
    }

    /** Perf maps read through {@code procRoot} (normally /proc), with the default bounds. */
    public static PerfMapRuntime reading(Path procRoot) {
        return new PerfMapRuntime(procRoot, PerfMapFile.Limits.DEFAULT, DEFAULT_TOTAL_BYTES);
    }

    /** With other bounds (tests): entries and name bytes a process, heap of all processes. */
    public static PerfMapRuntime reading(Path procRoot, int maxEntries, int maxNameBytes, long totalBytes) {
        return new PerfMapRuntime(procRoot, new PerfMapFile.Limits(maxEntries, maxNameBytes), totalBytes);
    }

    @Override
    public String name() {
        return "perf-map";
    }

    @Override
    public boolean detect(List<MapEntry> executable) {
        return ManagedRuntime.anyMapping(executable, MapEntry::anonymousCode);
    }

    @Override
    public Optional<RuntimeProcess> open(int pid, String exe) {
        ProcessPerfMap m = new ProcessPerfMap(pid, exe, procRoot, this);
        open.add(m);
        return Optional.of(m);
    }

    /** The heap {@code map} may hold: what the other processes' maps leave of the total. */
    long allowance(ProcessPerfMap map) {
        long others = 0;
        for (ProcessPerfMap m : open) {
            if (m != map) {
                others += m.heapBytes();
            }
        }
        return totalBytes - others;
    }

    void closed(ProcessPerfMap map) {
        open.remove(map);
    }

    /** Heap held by every open process's map. */
    public long heapBytes() {
        long sum = 0;
        for (ProcessPerfMap m : open) {
            sum += m.heapBytes();
        }
        return sum;
    }

    /** {@code entries}: table entries read; {@code lines_skipped}: malformed lines; {@code bytes_over_cap}: left unread. */
    @Override
    public Map<String, Long> counters() {
        return Map.of("entries", entries.get(), "lines_skipped", linesSkipped.get(), "bytes_over_cap", bytesOverCap.get());
    }
}
