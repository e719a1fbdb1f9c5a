package dev.loupe.agent.labels;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * {@link CgroupLabels} per process, keyed by (pid, start time) so a reused pid is a new process, at most
 * {@code capacity} processes (least recently asked dropped first). An entry is read again after
 * {@code maxAge}: a process can be moved to another cgroup after it was first seen (a runtime places its
 * child before exec, {@code systemd-run --scope} moves it). A process whose cgroup file cannot be read (it
 * exited) gets {@link CgroupLabels#NONE}, not cached.
 */
public final class CgroupLabelCache {
    /** Reads {@code /proc/PID/cgroup}. */
    @FunctionalInterface
    public interface Reader {
        String read(int pid) throws IOException;
    }

    private record Key(int pid, long startTime) {}

    private record Cached(CgroupLabels labels, long readAt) {}

    private final Reader reader;
    private final long maxAge;
    private final LongSupplier monotonicNanos;
    private final Map<Key, Cached> entries;
    // Labels by file content: most processes of a host share a few cgroups (a churn's thousands of processes one), so
    // each new process costs the read but not the parse.
    private final Map<String, CgroupLabels> parsed = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, CgroupLabels> eldest) {
            return size() > PARSED_CAPACITY;
        }
    };
    private static final int PARSED_CAPACITY = 64;

    public CgroupLabelCache(Reader reader, int capacity, Duration maxAge, LongSupplier monotonicNanos) {
        if (capacity < 1 || maxAge.isNegative() || maxAge.isZero()) {
            throw new IllegalArgumentException("capacity and max age must be positive: " + capacity + ", " + maxAge);
        }
        this.reader = Objects.requireNonNull(reader, "reader");
        this.maxAge = maxAge.toNanos();
        this.monotonicNanos = Objects.requireNonNull(monotonicNanos, "monotonicNanos");
        this.entries = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Key, Cached> eldest) {
                return size() > capacity;
            }
        };
    }

    /** Reading {@code PROC/PID/cgroup} files. */
    public static Reader procReader(Path procRoot) {
        return pid -> dev.loupe.unwinder.proc.ProcMaps.readText(procRoot.resolve(Integer.toString(pid)).resolve("cgroup"));
    }

    /** The labels of the process {@code pid} that started at {@code startTime} (any unit, as long as it is fixed). */
    public synchronized CgroupLabels labels(int pid, long startTime) {
        Key key = new Key(pid, startTime);
        long now = monotonicNanos.getAsLong();
        Cached e = entries.get(key);
        if (e != null && now - e.readAt() < maxAge) {
            return e.labels();
        }
        CgroupLabels labels;
        try {
            labels = parsed.computeIfAbsent(reader.read(pid), CgroupLabels::parse);
        } catch (IOException gone) {
            entries.remove(key);
            return CgroupLabels.NONE;
        }
        entries.put(key, new Cached(labels, now));
        return labels;
    }

    /** The process exited: its entry goes now rather than when it is the least recently asked. */
    public synchronized void forget(int pid, long startTime) {
        entries.remove(new Key(pid, startTime));
    }

    public synchronized int size() {
        return entries.size();
    }
}
