package dev.loupe.agent.unwind;

import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcessRegistry;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.IntPredicate;
import java.util.function.LongSupplier;

/**
 * Which processes are registered for table unwinding, which wait to be, and which exited. A process is
 * asked for by its samples ({@link #observe}: when unregistered, registered for an earlier process with
 * its pid, or stale after an eviction) and by the process registry (a first read, changed mappings); the
 * uploader's thread takes them in turn ({@link #next}). Exits come from the registry: the kernel's exit
 * events, and its scans of /proc.
 *
 * <p>Threads: {@link #observe} on the sampling thread (a hash lookup), the listener methods on the
 * registry's readers, everything else on the uploader's thread.
 */
final class ProcessTracker implements ProcessRegistry.Listener {
    private static final long TOUCH_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long RETRY_NANOS = TimeUnit.SECONDS.toNanos(2);
    private static final int MAX_FAILED = 65536;

    /** A process that exited: the pid and its start (clock ticks), which say exactly which process it was. */
    record Exit(int pid, long startTicks) {}

    /** A registered process. Read on the sampling thread: the fields are final but stale and lastSeen (volatile). */
    static final class Registration {
        final long startTicks;
        final int first;
        final int count;
        final List<TableEntry> tables; // once per mapping that names it
        final List<MapEntry> mappings; // the registry's snapshot it was built from
        volatile boolean stale;
        volatile long lastSeen;

        Registration(long startTicks, int first, int count, List<TableEntry> tables, long now, List<MapEntry> mappings) {
            this.startTicks = startTicks;
            this.first = first;
            this.count = count;
            this.tables = tables;
            this.mappings = mappings;
            this.lastSeen = now;
        }

        /** Registered from exactly this snapshot of the process, and still valid. */
        boolean current(ProcessRegistry.Snapshot snap) {
            return startTicks == snap.startTicks() && !stale && mappings == snap.executable();
        }
    }

    private final IntPredicate wanted; // the --pid filter: only these processes
    private final long agentStartTicks;
    private final LongSupplier nanoTime;
    private final ConcurrentHashMap<Integer, Registration> registered = new ConcurrentHashMap<>();
    /** Queued pids, with the start a sample named (-1: asked for without one). */
    private final ConcurrentHashMap<Integer, Long> pending = new ConcurrentHashMap<>();
    /** Queued pids asked to be registered, not only to have their files' tables loaded. */
    private final Set<Integer> registrationWanted = ConcurrentHashMap.newKeySet();
    /** Taken requests that asked for registration (uploader thread). */
    private final Set<Integer> takenRegistrations = new java.util.HashSet<>();
    /** Processes whose files were loaded without a registration: pid to {start ticks, when}. */
    private final ConcurrentHashMap<Integer, long[]> learned = new ConcurrentHashMap<>();
    /** The start the last taken request of each pid named (uploader thread). */
    private final Map<Integer, Long> takenStarts = new HashMap<>();
    private final LinkedBlockingQueue<Integer> queue = new LinkedBlockingQueue<>();
    private final ConcurrentLinkedQueue<Exit> exits = new ConcurrentLinkedQueue<>();
    private final Map<Integer, Long> failedAt = new HashMap<>();
    /** The last exits released (pid to start), so a registration queued before its process's exit is not made. */
    private final Map<Integer, Long> lastExits = new java.util.LinkedHashMap<>(256, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Integer, Long> eldest) {
            return size() > 4096;
        }
    };

    ProcessTracker(IntPredicate wanted, LongSupplier nanoTime) {
        this(wanted, nanoTime, Long.MAX_VALUE);
    }

    /** {@code agentStartTicks}: when the agent started (/proc/self/stat's clock ticks; MAX_VALUE: unknown). */
    ProcessTracker(IntPredicate wanted, LongSupplier nanoTime, long agentStartTicks) {
        this.wanted = wanted;
        this.nanoTime = nanoTime;
        this.agentStartTicks = agentStartTicks;
    }

    // A process that started before the agent is one the kernel does not follow: whoever reads it first (the start-up
    // scan, the symbolizer), its files' tables follow at once. A later one's samples say what the kernel lacks for it
    // (files without tables, a registration), and a read says nothing of that: queueing each of a churn's processes the
    // symbolizer read cost a stat per mapping and loaded nothing.
    @Override
    public void appeared(ProcessRegistry.Snapshot p) {
        if (p.startTicks() <= agentStartTicks) {
            request(p.pid(), p.startTicks(), false); // its files; the uploader registers it if a runtime needs that
        }
    }

    @Override
    public void mappingsChanged(ProcessRegistry.Snapshot p) {
        request(p.pid(), p.startTicks(), registered.containsKey(p.pid()));
    }

    @Override
    public void exited(int pid, long startTicks) {
        exits.offer(new Exit(pid, startTicks));
    }

    /**
     * A sample of {@code pid} arrived (sampling thread). The kernel walks a process by its files' tables without a
     * registration; the sample says what it lacked: {@code needsProcess}, code that needs the process registered (a
     * JIT's anonymous code, a runtime's file); {@code unknownFiles}, files whose tables are not in the kernel yet.
     * Queues the process for that, for registration if it is registered for an earlier start time or tables it
     * needs were evicted. A process whose files were loaded lately is not queued again for unknown files within the
     * retry pause (a file that cannot be read or loaded now would otherwise queue it at every sample).
     */
    void observe(int pid, long processStartNs, boolean needsProcess, boolean unknownFiles) {
        if (pid <= 0 || !wanted.test(pid)) {
            return;
        }
        long startTicks = processStartNs > 0 ? processStartNs / ProcessRegistry.NANOS_PER_TICK : -1;
        Registration p = registered.get(pid);
        long now = nanoTime.getAsLong();
        if (p != null && p.startTicks == startTicks) {
            if (now - p.lastSeen > TOUCH_NANOS) {
                p.lastSeen = now;
            }
            if (p.stale) {
                request(pid, startTicks, true);
            } else if (unknownFiles && !learnedLately(pid, startTicks, now)) {
                request(pid, startTicks, false); // a library loaded since its registration
            }
            return;
        }
        if (needsProcess) {
            request(pid, startTicks, true);
        } else if (unknownFiles && !learnedLately(pid, startTicks, now)) {
            request(pid, startTicks, false);
        }
    }

    /** Whether the files of this process were loaded within the retry pause. */
    boolean learnedLately(int pid, long startTicks, long now) {
        long[] l = learned.get(pid);
        return l != null && l[0] == startTicks && now - l[1] < RETRY_NANOS;
    }

    /** The files of {@code pid}'s process (started at {@code startTicks}) were loaded now (uploader thread). */
    void learned(int pid, long startTicks) {
        if (learned.size() >= MAX_FAILED) {
            learned.clear();
        }
        learned.put(pid, new long[] {startTicks, nanoTime.getAsLong()});
    }

    /** Whether the request just taken for {@code pid} asked for its registration (not only its files). */
    boolean registrationRequested(int pid) {
        return takenRegistrations.remove(pid);
    }

    /** Queues {@code pid} for registration, once until it is taken. */
    void request(int pid) {
        request(pid, -1, true);
    }

    /**
     * Queues {@code pid}: for its registration ({@code register}) or only for its files' tables. The start a sample
     * named ({@code startTicks}, -1: none) says whether a view of it is current.
     */
    private void request(int pid, long startTicks, boolean register) {
        if (!wanted.test(pid)) {
            return;
        }
        if (register) {
            registrationWanted.add(pid);
        }
        if (pending.putIfAbsent(pid, startTicks) == null) {
            queue.offer(pid);
        } else if (startTicks >= 0) {
            pending.replace(pid, startTicks); // the latest sample's process
        }
    }

    /**
     * The process start the request just taken for {@code pid} named, -1 if none did (the registry's view is then as
     * good as any). Uploader thread.
     */
    long requestedStart(int pid) {
        Long s = takenStarts.remove(pid);
        return s == null ? -1 : s;
    }

    /** The next queued process, waiting up to {@code timeoutNanos}; null if none came. */
    Integer next(long timeoutNanos) throws InterruptedException {
        return taken(queue.poll(timeoutNanos, TimeUnit.NANOSECONDS));
    }

    /** The next queued process; null if none is queued. */
    Integer next() {
        return taken(queue.poll());
    }

    private Integer taken(Integer pid) {
        if (pid != null) {
            if (registrationWanted.remove(pid)) {
                takenRegistrations.add(pid);
            } else {
                takenRegistrations.remove(pid);
            }
            Long start = pending.remove(pid);
            if (start != null && start >= 0) {
                takenStarts.put(pid, start);
            }
        }
        return pid;
    }

    /**
     * The exits the registry reported since the last call, registered processes or not (state may be held for a process
     * that never got registered: a failed attempt, its runtimes).
     */
    List<Exit> takeExited() {
        List<Exit> gone = new ArrayList<>();
        Exit exit;
        while ((exit = exits.poll()) != null) {
            gone.add(exit);
            lastExits.put(exit.pid(), exit.startTicks());
        }
        return gone;
    }

    /** Whether {@code pid}'s process that started at {@code startTicks} is among the last exits taken. */
    boolean hasExited(int pid, long startTicks) {
        Long start = lastExits.get(pid);
        return start != null && start == startTicks;
    }

    /** Whether {@code exit} names the registered process (not an earlier one with its pid, nor a later one). */
    boolean registeredAs(Exit exit) {
        Registration p = registered.get(exit.pid());
        return p != null && p.startTicks == exit.startTicks();
    }

    /** Registered processes that are not in {@code alive}. */
    List<Integer> registeredNotIn(Set<Integer> alive) {
        List<Integer> gone = new ArrayList<>();
        for (Integer pid : registered.keySet()) {
            if (!alive.contains(pid)) {
                gone.add(pid);
            }
        }
        return gone;
    }

    Registration get(int pid) {
        return registered.get(pid);
    }

    void put(int pid, Registration p) {
        registered.put(pid, p);
    }

    Registration remove(int pid) {
        return registered.remove(pid);
    }

    /** Registered processes (stale or not) whose mappings name {@code table}. */
    List<Integer> usersOf(TableEntry table) {
        List<Integer> users = new ArrayList<>();
        registered.forEach((pid, p) -> {
            if (p.tables.contains(table)) {
                users.add(pid);
            }
        });
        return users;
    }

    /** Out of the kernel: registered again (re-uploading its tables) on its next sample. */
    void markStale(int pid) {
        Registration p = registered.get(pid);
        if (p != null) {
            p.stale = true;
        }
    }

    /** Registered processes sampled within the last {@code nanos} (as far as {@link #observe} noted: to a second). */
    List<Integer> sampledWithin(long nanos) {
        long now = nanoTime.getAsLong();
        List<Integer> pids = new ArrayList<>();
        registered.forEach((pid, p) -> {
            if (now - p.lastSeen <= nanos) {
                pids.add(pid);
            }
        });
        return pids;
    }

    /** Whether {@code pid} is registered and not stale. */
    boolean isRegistered(int pid) {
        Registration p = registered.get(pid);
        return p != null && !p.stale;
    }

    /** Registrations held, stale ones included (each holds mapping slots and tables). */
    long heldCount() {
        return registered.size();
    }

    long registeredCount() {
        return registered.values().stream().filter(p -> !p.stale).count();
    }

    /** Whether {@code pid} may be tried now: not within the retry pause after a failed registration. */
    boolean retryDue(int pid, long now) {
        Long failed = failedAt.get(pid);
        return failed == null || now - failed >= RETRY_NANOS;
    }

    void failed(int pid, long now) {
        failedAt.put(pid, now);
        if (failedAt.size() > MAX_FAILED) {
            failedAt.clear();
        }
    }

    void succeeded(int pid) {
        failedAt.remove(pid);
    }

    /** The process exited: its retry pause goes with it, and the note that its files were loaded. */
    void forgetFailure(int pid) {
        failedAt.remove(pid);
        learned.remove(pid);
    }

    /** Forgets failures whose retry pause is over (they hold nothing back any more), and old notes of loaded files. */
    void expireFailures(long now) {
        failedAt.values().removeIf(at -> now - at >= RETRY_NANOS);
        learned.values().removeIf(l -> now - l[1] >= RETRY_NANOS);
    }

    /** Processes within their retry pause (tests, /metrics). */
    int failures() {
        return failedAt.size();
    }
}
