package dev.loupe.agent.unwind;

import dev.loupe.agent.logging.RateLimitedLog;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfLoadSegments;
import dev.loupe.unwinder.proc.FileKey;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcessRegistry;
import dev.loupe.unwinder.runtime.RuntimeRegistry;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntPredicate;
import java.util.function.LongSupplier;

/**
 * Pushes unwind tables into the kernel so the BPF walker can unwind code without frame pointers. A file's table is
 * loaded once and published under the file's identity (device, inode; size and mtime checked by the walker), for every
 * process that maps it: the walker finds a pc's mapping itself, so a process whose files are known is walkable from its
 * first sample and costs nothing here. A sample that met a file without a table asks for the process's files
 * ({@link #observe}); one that met code needing more than files (a JIT's anonymous code, a runtime's file) asks for the
 * process's registration: its own sorted mappings, with its runtimes' code tables (until then the kernel walks that
 * code with frame pointers and marks the sample). A process that exits is released (its mapping slots, its hold on
 * tables, its runtimes' tables) when the registry reports it: the kernel's exit events, between any two
 * registrations; a periodic /proc scan finds exits no event reported. A full mapping space is counted and logged
 * (rate-limited), the process keeps frame pointers and is tried again on a later sample, after exits freed space. One
 * table per binary is shared by every process that maps it ({@link TableCache}). Table memory is bounded
 * by the kernel maps' capacity ({@link KernelTableSpace}): when a new table does not fit, the least
 * recently used tables are evicted (unused ones first), and processes that still need them are registered
 * again on their next sample ({@link ProcessTracker}), re-uploading what they need.
 *
 * <p>Threads: {@link #observe} on the sampling thread (a hash lookup); everything else on the uploader's
 * own thread.
 */
public final class UnwindTableUploader implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(UnwindTableUploader.class.getName());

    /** Builds tables; production uses the unwinder's eh_frame compiler. */
    public interface TableBuilder {
        UnwindTable build(Path file) throws Exception;

        UnwindTable build(String name, ByteBuffer image) throws Exception;

        /** Tables from each binary's .eh_frame/.debug_frame (a file) or an in-memory image (the vdso). */
        static TableBuilder ehFrame() {
            return new TableBuilder() {
                @Override
                public UnwindTable build(Path file) throws Exception {
                    return dev.loupe.unwinder.ehframe.UnwindTableBuilder.build(file);
                }

                @Override
                public UnwindTable build(String name, ByteBuffer image) throws Exception {
                    return dev.loupe.unwinder.ehframe.UnwindTableBuilder.build(name, image);
                }
            };
        }
    }

    /** Counters and sizes for /metrics. */
    public record Stats(long tablesBuilt, long tableFailures, long tablesLoaded, long rowsLoaded, long bytesLoaded,
                 long evictions, long processes, long registrations, long registrationFailures,
                 Map<String, Long> failuresByReason, DelayHistogram registrationDelay, long refusedTooManyMappings,
                 long mappingsInUse, long mappingCapacity, long mappingSpaceFull, long exitsReleased,
                 long registrationsHeld, long retryPauses, long runtimeTableProcesses, long mappingsAllocated,
                 long filesPublished, long fileCapacity, long fileLoads) {}

    /**
     * Seconds from a process's start to its tables being live in the kernel, for processes that started
     * after the agent. Both ends come in clock ticks (the process's start time in /proc/PID/stat, the boot
     * clock in /proc/uptime): 10 ms resolution.
     */
    public record DelayHistogram(double[] bounds, long[] counts, long count, double sumSeconds, double maxSeconds) {
        static final double[] BOUNDS = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
    }

    /** A process's kernel mappings and the tables they name (once per mapping). */
    private record ResolvedMappings(List<UnwindTarget.Mapping> mappings, List<TableEntry> tables) {}

    private final UnwindTarget target;
    private final ProcessRegistry registry;
    private final ProcessTracker processes;
    private final TableCache tables;
    private final KernelTableSpace space;
    private final RegistrationDelay delay;
    private final HeapTrimmer heapTrimmer;
    private final RuntimeTables runtimeTables;
    private final List<TableEntry> retiredRuntimeTables = new ArrayList<>();
    private final Set<Integer> unknownCodeHints = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final AtomicLong refusedTooManyMappings = new AtomicLong();
    private final Set<Integer> refusedPids = new HashSet<>();
    private boolean refusalLogged;
    private final long scanIntervalNanos;
    private final LongSupplier nanoTime;
    private final AtomicLong registrations = new AtomicLong();
    private final AtomicLong registrationFailures = new AtomicLong();
    private final AtomicLong mappingSpaceFull = new AtomicLong();
    private final AtomicLong exitsReleased = new AtomicLong();
    private final AtomicLong fileLoads = new AtomicLong();
    private final RateLimitedLog mappingSpaceFullLog;
    /** A full mapping space runs a scan for exits no event reported, at most this often. */
    static final long RECLAIM_SCAN_NANOS = TimeUnit.SECONDS.toNanos(1);
    private final Thread thread;
    private volatile boolean running = true;
    private long lastScan = Long.MIN_VALUE;

    /** An uploader for native code only (no runtime's code tables). */
    public UnwindTableUploader(UnwindTarget target, TableBuilder builder, ProcessRegistry registry, long scanIntervalNanos,
                        LongSupplier nanoTime, IntPredicate wanted) {
        this(target, builder, registry, RuntimeRegistry.none(registry), scanIntervalNanos, nanoTime, wanted);
    }

    /** {@code runtimes}: the processes' runtimes, shared with the symbolizer, whose code tables are loaded too. */
    public UnwindTableUploader(UnwindTarget target, TableBuilder builder, ProcessRegistry registry, RuntimeRegistry runtimes,
                        long scanIntervalNanos, LongSupplier nanoTime, IntPredicate wanted) {
        this.target = target;
        this.registry = registry;
        this.scanIntervalNanos = scanIntervalNanos;
        this.nanoTime = nanoTime;
        long agentStart;
        try {
            agentStart = registry.startTicks((int) ProcessHandle.current().pid());
        } catch (IOException e) {
            agentStart = Long.MAX_VALUE; // (a /proc without us, in tests): every process read is treated as older
        }
        this.processes = new ProcessTracker(wanted, nanoTime, agentStart);
        registry.addListener(processes);
        this.heapTrimmer = HeapTrimmer.system(nanoTime);
        this.runtimeTables = new RuntimeTables(runtimes, nanoTime);
        this.tables = new TableCache(builder, runtimeTables::fileTable, registry.procRoot(), nanoTime, heapTrimmer);
        this.space = new KernelTableSpace(target, this::unpublishUsers);
        Path procRoot = registry.procRoot();
        this.delay = new RegistrationDelay(RegistrationDelay.bootClock(procRoot, nanoTime));
        this.mappingSpaceFullLog = new RateLimitedLog(LOG, System.Logger.Level.WARNING, TimeUnit.MINUTES.toNanos(1), nanoTime);
        this.thread = new Thread(this::run, "loupe-unwind-tables");
        this.thread.setDaemon(true);
    }

    public void start() {
        thread.start();
    }

    /**
     * A sample of {@code pid} arrived (sampling thread), which met code that needs the process registered
     * ({@code needsProcess}) or files without tables in the kernel ({@code unknownFiles}): queues the process for that.
     * A registered process is queued again if tables it needs were evicted.
     */
    public void observe(int pid, long processStartNs, boolean needsProcess, boolean unknownFiles) {
        processes.observe(pid, processStartNs, needsProcess, unknownFiles);
    }

    /**
     * A sample of {@code pid} (sampling thread) had code its runtimes' tables do not describe (an unnamed frame in
     * memory no file backs, or a walk that stopped in a runtime's code): they read their code again soon rather than
     * after their back-off.
     */
    public void unknownCode(int pid) {
        if (unknownCodeHints.size() < 4096) {
            unknownCodeHints.add(pid);
        }
    }

    /**
     * The kernel reports {@code pid} (started at {@code processStartNs}) exited (sampling thread): its registration
     * goes at once (its kernel entry went at the exit; a sample of its exit path walks frame pointers and asks for
     * nothing), and it is not registered if it was queued.
     */
    public void processExited(int pid, long processStartNs) {
        processes.exited(pid, processStartNs / ProcessRegistry.NANOS_PER_TICK);
    }

    /** Whether {@code pid} is registered for unwinding (tests, metrics). */
    boolean registered(int pid) {
        return processes.isRegistered(pid);
    }

    /**
     * Queued processes are registered in turn, exits released before each registration; the scan runs on time
     * however long the queue stays full.
     */
    private void run() {
        while (running) {
            try {
                if (scanDue()) {
                    scan();
                }
                // Wake for queued work at once, otherwise at the next scan (at most 1 s: the heap trimmer's tick, and
                // how long a reported exit may wait when nothing is queued).
                long untilScan = lastScan + scanIntervalNanos - nanoTime.getAsLong();
                Integer pid = processes.next(Math.clamp(untilScan, 1_000_000L, 1_000_000_000L));
                releaseExited();
                if (pid != null) {
                    registerQuietly(pid);
                }
                drainQueue();
                refreshRuntimeTables();
                heapTrimmer.tick();
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.ERROR, "unwind table uploader: " + e, e);
            }
        }
    }

    /**
     * Gone processes are forgotten (the registry reports them too). New processes are not registered here:
     * only processes that run need tables, and their first sample (or the registry's first read of them)
     * asks for it, so an idle host costs nothing.
     */
    private boolean scanDue() {
        return lastScan == Long.MIN_VALUE || nanoTime.getAsLong() - lastScan >= scanIntervalNanos;
    }

    void scan() {
        lastScan = nanoTime.getAsLong();
        processes.expireFailures(lastScan);
        Set<Integer> alive;
        try {
            alive = registry.scan();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot list " + registry.procRoot() + ": " + e);
            return;
        }
        releaseExited(); // what the registry found gone
        processes.registeredNotIn(alive).forEach(this::unregister); // registered, unknown to the registry, gone
    }

    /**
     * Processes sampled lately whose runtimes' code changed are registered again (with new tables); tables they no
     * longer name leave the kernel.
     */
    void refreshRuntimeTables() {
        for (java.util.Iterator<Integer> it = unknownCodeHints.iterator(); it.hasNext(); ) {
            runtimeTables.unknownCode(it.next());
            it.remove();
        }
        for (int pid : runtimeTables.changed(processes.sampledWithin(RuntimeTables.SAMPLED_WITHIN_NANOS))) {
            processes.markStale(pid); // its kernel entry stays valid (the old table) until the new one replaces it
            processes.request(pid);
        }
        dropRetiredRuntimeTables();
    }

    private void dropRetiredRuntimeTables() {
        retiredRuntimeTables.addAll(runtimeTables.takeRetired());
        retiredRuntimeTables.removeIf(t -> {
            try {
                return space.drop(t);
            } catch (Exception e) {
                LOG.log(System.Logger.Level.WARNING, "cannot drop " + t.name + " from the unwind maps: " + e);
                return true;
            }
        });
    }

    /**
     * Registers every process that samples or the registry asked for, releasing reported exits before each, until
     * the queue is empty or the scan is due (under a steady stream of new processes the queue may never empty).
     */
    private void drainQueue() {
        releaseExited();
        Integer pid;
        while (!scanDue() && (pid = processes.next()) != null) {
            registerQuietly(pid);
            releaseExited();
        }
    }

    /**
     * Releases every process reported exited (by the kernel at once, by the registry after the samples' grace or a
     * scan): its registration if it has one, and what else it holds.
     */
    private void releaseExited() {
        for (ProcessTracker.Exit exit : processes.takeExited()) {
            if (processes.registeredAs(exit)) {
                release(exit.pid());
                exitsReleased.incrementAndGet();
            }
            runtimeTables.forget(exit.pid(), exit.startTicks());
            processes.forgetFailure(exit.pid());
            refusedPids.remove(exit.pid());
        }
    }

    /** What the uploader thread does, synchronously (tests): a scan for exits, then the requested processes. */
    void scanNow() {
        scan();
        drainQueue();
    }

    /** The same without the scan (tests): reported exits, then the requested processes. */
    void drainNow() {
        drainQueue();
    }

    private void registerQuietly(int pid) {
        long now = nanoTime.getAsLong();
        if (!processes.retryDue(pid, now)) {
            return;
        }
        try {
            process(pid);
            processes.succeeded(pid);
        } catch (IOException e) {
            processes.failed(pid, now); // gone, a kernel thread, or not ours to read: samples keep frame pointers
        } catch (MappingSpaceFull e) {
            processes.failed(pid, now); // tried again on a sample after the retry pause: exits free space meanwhile
            mappingSpaceFull.incrementAndGet();
            mappingSpaceFullLog.log("cannot register pid " + pid + " for unwinding now: " + e.getMessage()
                    + " (loupe_unwind_mapping_space_full_total counts these)");
        } catch (TooManyMappings e) {
            processes.failed(pid, now);
            if (refusedPids.size() < 4096 && refusedPids.add(pid)) {
                refusedTooManyMappings.incrementAndGet();
            }
            if (!refusalLogged) {
                refusalLogged = true;
                LOG.log(System.Logger.Level.WARNING, "cannot register pid " + pid + " for unwinding: " + e.getMessage()
                        + " (said once; loupe_unwind_processes_refused_total counts them)");
            }
        } catch (Exception e) {
            registrationFailures.incrementAndGet();
            processes.failed(pid, now);
            LOG.log(System.Logger.Level.WARNING, "cannot register pid " + pid + " for unwinding: " + e);
        }
    }

    /**
     * What a queued process needs: a registration if one was asked for (its samples met code that needs one) or it has
     * one (its mappings changed, or its tables were evicted); otherwise only its files' tables, published for every
     * process.
     */
    void process(int pid) throws Exception {
        boolean asked = processes.registrationRequested(pid);
        ProcessRegistry.Snapshot snap = currentSnapshot(pid, processes.requestedStart(pid));
        if (processes.hasExited(pid, snap.startTicks())) {
            throw new IOException("exited"); // queued before its exit was reported: nothing to walk any more
        }
        List<MapEntry> exec = executableByAddress(snap);
        if (asked || processes.get(pid) != null) {
            if (processes.get(pid) == null) {
                LOG.log(System.Logger.Level.DEBUG, () -> "registering pid " + pid + " (" + exec.stream().map(MapEntry::path).filter(x -> x.startsWith("/")).findFirst().orElse("?")
                        + "): its samples asked");
            }
            // Runtimes are opened only for a registration: reading a runtime (an interpreter's table, a JVM's code
            // heaps) costs far more than a short process that only needed its files' tables lives.
            register(pid, snap, exec, runtimeTables.forProcess(pid, snap.startTicks(), exec));
        } else if (!processes.learnedLately(pid, snap.startTicks(), nanoTime.getAsLong())) { // (queued twice: a sample, a read)
            loadFiles(pid, exec, nanoTime.getAsLong());
            processes.learned(pid, snap.startTicks());
        }
    }

    /**
     * Loads the tables of the process's files that the kernel does not have and publishes them by file identity: the
     * walker then finds them for this process and every later one that maps them.
     */
    private void loadFiles(int pid, List<MapEntry> exec, long now) throws Exception {
        Set<TableEntry> pinned = new HashSet<>();
        for (MapEntry m : exec) {
            loadFile(pid, m, pinned, now); // anonymous code and files that cannot be read now are skipped
        }
        fileLoads.incrementAndGet();
    }

    /** Loads a file's own table if it is not in the kernel and publishes it by the file's identity. */
    private void loadFile(int pid, MapEntry m, Set<TableEntry> pinned, long now) throws Exception {
        TableEntry t = tables.forMapping(pid, m);
        if (t == null) {
            return;
        }
        pinned.add(t);
        if (t.failure == null && !t.loaded()) {
            load(t, pinned);
        }
        t.lastUsed = now;
        publishFile(m, t);
    }

    /** The file's kernel entry: its table (or why it has none), for every process that maps it. */
    private void publishFile(MapEntry m, TableEntry t) throws Exception {
        if (t.key instanceof FileKey file) {
            // A runtime's file needs the process registered, unless the runtime's table for it walks it for every
            // process (an interpreter's).
            space.publishFile(t, TableEntry.FileTableKey.of(m), file.size(), file.mtimeNanos(),
                    !t.runtimeTable && runtimeTables.runtimeFile(m) ? UnwindTarget.FILE_NEEDS_PROCESS : 0);
        } else if (m.path().equals("[vdso]")) {
            space.publishFile(t, new TableEntry.FileTableKey(UnwindTarget.VDSO_DEVICE, UnwindTarget.VDSO_INODE), 0, 0, 0);
        }
    }

    /** Registers the process now, whatever it needs (tests; the queue goes through {@link #process}). */
    void register(int pid) throws Exception {
        ProcessRegistry.Snapshot snap = currentSnapshot(pid, processes.requestedStart(pid));
        if (processes.hasExited(pid, snap.startTicks())) {
            throw new IOException("exited");
        }
        List<MapEntry> exec = executableByAddress(snap);
        register(pid, snap, exec, runtimeTables.forProcess(pid, snap.startTicks(), exec));
    }

    /** Publishes the process's own sorted mappings with the tables they need (its runtimes' code tables first). */
    private void register(int pid, ProcessRegistry.Snapshot snap, List<MapEntry> exec, List<RuntimeTables.Table> codeTables)
            throws Exception {
        ProcessTracker.Registration old = processes.get(pid);
        if (old != null && old.current(snap)) {
            return;
        }
        long now = nanoTime.getAsLong();
        if (exec.size() > UnwindTarget.MAX_MAPPINGS_PER_PROCESS) {
            throw new TooManyMappings(exec.size() + " executable mappings, more than the kernel's search covers ("
                    + UnwindTarget.MAX_MAPPINGS_PER_PROCESS + "); the process keeps frame pointers");
        }
        ResolvedMappings resolved = resolve(pid, exec, codeTables, now);
        int first = allocateMappings(resolved.mappings().size());
        try {
            target.writeMappings(first, resolved.mappings());
            // Replaces the old entry in one map update: no window in which the process has none (a JVM registers
            // again at each change of its code cache, and its samples would fall back to frame pointers meanwhile).
            target.setProcess(pid, snap.startTicks(), first, resolved.mappings().size());
        } catch (Exception e) {
            space.releaseMappings(first, resolved.mappings().size());
            throw e;
        }
        if (old != null) {
            releaseReplaced(pid);
        }
        space.hold(resolved.tables());
        processes.put(pid, new ProcessTracker.Registration(snap.startTicks(), first, resolved.mappings().size(),
                resolved.tables(), now, snap.executable()));
        registrations.incrementAndGet();
        if (old == null) {
            delay.registered(snap.startTicks());
        }
        dropRetiredRuntimeTables();
    }

    /** No run of free mapping slots is long enough for the process, even after releasing the exited. */
    static final class MappingSpaceFull extends Exception {
        MappingSpaceFull(String message) {
            super(message);
        }
    }

    /** A process with more executable mappings than the walker's bounded search can find among. */
    static final class TooManyMappings extends Exception {
        TooManyMappings(String message) {
            super(message);
        }
    }

    /**
     * The registry's view of the process, unless a sample asked for another process with the pid ({@code wantedStart},
     * -1: none), else a fresh read. The view is not checked against /proc/PID/stat: a pid reused since was reported
     * exited (the registry then forgot the view), and if that report is late the kernel entry written from the view
     * names the old process's start, which the walker checks on every sample (the new process's samples keep frame
     * pointers and ask for its registration, with their start).
     */
    private ProcessRegistry.Snapshot currentSnapshot(int pid, long wantedStart) throws IOException {
        ProcessRegistry.Snapshot snap = registry.cached(pid).orElse(null);
        return snap != null && (wantedStart < 0 || snap.startTicks() == wantedStart) ? snap : registry.read(pid, wantedStart);
    }

    private static List<MapEntry> executableByAddress(ProcessRegistry.Snapshot snap) throws IOException {
        List<MapEntry> exec = new ArrayList<>(snap.executable());
        if (exec.isEmpty()) {
            throw new IOException("no executable mappings (kernel thread or exiting)");
        }
        exec.sort(Comparator.comparingLong(MapEntry::start));
        return exec;
    }

    /** Each mapping's kernel entry, loading the tables they need (none of this process's is evicted for another). */
    private ResolvedMappings resolve(int pid, List<MapEntry> exec, List<RuntimeTables.Table> codeTables, long now) throws Exception {
        List<TableEntry> used = new ArrayList<>();
        Set<TableEntry> pinned = new HashSet<>();
        List<UnwindTarget.Mapping> out = new ArrayList<>(exec.size());
        for (MapEntry m : exec) {
            out.add(mappingFor(pid, m, codeTables, pinned, used, now));
        }
        return new ResolvedMappings(out, used);
    }

    private UnwindTarget.Mapping mappingFor(int pid, MapEntry m, List<RuntimeTables.Table> codeTables, Set<TableEntry> pinned,
                                            List<TableEntry> used, long now) throws Exception {
        // A runtime's table first: its generated code (a JIT's code heaps), or a binary whose frames it walks itself
        // (an interpreter loop's rows of its own kind), in place of the file's table for this process.
        for (RuntimeTables.Table code : codeTables) {
            if (code.covers(m)) {
                if (m.fileBacked()) {
                    loadFile(pid, m, pinned, now); // the file's own table, for this process's other threads' walks before
                }                                   // this registration and for every process not registered (yet)
                return codeMapping(m, code.entry(), pinned, used, now);
            }
        }
        TableEntry t = tables.forMapping(pid, m);
        if (t == null) {
            return new UnwindTarget.Mapping(m.start(), m.end(), 0, UnwindTarget.KIND_FRAME_POINTERS, 0); // JIT, anonymous
        }
        pinned.add(t);
        if (t.failure == null && !t.loaded()) {
            load(t, pinned);
        }
        if (t.failure != null || !t.loaded()) {
            if (t.failure != null) {
                publishFile(m, t);
            }
            return stop(m, t.failure != null ? t.failure : StopReason.NO_TABLE);
        }
        long bias;
        try {
            bias = ElfLoadSegments.bias(t.segments, m.start(), m.path().equals("[vdso]") ? 0 : m.offset());
        } catch (ElfException e) {
            return stop(m, StopReason.NO_TABLE);
        }
        t.lastUsed = now;
        used.add(t);
        publishFile(m, t); // for the libraries it loads later, and every other process that maps the file
        return new UnwindTarget.Mapping(m.start(), m.end(), bias, UnwindTarget.KIND_TABLE, t.id());
    }

    /** A runtime's code mapping: its table's PCs are runtime addresses (bias 0); frame pointers if it cannot load. */
    private UnwindTarget.Mapping codeMapping(MapEntry m, TableEntry t, Set<TableEntry> pinned, List<TableEntry> used, long now)
            throws Exception {
        pinned.add(t);
        if (t.failure == null && !t.loaded()) {
            load(t, pinned);
        }
        if (t.failure != null || !t.loaded()) {
            return new UnwindTarget.Mapping(m.start(), m.end(), 0, UnwindTarget.KIND_FRAME_POINTERS, 0);
        }
        t.lastUsed = now;
        used.add(t);
        return new UnwindTarget.Mapping(m.start(), m.end(), 0, UnwindTarget.KIND_TABLE, t.id());
    }

    private static UnwindTarget.Mapping stop(MapEntry m, StopReason why) {
        return new UnwindTarget.Mapping(m.start(), m.end(), 0, UnwindTarget.KIND_STOP, why.code());
    }

    /** Loads a built table into the kernel, evicting least recently used tables (not {@code pinned}) if full. */
    private void load(TableEntry t, Set<TableEntry> pinned) throws Exception {
        switch (space.load(t, TableWords.of(tables.takeBuilt(t)), pinned)) {
            case LOADED -> { }
            case LARGER_THAN_BUDGET ->
                    tables.fail(t, StopReason.NO_TABLE, "table of " + t.rows + " rows exceeds the unwind table budget");
            case NO_ROOM -> tables.failForNow(t, "no room left in the unwind table budget");
        }
    }

    /**
     * The first of {@code n} mapping slots for a registration. When none are free, exits not released yet come back
     * first (those reported, and a scan for the rest at most every {@link #RECLAIM_SCAN_NANOS}).
     */
    private int allocateMappings(int n) throws MappingSpaceFull {
        int first = space.allocateMappings(n);
        if (first < 0) {
            releaseExited();
            if (lastScan == Long.MIN_VALUE || nanoTime.getAsLong() - lastScan >= RECLAIM_SCAN_NANOS) {
                scan();
            }
            first = space.allocateMappings(n);
        }
        if (first < 0) {
            throw new MappingSpaceFull("no run of " + n + " free mapping slots (" + space.mappingsInUse() + " of "
                    + space.capacity().mappings() + " in use); it keeps frame pointers until space is freed");
        }
        return first;
    }

    /** Takes the processes whose mappings name an evicted table out of the kernel until they register again. */
    private boolean unpublishUsers(TableEntry table) throws Exception {
        boolean any = false;
        for (int pid : processes.usersOf(table)) {
            target.removeProcess(pid);
            processes.markStale(pid);
            any = true;
        }
        return any;
    }

    /** The slots and table holds of a registration the kernel entry no longer names (it was replaced). */
    private void releaseReplaced(int pid) {
        ProcessTracker.Registration p = processes.remove(pid);
        if (p != null) {
            space.releaseMappings(p.first, p.count);
            space.release(p.tables);
        }
    }

    /** Forgets a registered process found gone by a scan: its registration and its runtimes' tables. */
    void unregister(int pid) {
        ProcessTracker.Registration p = processes.get(pid);
        if (p != null) {
            release(pid);
            runtimeTables.forget(pid, p.startTicks);
        }
        refusedPids.remove(pid);
    }

    /** Forgets a process's registration: its kernel entry, its mapping slots and its hold on tables (which stay cached). */
    private void release(int pid) {
        ProcessTracker.Registration p = processes.remove(pid);
        if (p == null) {
            return;
        }
        try {
            target.removeProcess(pid);
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "cannot remove pid " + pid + " from the unwind maps: " + e);
        }
        space.releaseMappings(p.first, p.count);
        space.release(p.tables);
    }

    public Stats stats() {
        return new Stats(tables.tablesBuilt(), tables.tableFailures(), space.tablesLoaded(), space.rowsLoaded(),
                space.bytesLoaded(), space.evictions(), processes.registeredCount(), registrations.get(),
                registrationFailures.get(), tables.failuresByReason(), delay.snapshot(), refusedTooManyMappings.get(),
                space.mappingsInUse(), space.capacity().mappings(), mappingSpaceFull.get(), exitsReleased.get(),
                processes.heldCount(), processes.failures(), runtimeTables.size(), space.mappingsAllocated(),
                space.filesPublished(), space.capacity().files(), fileLoads.get());
    }

    @Override
    public void close() {
        running = false;
        thread.interrupt();
        try {
            thread.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
