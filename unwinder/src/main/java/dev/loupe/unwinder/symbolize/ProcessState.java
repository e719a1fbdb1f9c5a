package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.ProcessRuntimes;
import dev.loupe.unwinder.runtime.RuntimeRegistry;

import java.time.Duration;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * What the symbolizer knows of one process: its executable mappings as last read, sorted by start, each
 * with its binary and MappingRef resolved on first use (the same MappingRef instance for every frame, so
 * consumers can cache by identity), and where it stands in the re-read cycle ({@link Phase}).
 *
 * <p>Threading: used by the symbolizing thread; {@link #accessedAtNanos} may be written by several.
 */
final class ProcessState {
    /**
     * Misses alone re-read maps rarely: frame-pointer chains through code without frame pointers yield
     * garbage addresses all the time (re-reading on each cost ~1.5% of a core). PID reuse is caught
     * exactly by the start time instead. Also the retry interval for unreadable processes.
     */
    static final long MISS_REREAD_NANOS = Duration.ofSeconds(2).toNanos();
    /**
     * Except once, this soon after a read: a process first read between fork and exec (same pid and start
     * time, the parent's mappings) must resolve within its first moments, not 2 s later; a short-lived
     * process would never resolve.
     */
    static final long QUICK_REREAD_NANOS = Duration.ofMillis(100).toNanos();
    /** Maps are re-read this often anyway (dlopen, exec). */
    static final long REFRESH_NANOS = Duration.ofSeconds(15).toNanos();

    /** Where a process stands between reads of its maps. */
    enum Phase {
        /** /proc could not be read: no mappings; tried again {@link #MISS_REREAD_NANOS} after the last try. */
        UNREADABLE,
        /** Read from scratch (first read, refresh): one early re-read on a miss is still available. */
        READ,
        /** Re-read on a miss already: further misses re-read at most every {@link #MISS_REREAD_NANOS}. */
        SETTLED
    }

    /** What a sample's lookup does with a cached state. */
    enum Lookup {
        /** Use the state as it is. */
        USE,
        /** Read /proc first. */
        READ,
        /** Resolve nothing now (read lately and unreadable, or another process). */
        NONE
    }

    /** Start time in clock ticks since boot (-1 if unreadable). */
    final long startTicks;
    private final MapEntry[] mappings;
    private final long[] starts;
    private final Binary[] binaries;
    private final MappingRef[] refs;
    private Phase phase;
    private long readAtNanos;
    private long lastMissReadNanos;
    /** When a re-read last found another start time than a sample's (0: never). */
    private long mismatchAtNanos;
    private boolean failureLogged;
    /** The runtimes this process runs, as of these mappings (null: not looked up yet). */
    private ProcessRuntimes runtimes;
    /** The mapping of each kind of tagged frame (one instance per process: profiles key mappings by identity). */
    private final Map<FrameType, MappingRef> taggedMappings = new EnumMap<>(FrameType.class);
    /** Last lookup (racy writes from several threads are fine: any recent time keeps it alive). */
    volatile long accessedAtNanos;

    private ProcessState(long startTicks, MapEntry[] mappings, Phase phase, long now) {
        this.startTicks = startTicks;
        this.mappings = mappings;
        this.starts = new long[mappings.length];
        for (int i = 0; i < mappings.length; i++) {
            starts[i] = mappings[i].start();
        }
        this.binaries = new Binary[mappings.length];
        this.refs = new MappingRef[mappings.length];
        this.phase = phase;
        this.readAtNanos = now;
        this.lastMissReadNanos = now;
    }

    /**
     * A process as read now. A refresh of the same process ({@code previous}, same start time) keeps the
     * binary and MappingRef of each unchanged mapping (consumers key mapping ids by MappingRef identity).
     * {@code settled}: read on a miss, so no early re-read follows it.
     */
    static ProcessState read(long startTicks, List<MapEntry> exec, long now, ProcessState previous, boolean settled) {
        MapEntry[] mappings = exec.toArray(new MapEntry[0]);
        Arrays.sort(mappings, (a, b) -> Long.compareUnsigned(a.start(), b.start()));
        ProcessState p = new ProcessState(startTicks, mappings, settled ? Phase.SETTLED : Phase.READ, now);
        if (previous != null && previous.readable() && previous.startTicks == startTicks) {
            p.taggedMappings.putAll(previous.taggedMappings);
            for (int i = 0; i < mappings.length; i++) {
                int j = previous.find(p.starts[i]);
                if (j >= 0 && previous.mappings[j].equals(mappings[i]) && previous.binaries[j] != null
                        && previous.binaries[j] != Binary.UNREADABLE) {
                    p.binaries[i] = previous.binaries[j];
                    p.refs[i] = previous.refs[j];
                }
            }
        }
        return p;
    }

    /** A process whose /proc could not be read now (the failure already logged). */
    static ProcessState unreadable(long now) {
        ProcessState p = new ProcessState(-1, new MapEntry[0], Phase.UNREADABLE, now);
        p.failureLogged = true;
        return p;
    }

    Phase phase() {
        return phase;
    }

    boolean readable() {
        return phase != Phase.UNREADABLE;
    }

    /** A sample of a process started at {@code startTicks} (-1: unknown) may be resolved with this state. */
    boolean isOf(long startTicks) {
        return startTicks < 0 || startTicks == this.startTicks;
    }

    /**
     * For a sample of the process started at {@code startTicks} (-1: unknown): use this state if it is
     * recent and of that process; read /proc if it is old, or of another process (pid reuse), unless a
     * read lately found that already or found /proc unreadable.
     */
    Lookup lookup(long now, long startTicks) {
        if (phase == Phase.UNREADABLE) {
            return now - readAtNanos < MISS_REREAD_NANOS ? Lookup.NONE : Lookup.READ; // do not hit /proc on every sample
        }
        if (isOf(startTicks)) {
            return now - readAtNanos < REFRESH_NANOS ? Lookup.USE : Lookup.READ;
        }
        // Re-read lately and still another process: the sample's process is gone.
        return mismatchAtNanos != 0 && now - mismatchAtNanos < MISS_REREAD_NANOS ? Lookup.NONE : Lookup.READ;
    }

    /**
     * An address outside every mapping (dlopen, exec, pid reuse): whether to re-read now. Once early after
     * a read from scratch, then at most every {@link #MISS_REREAD_NANOS}; a yes counts as that re-read.
     */
    boolean takeMissReread(long now) {
        boolean quick = phase == Phase.READ && now - readAtNanos >= QUICK_REREAD_NANOS;
        if (!quick && now - lastMissReadNanos < MISS_REREAD_NANOS) {
            return false;
        }
        lastMissReadNanos = now;
        phase = Phase.SETTLED;
        return true;
    }

    /** A read found another process than a sample's: samples of that process resolve nothing for a while. */
    void mismatched(long now) {
        mismatchAtNanos = now;
    }

    /** A refresh failed (the process exited): keep these mappings, so late samples still resolve, until the next. */
    void keptAfterFailedRefresh(long now) {
        readAtNanos = now;
    }

    /** Whether a failure to read this process is yet to be logged; marks it logged (one message per pid). */
    boolean firstFailure() {
        boolean first = !failureLogged;
        failureLogged = true;
        return first;
    }

    /** Index of the mapping containing addr, or -1 (unsigned: [vsyscall] sits at the top). */
    int find(long addr) {
        int lo = 0;
        int hi = starts.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(starts[mid], addr) <= 0) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return hi >= 0 && Long.compareUnsigned(addr, mappings[hi].end()) < 0 ? hi : -1;
    }

    /** The runtimes this process runs, from {@code registry} on first use for these mappings. */
    ProcessRuntimes runtimes(RuntimeRegistry registry, int pid) {
        if (runtimes == null) {
            runtimes = phase == Phase.UNREADABLE ? ProcessRuntimes.NONE : registry.of(pid, startTicks, Arrays.asList(mappings));
        }
        return runtimes;
    }

    /** The mapping of frames of tagged type {@code type} named {@code name} (made once per process). */
    MappingRef taggedMapping(FrameType type, String name) {
        MappingRef m = taggedMappings.get(type);
        if (m == null || !m.path().equals(name)) {
            m = new MappingRef(type.rangeStart(), type.rangeEnd(), 0, name, null, true);
            taggedMappings.put(type, m);
        }
        return m;
    }

    MapEntry mapping(int i) {
        return mappings[i];
    }

    /** The binary of mapping {@code i}, or null if not resolved yet. */
    Binary binary(int i) {
        return binaries[i];
    }

    MappingRef ref(int i) {
        return refs[i];
    }

    /** Mapping {@code i} resolved: its binary and the one MappingRef its frames share. */
    void resolved(int i, Binary binary, MappingRef ref) {
        binaries[i] = binary;
        refs[i] = ref;
    }
}
