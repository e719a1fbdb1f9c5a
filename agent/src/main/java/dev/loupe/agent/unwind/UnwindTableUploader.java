package dev.loupe.agent.unwind;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfLoadSegments;
import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.proc.ProcessRegistry;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Pushes unwind tables and process mappings into the kernel so the BPF walker can unwind code without
 * frame pointers. Processes are registered when they run: at the first sample of an unregistered process
 * ({@link #observe}) or when the shared registry first reads it (until then the kernel walks that process
 * with frame pointers and marks the sample); a periodic /proc scan forgets processes that exited. One table per binary (device + inode + size + mtime)
 * is shared by every process that maps it. Table memory is bounded by the kernel maps' capacity: when a
 * new table does not fit, the least recently used tables are evicted (unused ones first), and processes
 * that still need them are registered again on their next sample, re-uploading what they need.
 *
 * <p>Threads: {@link #observe} on the sampling thread (a hash lookup); everything else on the uploader's
 * own thread.
 */
public final class UnwindTableUploader implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(UnwindTableUploader.class.getName());
    static final long NANOS_PER_TICK = 10_000_000L;
    private static final long RETRY_NANOS = TimeUnit.SECONDS.toNanos(2);
    private static final long TOUCH_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** Builds tables; production uses the unwinder's eh_frame compiler. */
    public interface TableBuilder {
        UnwindTable build(Path file) throws Exception;

        UnwindTable build(String name, ByteBuffer image) throws Exception;
    }

    /** Counters and sizes for /metrics. */
    public record Stats(long tablesBuilt, long tableFailures, long tablesLoaded, long rowsLoaded, long bytesLoaded,
                 long evictions, long processes, long registrations, long registrationFailures,
                 Map<String, Long> failuresByReason, DelayHistogram registrationDelay) {}

    /**
     * Seconds from a process's start to its tables being live in the kernel, for processes that started
     * after the agent. Both ends come in clock ticks (the process's start time in /proc/PID/stat, the boot
     * clock in /proc/uptime): 10 ms resolution.
     */
    public record DelayHistogram(double[] bounds, long[] counts, long count, double sumSeconds, double maxSeconds) {
        static final double[] BOUNDS = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
    }

    /** Written on the uploader's thread only; read by stats(). */
    private final long[] delayCounts = new long[DelayHistogram.BOUNDS.length + 1];
    private long delayCount;
    private double delaySum;
    private double delayMax;
    private final long agentStartTicks;
    private final HeapTrimmer heapTrimmer;

    private record FileKey(int devMajor, int devMinor, long inode, long size, long mtimeMillis) {}

    /** A binary's table: loaded in the kernel or not (evicted, or it could not be built). */
    private static final class TableEntry {
        final Object key;
        final String name;
        int id = -1;
        int pageStart;
        int pages;
        int rowStart;
        int rows;
        int ruleStart;
        int rules;
        long pcBase;
        boolean loaded;
        StopReason failure; // it has no table: this is why
        int refs;
        long lastUsed;
        List<LoadSegment> segments;
        UnwindTable retained; // only for images that cannot be re-read from a file (the vdso)

        TableEntry(Object key, String name) {
            this.key = key;
            this.name = name;
        }

        long bytes() {
            return UnwindTable.HEADER_BYTES + pages * 8L + rows * 4L + rules * 8L;
        }
    }

    /** A registered process. Read on the sampling thread: startTicks is final, the rest volatile. */
    private static final class ProcEntry {
        final long startTicks;
        final int first;
        final int count;
        final List<TableEntry> tables;
        final List<MapEntry> mappings; // the registry's snapshot it was built from
        volatile boolean stale;
        volatile long lastSeen;

        ProcEntry(long startTicks, int first, int count, List<TableEntry> tables, long now, List<MapEntry> mappings) {
            this.mappings = mappings;
            this.startTicks = startTicks;
            this.first = first;
            this.count = count;
            this.tables = tables;
            this.lastSeen = now;
        }
    }

    private final java.util.function.IntPredicate wanted; // the --pid filter: only these processes
    private final UnwindTarget target;
    private final TableBuilder builder;
    private final Path procRoot;
    private final ProcessRegistry registry;
    private final java.util.concurrent.ConcurrentLinkedQueue<long[]> exits = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private final long scanIntervalNanos;
    private final LongSupplier nanoTime;
    private final UnwindTarget.Capacity capacity;
    private final RangeAllocator tableIds;
    private final RangeAllocator pageSlots;
    private final RangeAllocator rowSlots;
    private final RangeAllocator ruleSlots;
    private final RangeAllocator mappingSlots;
    private final Map<Object, TableEntry> tables = new HashMap<>();
    private final ConcurrentHashMap<Integer, ProcEntry> procs = new ConcurrentHashMap<>();
    private final Set<Integer> pending = ConcurrentHashMap.newKeySet();
    private final LinkedBlockingQueue<Integer> queue = new LinkedBlockingQueue<>();
    private final Map<Integer, Long> failedAt = new HashMap<>();
    private final Map<String, AtomicLong> failuresByReason = new ConcurrentHashMap<>();
    private final AtomicLong tablesBuilt = new AtomicLong();
    private final AtomicLong tableFailures = new AtomicLong();
    private final AtomicLong evictions = new AtomicLong();
    private final AtomicLong registrations = new AtomicLong();
    private final AtomicLong registrationFailures = new AtomicLong();
    private volatile long rowsLoaded;
    private volatile long bytesLoaded;
    private volatile long tablesLoaded;
    private final Thread thread;
    private volatile boolean running = true;
    private long lastScan = Long.MIN_VALUE;
    private TableEntry vdso;

    public UnwindTableUploader(UnwindTarget target, TableBuilder builder, ProcessRegistry registry, long scanIntervalNanos,
                        LongSupplier nanoTime, java.util.function.IntPredicate wanted) {
        this.wanted = wanted;
        this.target = target;
        this.builder = builder;
        this.registry = registry;
        this.procRoot = registry.procRoot();
        // Push, not pull: whoever reads a process first (the symbolizer, usually), its tables follow.
        registry.addListener(new ProcessRegistry.Listener() {
            @Override
            public void appeared(ProcessRegistry.Snapshot p) {
                request(p.pid());
            }

            @Override
            public void mappingsChanged(ProcessRegistry.Snapshot p) {
                request(p.pid());
            }

            @Override
            public void exited(int pid, long startTicks) {
                exits.offer(new long[] {pid, startTicks});
            }
        });
        this.scanIntervalNanos = scanIntervalNanos;
        this.nanoTime = nanoTime;
        this.capacity = target.capacity();
        this.tableIds = new RangeAllocator(capacity.tables());
        this.pageSlots = new RangeAllocator(capacity.pages());
        this.rowSlots = new RangeAllocator(capacity.rows());
        this.ruleSlots = new RangeAllocator(capacity.rules());
        this.mappingSlots = new RangeAllocator(capacity.mappings());
        this.agentStartTicks = bootTicks();
        this.heapTrimmer = HeapTrimmer.system(nanoTime);
        this.thread = new Thread(this::run, "loupe-unwind-tables");
        this.thread.setDaemon(true);
    }

    public void start() {
        thread.start();
    }

    /**
     * A sample of {@code pid} arrived (sampling thread). Queues the process for registration if it is not
     * registered for this start time, or if tables it needs were evicted.
     */
    public void observe(int pid, long processStartNs) {
        if (pid <= 0 || !wanted.test(pid)) {
            return;
        }
        ProcEntry p = procs.get(pid);
        if (p != null && p.startTicks == processStartNs / NANOS_PER_TICK) {
            long now = nanoTime.getAsLong();
            if (now - p.lastSeen > TOUCH_NANOS) {
                p.lastSeen = now;
            }
            if (!p.stale) {
                return;
            }
        }
        request(pid);
    }

    private void request(int pid) {
        if (wanted.test(pid) && pending.add(pid)) {
            queue.offer(pid);
        }
    }

    /** Whether {@code pid} is registered for unwinding (tests, metrics). */
    boolean registered(int pid) {
        ProcEntry p = procs.get(pid);
        return p != null && !p.stale;
    }

    /**
     * Processes seen in samples come first (they are on CPU now, walked with frame pointers until
     * registered); processes the scan found are registered one at a time in between.
     */
    private void run() {
        while (running) {
            try {
                long now = nanoTime.getAsLong();
                if (lastScan == Long.MIN_VALUE || now - lastScan >= scanIntervalNanos) {
                    lastScan = now;
                    scan();
                }
                // Wake for queued work at once, otherwise at the next scan (at most 1 s: the heap trimmer's tick).
                long untilScan = lastScan + scanIntervalNanos - nanoTime.getAsLong();
                Integer pid = queue.poll(Math.clamp(untilScan, 1_000_000L, 1_000_000_000L), TimeUnit.NANOSECONDS);
                if (pid != null) {
                    pending.remove(pid);
                    registerQuietly(pid);
                }
                drainQueue();
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
    void scan() {
        Set<Integer> alive;
        try {
            alive = registry.scan();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot list " + procRoot + ": " + e);
            return;
        }
        for (Integer pid : List.copyOf(procs.keySet())) {
            if (!alive.contains(pid)) {
                unregister(pid);
            }
        }
    }

    /** Registers every process that samples or the registry asked for; forgets those that exited. */
    private void drainQueue() {
        long[] exit;
        while ((exit = exits.poll()) != null) {
            ProcEntry p = procs.get((int) exit[0]);
            if (p != null && p.startTicks == exit[1]) {
                unregister((int) exit[0]);
            }
        }
        Integer pid;
        while ((pid = queue.poll()) != null) {
            pending.remove(pid);
            registerQuietly(pid);
        }
    }

    /** What the uploader thread does, synchronously (tests): a scan for exits, then the requested processes. */
    void scanNow() {
        scan();
        drainQueue();
    }

    private void registerQuietly(int pid) {
        long now = nanoTime.getAsLong();
        Long failed = failedAt.get(pid);
        if (failed != null && now - failed < RETRY_NANOS) {
            return;
        }
        try {
            register(pid);
            failedAt.remove(pid);
        } catch (IOException e) {
            // gone, a kernel thread, or not ours to read: samples keep frame pointers
            failedAt.put(pid, now);
            if (failedAt.size() > 65536) {
                failedAt.clear();
            }
        } catch (Exception e) {
            registrationFailures.incrementAndGet();
            failedAt.put(pid, now);
            LOG.log(System.Logger.Level.WARNING, "cannot register pid " + pid + " for unwinding: " + e);
        }
    }

    /** Reads the process's executable mappings, loads the tables they need and publishes them. */
    void register(int pid) throws Exception {
        ProcessRegistry.Snapshot snap = registry.cached(pid).orElse(null);
        if (snap == null || snap.startTicks() != registry.startTicks(pid)) {
            snap = registry.read(pid);
        }
        long startTicks = snap.startTicks();
        ProcEntry old = procs.get(pid);
        if (old != null && old.startTicks == startTicks && !old.stale && old.mappings == snap.executable()) {
            return;
        }
        List<MapEntry> exec = new ArrayList<>(snap.executable());
        if (exec.isEmpty()) {
            throw new IOException("no executable mappings (kernel thread or exiting)");
        }
        exec.sort(Comparator.comparingLong(MapEntry::start));
        long now = nanoTime.getAsLong();
        List<TableEntry> used = new ArrayList<>();
        Set<TableEntry> pinned = new HashSet<>();
        List<UnwindTarget.Mapping> out = new ArrayList<>(exec.size());
        for (MapEntry m : exec) {
            TableEntry t = null;
            if (m.path().equals("[vdso]")) {
                t = vdsoTable(m);
            } else if (m.fileBacked()) {
                t = fileTable(pid, m);
            }
            if (t == null) {
                out.add(new UnwindTarget.Mapping(m.start(), m.end(), 0, UnwindTarget.KIND_FRAME_POINTERS, 0)); // JIT, anonymous
                continue;
            }
            pinned.add(t);
            if (t.failure == null && !t.loaded) {
                upload(t, pinned);
            }
            if (t.failure != null || !t.loaded) {
                StopReason why = t.failure != null ? t.failure : StopReason.NO_TABLE;
                out.add(new UnwindTarget.Mapping(m.start(), m.end(), 0, UnwindTarget.KIND_STOP, why.code()));
                continue;
            }
            long bias;
            try {
                bias = ElfLoadSegments.bias(t.segments, m.start(), m.path().equals("[vdso]") ? 0 : m.offset());
            } catch (ElfException e) {
                out.add(new UnwindTarget.Mapping(m.start(), m.end(), 0, UnwindTarget.KIND_STOP, StopReason.NO_TABLE.code()));
                continue;
            }
            t.lastUsed = now;
            used.add(t);
            out.add(new UnwindTarget.Mapping(m.start(), m.end(), bias, UnwindTarget.KIND_TABLE, t.id));
        }
        int first = mappingSlots.allocate(out.size());
        if (first < 0) {
            throw new IllegalStateException("no room for " + out.size() + " more mappings (capacity "
                    + capacity.mappings() + "); the process keeps frame pointers");
        }
        target.writeMappings(first, out);
        if (old != null) {
            unregister(pid);
        }
        for (TableEntry t : used) {
            t.refs++;
        }
        target.setProcess(pid, startTicks, first, out.size());
        procs.put(pid, new ProcEntry(startTicks, first, out.size(), used, now, snap.executable()));
        registrations.incrementAndGet();
        if (old == null && agentStartTicks >= 0 && startTicks > agentStartTicks) {
            long nowTicks = bootTicks();
            if (nowTicks >= startTicks) {
                recordDelay((nowTicks - startTicks) * NANOS_PER_TICK / 1e9);
            }
        }
    }

    private synchronized void recordDelay(double seconds) {
        int i = 0;
        while (i < DelayHistogram.BOUNDS.length && seconds > DelayHistogram.BOUNDS[i]) {
            i++;
        }
        delayCounts[i]++;
        delayCount++;
        delaySum += seconds;
        delayMax = Math.max(delayMax, seconds);
    }

    private synchronized DelayHistogram delayHistogram() {
        return new DelayHistogram(DelayHistogram.BOUNDS.clone(), delayCounts.clone(), delayCount, delaySum, delayMax);
    }

    /** Clock ticks since boot from {@code uptime} beside the process directories; -1 if unreadable. */
    private long bootTicks() {
        try {
            String text = java.nio.file.Files.readString(procRoot.resolve("uptime"));
            int sp = text.indexOf(' ');
            java.math.BigDecimal secs = new java.math.BigDecimal(sp < 0 ? text.trim() : text.substring(0, sp));
            return secs.multiply(java.math.BigDecimal.valueOf(1_000_000_000L / NANOS_PER_TICK)).longValue();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** Forgets a process: its kernel entry, its mapping slots and its hold on tables (which stay cached). */
    void unregister(int pid) {
        ProcEntry p = procs.remove(pid);
        if (p == null) {
            return;
        }
        try {
            target.removeProcess(pid);
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "cannot remove pid " + pid + " from the unwind maps: " + e);
        }
        mappingSlots.release(p.first, p.count);
        for (TableEntry t : p.tables) {
            t.refs--;
        }
    }

    private TableEntry fileTable(int pid, MapEntry m) {
        Path file = procRoot.resolve(Integer.toString(pid)).resolve("map_files").resolve(m.mapFilesName());
        if (!Files.exists(file)) {
            file = procRoot.resolve(Integer.toString(pid)).resolve("root").resolve(m.path().substring(1));
        }
        long size;
        long mtime;
        try {
            var attrs = Files.readAttributes(file, java.nio.file.attribute.BasicFileAttributes.class);
            size = attrs.size();
            mtime = attrs.lastModifiedTime().toMillis();
        } catch (IOException e) {
            return null; // unreadable now: frame pointers
        }
        FileKey key = new FileKey(m.devMajor(), m.devMinor(), m.inode(), size, mtime);
        TableEntry t = tables.computeIfAbsent(key, k -> new TableEntry(k, m.path()));
        if (t.failure == null && !t.loaded && pendingFor != t) {
            // New, or evicted earlier: (re)compile it from the file. A file that cannot be opened now (the
            // process exited meanwhile) says nothing about the binary: not cached, frame pointers this time.
            if (!build(t, file, null)) {
                if (!t.loaded && t.refs == 0) {
                    tables.remove(key);
                }
                return null;
            }
        }
        t.lastUsed = nanoTime.getAsLong();
        return t;
    }

    private TableEntry vdsoTable(MapEntry m) {
        if (vdso == null) {
            vdso = new TableEntry("[vdso]", "[vdso]");
            try {
                byte[] image = ownVdso();
                build(vdso, null, image);
            } catch (IOException e) {
                fail(vdso, StopReason.NO_TABLE, "cannot read the vdso: " + e.getMessage());
            }
        }
        return vdso;
    }

    /**
     * Builds (or rebuilds, after an eviction) a table; if the binary has none, the entry records why.
     * Returns false only if the file could not be read now (not a property of the binary).
     */
    private boolean build(TableEntry t, Path file, byte[] image) {
        try {
            UnwindTable table;
            if (image != null) {
                table = builder.build(t.name, ByteBuffer.wrap(image));
                t.segments = ElfLoadSegments.parse(t.name, ByteBuffer.wrap(image));
                t.retained = table;
            } else {
                table = builder.build(file);
                t.segments = ElfLoadSegments.read(file);
            }
            t.pcBase = table.pcBase();
            t.pages = table.pageCount();
            t.rows = table.rowCount();
            t.rules = table.ruleCount();
            pendingTable = table;
            pendingFor = t;
            tablesBuilt.incrementAndGet();
            heapTrimmer.burst();
        } catch (java.io.IOException e) {
            return false; // gone or unreadable right now: try again with the next process that maps it
        } catch (Exception e) {
            fail(t, StopReason.NO_TABLE, e.toString());
        }
        return true;
    }

    // The table just built, handed to upload() without keeping every table on the heap.
    private UnwindTable pendingTable;
    private TableEntry pendingFor;

    private void fail(TableEntry t, StopReason reason, String message) {
        t.failure = reason;
        tableFailures.incrementAndGet();
        failuresByReason.computeIfAbsent(reason.text(), k -> new AtomicLong()).incrementAndGet();
        LOG.log(System.Logger.Level.INFO, "no unwind table for " + t.name + " (" + message + "); its frames stop there");
    }

    /** Loads a built table into free slices, evicting least recently used tables (not {@code pinned}) if full. */
    private void upload(TableEntry t, Set<TableEntry> pinned) throws Exception {
        UnwindTable table = pendingFor == t ? pendingTable : t.retained;
        if (table == null) {
            throw new IllegalStateException("no built table to upload for " + t.name);
        }
        pendingTable = null;
        pendingFor = null;
        if (t.pages > capacity.pages() || t.rows > capacity.rows() || t.rules > capacity.rules()) {
            fail(t, StopReason.NO_TABLE, "table of " + t.rows + " rows exceeds the unwind table budget");
            return;
        }
        while (true) {
            int id = tableIds.allocate(1);
            int p = id < 0 ? -1 : pageSlots.allocate(t.pages);
            int r = p < 0 ? -1 : rowSlots.allocate(t.rows);
            int u = r < 0 ? -1 : ruleSlots.allocate(t.rules);
            if (u >= 0) {
                t.id = id;
                t.pageStart = p;
                t.rowStart = r;
                t.ruleStart = u;
                break;
            }
            if (r >= 0) {
                rowSlots.release(r, t.rows);
            }
            if (p >= 0) {
                pageSlots.release(p, t.pages);
            }
            if (id >= 0) {
                tableIds.release(id, 1);
            }
            if (!evictOne(pinned)) {
                fail(t, StopReason.NO_TABLE, "no room left in the unwind table budget");
                t.failure = null; // not a property of the binary: try again later
                return;
            }
        }
        target.writeTable(t.id, t.pcBase, t.pageStart, table.pageWords(), t.rowStart, table.rowWords(), t.ruleStart,
                table.ruleWords());
        t.loaded = true;
        tablesLoaded++;
        rowsLoaded += t.rows;
        bytesLoaded += t.bytes();
    }

    /** Evicts the least recently used loaded table, unreferenced ones first; false if none can go. */
    private boolean evictOne(Set<TableEntry> pinned) throws Exception {
        TableEntry victim = null;
        for (TableEntry t : tables.values()) {
            if (t.loaded && !pinned.contains(t) && (victim == null || better(t, victim))) {
                victim = t;
            }
        }
        if (vdso != null && vdso.loaded && !pinned.contains(vdso) && (victim == null || better(vdso, victim))) {
            victim = vdso;
        }
        if (victim == null) {
            return false;
        }
        // The processes that use it go back to frame pointers (marked) first: their mappings name this table id,
        // which the next upload may reuse for another binary; walked with that one their stacks would be wrong.
        boolean removed = false;
        if (victim.refs > 0) {
            for (var e : procs.entrySet()) {
                ProcEntry p = e.getValue();
                if (p.tables.contains(victim)) {
                    target.removeProcess(e.getKey());
                    p.stale = true; // registered again (re-uploading) on its next sample
                    removed = true;
                }
            }
        }
        target.clearTable(victim.id);
        if (removed) {
            Thread.sleep(1); // a walk already past the process lookup on another CPU ends within microseconds
        }
        tableIds.release(victim.id, 1);
        pageSlots.release(victim.pageStart, victim.pages);
        rowSlots.release(victim.rowStart, victim.rows);
        ruleSlots.release(victim.ruleStart, victim.rules);
        victim.loaded = false;
        tablesLoaded--;
        rowsLoaded -= victim.rows;
        bytesLoaded -= victim.bytes();
        evictions.incrementAndGet();
        return true;
    }

    private static boolean better(TableEntry a, TableEntry b) {
        if ((a.refs == 0) != (b.refs == 0)) {
            return a.refs == 0;
        }
        return a.lastUsed < b.lastUsed;
    }

    /** The kernel's vdso image, from our own memory (the same image in every 64-bit process). */
    private byte[] ownVdso() throws IOException {
        for (MapEntry e : ProcMaps.parse(ProcMaps.readText(Path.of("/proc/self/maps")))) {
            if (e.path().equals("[vdso]")) {
                long size = e.end() - e.start();
                if (size <= 0 || size > 1 << 20) {
                    throw new IOException("implausible [vdso] size " + size);
                }
                byte[] image = new byte[(int) size];
                try (RandomAccessFile f = new RandomAccessFile("/proc/self/mem", "r")) {
                    f.seek(e.start());
                    f.readFully(image);
                }
                return image;
            }
        }
        throw new IOException("no [vdso] in /proc/self/maps");
    }

    public Stats stats() {
        Map<String, Long> reasons = new HashMap<>();
        failuresByReason.forEach((k, v) -> reasons.put(k, v.get()));
        return new Stats(tablesBuilt.get(), tableFailures.get(), tablesLoaded, rowsLoaded, bytesLoaded, evictions.get(),
                procs.values().stream().filter(p -> !p.stale).count(), registrations.get(), registrationFailures.get(), reasons,
                delayHistogram());
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
