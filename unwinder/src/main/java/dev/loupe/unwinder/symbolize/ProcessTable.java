package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.proc.ProcessRegistry;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The symbolizer's process states by pid, read through the {@link ProcessRegistry}, re-read as each
 * {@link ProcessState} says, and dropped when the registry reports the process exited, or after
 * {@link #PROCESS_IDLE_EXPIRY} without a lookup.
 *
 * <p>A plain map with our own idle sweep, not a Caffeine cache: the sampling thread looks a process up for
 * every sample, and Caffeine's per-read bookkeeping (ticker, read buffer, maintenance) was ~30 % of that
 * thread's CPU in the C1-compiled agent, for an expiry policy this simple.
 */
final class ProcessTable implements ProcessRegistry.Listener {
    /** The symbolizer's logger: one logger name for all its messages. */
    private static final System.Logger LOG = System.getLogger(ProcSymbolizer.class.getName());
    static final Duration PROCESS_IDLE_EXPIRY = Duration.ofSeconds(60);
    private static final long PROCESS_IDLE_NANOS = PROCESS_IDLE_EXPIRY.toNanos();
    private static final long SWEEP_NANOS = Duration.ofSeconds(10).toNanos();

    private final ProcessRegistry registry;
    private final LongSupplier nanoTime;
    private final ConcurrentHashMap<Integer, ProcessState> processes = new ConcurrentHashMap<>();
    private volatile long lastSweepNanos;
    private final AtomicLong mapsReads = new AtomicLong();
    private final AtomicLong mapsReadFailures = new AtomicLong();
    private final AtomicLong malformedMapsLines = new AtomicLong();
    private final AtomicLong pidReuses = new AtomicLong();

    /** {@code nanoTime}: monotonic, so refreshes and rate limits never follow a wall-clock step. */
    ProcessTable(ProcessRegistry registry, LongSupplier nanoTime) {
        this.registry = registry;
        this.nanoTime = nanoTime;
        this.lastSweepNanos = nanoTime.getAsLong();
    }

    /**
     * The state of {@code pid} for a sample of the process started at {@code startTicks} (-1: unknown),
     * read or re-read as due. Null rather than another process's mappings, or when /proc is unreadable.
     */
    ProcessState lookup(int pid, long startTicks) {
        long now = nanoTime.getAsLong();
        ProcessState p = cached(pid, now);
        if (p != null) {
            ProcessState.Lookup next = p.lookup(now, startTicks);
            if (next == ProcessState.Lookup.USE) {
                return p;
            }
            if (next == ProcessState.Lookup.NONE) {
                return null;
            }
        }
        ProcessState fresh = read(pid, startTicks, now, p, false);
        if (fresh != null) {
            if (p != null && p.readable() && fresh.startTicks != p.startTicks) {
                pidReuses.incrementAndGet();
                LOG.log(System.Logger.Level.DEBUG, () -> "pid " + pid + " now belongs to a new process");
            }
            put(pid, fresh, now);
            p = fresh;
        } else if (p != null && p.readable()) {
            p.keptAfterFailedRefresh(now);
        } else {
            put(pid, ProcessState.unreadable(now), now);
            return null;
        }
        if (!p.isOf(startTicks)) {
            p.mismatched(now);
            return null;
        }
        return p;
    }

    /** Whether a readable state of {@code pid} is cached (no I/O, no refresh). */
    boolean hasReadable(int pid) {
        ProcessState p = processes.get(pid);
        return p != null && p.readable();
    }

    /** An address outside every mapping of {@code p}: dlopen, exec, or a new process with a reused pid. */
    ProcessState rereadOnMiss(int pid, ProcessState p, long startTicks) {
        long now = nanoTime.getAsLong();
        if (!p.takeMissReread(now)) {
            return p;
        }
        ProcessState fresh = read(pid, startTicks, now, p, true); // one quick re-read per read from scratch, not a chain of them
        if (fresh == null) {
            return p;
        }
        put(pid, fresh, now);
        if (fresh.startTicks != p.startTicks) {
            pidReuses.incrementAndGet();
            LOG.log(System.Logger.Level.DEBUG, () -> "pid " + pid + " was reused by a new process");
            if (startTicks >= 0) {
                return p; // this sample belongs to the old process: never resolve it with the new one's maps
            }
        }
        return fresh;
    }

    /** {@code startTicks}: the sample's process start (-1: not known), which spares the registry one read of stat. */
    private ProcessState read(int pid, long startTicks, long now, ProcessState previous, boolean settled) {
        mapsReads.incrementAndGet();
        try {
            ProcessRegistry.Snapshot snap = registry.read(pid, startTicks); // consistent, shared
            malformedMapsLines.addAndGet(snap.malformedLines());
            return ProcessState.read(snap.startTicks(), snap.executable(), now, previous, settled);
        } catch (IOException | RuntimeException e) {
            mapsReadFailures.incrementAndGet();
            // Gone before this read, but another reader of the shared registry (the unwind tables) read it while it ran:
            // its view then names this process's frames (their files are found by device and inode, or in our root).
            ProcessRegistry.Snapshot last = previous != null && previous.readable() ? null : registry.cached(pid).orElse(null);
            if (last != null && (startTicks < 0 || last.startTicks() == startTicks)) {
                return ProcessState.read(last.startTicks(), last.executable(), now, previous, settled);
            }
            if (previous == null || previous.firstFailure()) {
                LOG.log(System.Logger.Level.DEBUG, () -> "cannot read /proc/" + pid + " (process gone or no permission): "
                        + e + "; its frames stay addresses");
            }
            return null;
        }
    }

    /** The state of {@code pid}, or null; a state idle for PROCESS_IDLE_EXPIRY is gone. Sweeps every 10 s. */
    private ProcessState cached(int pid, long now) {
        ProcessState p = processes.get(pid);
        if (p != null) {
            if (now - p.accessedAtNanos >= PROCESS_IDLE_NANOS) {
                processes.remove(pid, p);
                p = null;
            } else {
                p.accessedAtNanos = now;
            }
        }
        if (now - lastSweepNanos >= SWEEP_NANOS) {
            lastSweepNanos = now;
            processes.values().removeIf(s -> now - s.accessedAtNanos >= PROCESS_IDLE_NANOS);
        }
        return p;
    }

    private void put(int pid, ProcessState p, long now) {
        p.accessedAtNanos = now;
        processes.put(pid, p);
    }

    /**
     * The process exited: its state goes now rather than after {@link #PROCESS_IDLE_EXPIRY} (an unreadable entry for
     * the pid too; a newer process's state stays).
     */
    @Override
    public void exited(int pid, long startTicks) {
        processes.computeIfPresent(pid, (k, s) -> s.startTicks == startTicks || !s.readable() ? null : s);
    }

    /** Processes whose state is kept (unreadable ones included). */
    long size() {
        return processes.size();
    }

    long mapsReads() {
        return mapsReads.get();
    }

    long mapsReadFailures() {
        return mapsReadFailures.get();
    }

    long malformedMapsLines() {
        return malformedMapsLines.get();
    }

    long pidReuses() {
        return pidReuses.get();
    }

    void clear() {
        processes.clear();
    }
}
