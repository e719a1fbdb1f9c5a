package dev.loupe.bpf;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.LongSupplier;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Function latency probes: each attached {@link ProbeSpec} measures every call of one function in the
 * kernel into a histogram ({@code latency.bpf.c}); {@link #readHistograms()} returns the cumulative counts.
 *
 * <p>Attachments are perf-event uprobes owned by this process: {@link #close()} removes them, and if the
 * process dies (even by SIGKILL) the kernel removes them with its file descriptors.
 */
public final class LatencyProbes implements AutoCloseable {
    static final String OBJECT_RESOURCE = "/dev/loupe/bpf/latency.bpf.o";
    public static final int DEFAULT_MAX_PROBES = 4096;
    public static final int DEFAULT_MAX_IN_FLIGHT = 65536;
    /** Distinct groups (probe, process, goroutine, stack, bucket, fine bucket) between two drains; 72 B each. */
    public static final int DEFAULT_MAX_GROUPS = 32768;
    /** Distinct caller stacks between two drains; 520 B each. */
    public static final int DEFAULT_MAX_STACKS = 4096;
    /**
     * Buckets of a fine histogram ({@link #readFineHistograms()}): 0 below 2^10 ns, the last from 2^42 ns, and
     * between them each power of two [2^p, 2^(p+1)) ns cut into 8 equal buckets, bucket
     * 1 + 8 (p - 10) + the 3 bits below the leading one (the agent's FineHistogram layout).
     */
    public static final int FINE_BUCKETS = LatencyAbi.FINE_BUCKETS;
    private static final int DRAIN_BATCH = 1024;

    private final BpfObject object;
    private final int maxProbes;
    private final LongSupplier monotonicNanos;
    private final BpfMap probes;
    private final BpfMap inflight;
    private final BpfMap histograms;
    private final BpfMap fineHistograms;
    private final BpfMap stats;
    private final BpfMap groups;
    private final BpfMap groupGen;
    private final BpfMap stacks;
    /** Stacks drained from the kernel by id, most recently used last; sized well above the kernel map. */
    private final Map<Long, long[]> stackCache;
    private int gen;
    private final Map<Integer, Attached> attached = new TreeMap<>();
    private final Set<Integer> detachedUnread = new LinkedHashSet<>();
    /**
     * Ids whose links are still being destroyed. Destroying a uprobe link waits for the kernel (~0.1 s each, so
     * a deploy of 1,000 functions took minutes); a detached probe is deactivated at once and its links are
     * destroyed on {@link #linkCloser}, and its id is not attached again until they are gone.
     */
    private final Set<Integer> closing = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final java.util.concurrent.ExecutorService linkCloser = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "loupe-probe-detach");
        t.setDaemon(true);
        return t;
    });
    private long agedOut;
    private boolean closed;

    private record Attached(ProbeSpec spec, List<BpfLink> links) {}

    private LatencyProbes(BpfObject object, int maxProbes, LongSupplier monotonicNanos) throws BpfException {
        this.object = object;
        this.maxProbes = maxProbes;
        this.monotonicNanos = monotonicNanos;
        this.probes = object.map("probes");
        this.inflight = object.map("inflight");
        this.histograms = object.map("histograms");
        this.fineHistograms = object.map("fine_histograms");
        this.stats = object.map("latency_stats");
        this.groups = object.map("groups");
        this.groupGen = object.map("group_gen");
        this.stacks = object.map("stacks");
        int cacheSize = Math.max(1024, 4 * stacks.maxEntries());
        this.stackCache = new LinkedHashMap<>(256, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, long[]> eldest) {
                return size() > cacheSize;
            }
        };
    }

    /** Loads the latency programs with room for {@value #DEFAULT_MAX_PROBES} probes and 65,536 calls in flight. */
    public static LatencyProbes open() throws BpfException {
        return open(DEFAULT_MAX_PROBES, DEFAULT_MAX_IN_FLIGHT, System::nanoTime);
    }

    /**
     * @param maxProbes      probe ids range over 0 .. maxProbes-1
     * @param maxInFlight    calls in flight at once (all probes and processes); more are counted, not measured
     * @param monotonicNanos CLOCK_MONOTONIC in nanoseconds, the kernel's {@code bpf_ktime_get_ns} clock
     *                       ({@link System#nanoTime()} on Linux), used to age in-flight calls out
     */
    public static LatencyProbes open(int maxProbes, int maxInFlight, LongSupplier monotonicNanos) throws BpfException {
        return open(maxProbes, maxInFlight, DEFAULT_MAX_GROUPS, DEFAULT_MAX_STACKS, monotonicNanos);
    }

    /**
     * @param maxGroups distinct groups between two {@link #drainGroups()} (more are counted in
     *                  {@link LatencyStats#groupsFull()}; the histograms stay exact)
     * @param maxStacks distinct caller stacks between two drains (more are counted in {@link LatencyStats#stacksFull()})
     */
    public static LatencyProbes open(int maxProbes, int maxInFlight, int maxGroups, int maxStacks, LongSupplier monotonicNanos)
            throws BpfException {
        if (maxProbes < 1 || maxInFlight < 1 || maxGroups < 1 || maxStacks < 1) {
            throw new IllegalArgumentException("maxProbes " + maxProbes + ", maxInFlight " + maxInFlight + ", maxGroups "
                    + maxGroups + " and maxStacks " + maxStacks + " must be positive");
        }
        BpfObject o = BpfObject.fromResource(LatencyProbes.class, OBJECT_RESOURCE, "loupe_latency");
        try {
            try (Btf btf = o.btf()) {
                LatencyAbi.check(btf);
            }
            o.resizeMap("probes", maxProbes);
            o.resizeMap("histograms", maxProbes);
            o.resizeMap("fine_histograms", maxProbes);
            o.resizeMap("inflight", maxInFlight);
            o.resizeMap("groups", maxGroups);
            o.resizeMap("stacks", maxStacks);
            try (Arena a = Arena.ofConfined()) {
                o.setSectionData(SampledPids.SECTION, SampledPids.ofThisProcess(BpfAvailability.PROG_KPROBE).config(a));
            }
            o.load();
            return new LatencyProbes(o, maxProbes, monotonicNanos);
        } catch (BpfException | RuntimeException e) {
            o.close();
            throw e;
        }
    }

    /**
     * Starts measuring {@code spec}'s function; its histogram and fine histogram start at zero. Fails with a
     * one-line reason (and nothing attached) if the id is taken or out of range, the binary or an offset is
     * wrong, or the kernel refuses a probe.
     */
    public synchronized void attach(ProbeSpec spec) throws BpfException {
        checkOpen();
        int id = spec.id();
        if (id >= maxProbes) {
            throw new IllegalArgumentException(spec + ": id is beyond the " + maxProbes + " probes this instance holds");
        }
        if (attached.containsKey(id)) {
            throw new IllegalArgumentException(spec + ": id " + id + " is already attached to " + attached.get(id).spec());
        }
        awaitClosed(spec, id); // an id detached just before: its old links must be gone first
        long size = binarySize(spec);
        List<Long> offsets = new ArrayList<>(spec.retOffsets());
        offsets.add(spec.entryOffset());
        for (long off : offsets) {
            if (off >= size) {
                throw new BpfException(spec + ": offset 0x" + Long.toHexString(off) + " is beyond the end of the "
                        + size + "-byte file", 0);
            }
        }
        if (spec.pid() != -1 && !Files.exists(Path.of("/proc", Integer.toString(spec.pid())))) {
            throw new BpfException(spec + ": no process " + spec.pid(), 3);
        }
        detachedUnread.remove(id);
        try (Arena a = Arena.ofConfined()) {
            histograms.update(id, a.allocate(histograms.valueSlotSize(), 8), BpfMap.BPF_ANY);
            fineHistograms.update(id, a.allocate(fineHistograms.valueSlotSize(), 8), BpfMap.BPF_ANY);
            MemorySegment cfg = a.allocate(LatencyAbi.PROBE);
            cfg.set(JAVA_INT, LatencyAbi.offset(LatencyAbi.PROBE, "active"), 1);
            cfg.set(JAVA_INT, LatencyAbi.offset(LatencyAbi.PROBE, "kind"),
                    spec.kind() == ProbeSpec.Kind.GO ? LatencyAbi.KIND_GO : LatencyAbi.KIND_NATIVE);
            cfg.set(JAVA_INT, LatencyAbi.offset(LatencyAbi.PROBE, "g_source"),
                    spec.gSource() == ProbeSpec.GSource.TLS ? LatencyAbi.G_TLS : LatencyAbi.G_R14);
            cfg.set(JAVA_INT, LatencyAbi.offset(LatencyAbi.PROBE, "goid_offset"), spec.goidOffset());
            cfg.set(JAVA_INT, LatencyAbi.offset(LatencyAbi.PROBE, "stacks"), spec.stacks() ? 1 : 0);
            probes.update(id, cfg, BpfMap.BPF_ANY);
        }
        // Exits first: an entry recorded before its exit probes exist would never be matched.
        List<BpfLink> links = new ArrayList<>();
        try {
            if (spec.kind() == ProbeSpec.Kind.GO) {
                BpfProgram exit = object.program("latency_exit_go");
                for (long ret : spec.retOffsets()) {
                    links.add(attachOne(spec, "uprobe on RET", () -> exit.attachUprobe(spec.pid(), spec.binary(), ret, id), ret));
                }
            } else {
                BpfProgram exit = object.program("latency_exit");
                links.add(attachOne(spec, "uretprobe", () -> exit.attachUretprobe(spec.pid(), spec.binary(), spec.entryOffset(), id),
                        spec.entryOffset()));
            }
            BpfProgram entry = object.program("latency_entry");
            links.add(attachOne(spec, "entry uprobe", () -> entry.attachUprobe(spec.pid(), spec.binary(), spec.entryOffset(), id),
                    spec.entryOffset()));
        } catch (BpfException | RuntimeException e) {
            closeAll(links);
            deactivate(id);
            throw e;
        }
        attached.put(id, new Attached(spec, links));
    }

    private interface Attach {
        BpfLink run() throws BpfException;
    }

    private static BpfLink attachOne(ProbeSpec spec, String what, Attach attach, long offset) throws BpfException {
        try {
            return attach.run();
        } catch (BpfException e) {
            String first = e.getMessage().lines().findFirst().orElse("");
            throw new BpfException(spec + ": cannot attach " + what + " at 0x" + Long.toHexString(offset) + ": " + first, e.errno());
        }
    }

    private static long binarySize(ProbeSpec spec) throws BpfException {
        Path b = spec.binary();
        if (!Files.isRegularFile(b)) {
            throw new BpfException(spec + ": " + b + " is not a regular file", 2);
        }
        if (!Files.isReadable(b)) {
            throw new BpfException(spec + ": " + b + " is not readable", 13);
        }
        try {
            return Files.size(b);
        } catch (java.io.IOException e) {
            throw new BpfException(spec + ": cannot read " + b + ": " + e.getMessage(), 5);
        }
    }

    /**
     * Stops measuring probe {@code id}: its probes are removed and its calls in flight forgotten. Its
     * histogram stays readable until the next {@link #readHistograms()}. False if it was not attached.
     */
    public synchronized boolean detach(int id) throws BpfException {
        checkOpen();
        Attached a = attached.remove(id);
        if (a == null) {
            return false;
        }
        // Inactive first: from now on its entries and exits count nothing (they are unconfigured hits) while the
        // links go away in the background, entry first.
        deactivate(id);
        removeInFlight(k -> k.get(JAVA_INT, LatencyAbi.offset(LatencyAbi.KEY, "probe")) == id);
        detachedUnread.add(id);
        List<BpfLink> links = new ArrayList<>(a.links());
        java.util.Collections.reverse(links);
        closing.add(id);
        linkCloser.execute(() -> {
            closeAll(links);
            closing.remove(id);
        });
        return true;
    }

    private void awaitClosed(ProbeSpec spec, int id) throws BpfException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (closing.contains(id)) {
            if (System.nanoTime() > deadline) {
                throw new BpfException(spec + ": id " + id + "'s previous links are still being removed", 16);
            }
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new BpfException(spec + ": interrupted while id " + id + "'s previous links were removed", 4);
            }
        }
    }

    /**
     * True while probe {@code id}'s links are still being destroyed after a {@link #detach}: attaching it now
     * waits for them.
     */
    public boolean closing(int id) {
        return closing.contains(id);
    }

    /** The ids attached now. */
    public synchronized Set<Integer> attachedProbes() {
        return Set.copyOf(attached.keySet());
    }

    /**
     * Per probe id: the cumulative histogram since attach, for every attached probe and for probes detached
     * since the last read (their final counts).
     */
    public synchronized Map<Integer, LatencyHistogram> readHistograms() throws BpfException {
        checkOpen();
        Map<Integer, LatencyHistogram> out = new LinkedHashMap<>();
        Set<Integer> ids = new LinkedHashSet<>(attached.keySet());
        ids.addAll(detachedUnread);
        int stride = (int) ((LatencyAbi.HIST.byteSize() + 7) & ~7);
        long bucketsAt = LatencyAbi.offset(LatencyAbi.HIST, "buckets");
        long sumAt = LatencyAbi.offset(LatencyAbi.HIST, "sum_ns");
        long countAt = LatencyAbi.offset(LatencyAbi.HIST, "count");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment key = a.allocate(JAVA_INT);
            MemorySegment v = a.allocate(histograms.valueSlotSize(), 8);
            for (int id : ids) {
                key.set(JAVA_INT, 0, id);
                long[] buckets = new long[LatencyAbi.BUCKETS];
                long sum = 0;
                long count = 0;
                if (histograms.lookup(key, v)) {
                    for (int cpu = 0; cpu < histograms.cpus(); cpu++) {
                        long base = (long) cpu * stride;
                        for (int k = 0; k < buckets.length; k++) {
                            buckets[k] += v.get(JAVA_LONG, base + bucketsAt + 8L * k);
                        }
                        sum += v.get(JAVA_LONG, base + sumAt);
                        count += v.get(JAVA_LONG, base + countAt);
                    }
                }
                out.put(id, new LatencyHistogram(id, buckets, sum, count));
            }
        }
        detachedUnread.clear();
        return out;
    }

    /**
     * Per attached probe id: its cumulative fine histogram since attach, {@link #FINE_BUCKETS} counts; probes
     * detached since the last {@link #readHistograms()} with their final counts (read this one first). The kernel keeps one array per probe for all CPUs: a read while calls return is
     * not a snapshot of one instant, but no count it returns ever decreases until the id is attached again.
     */
    public synchronized Map<Integer, long[]> readFineHistograms() throws BpfException {
        checkOpen();
        Map<Integer, long[]> out = new LinkedHashMap<>();
        long bucketsAt = LatencyAbi.offset(LatencyAbi.FINE_HIST, "buckets");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment key = a.allocate(JAVA_INT);
            MemorySegment v = a.allocate(fineHistograms.valueSlotSize(), 8);
            Set<Integer> ids = new LinkedHashSet<>(attached.keySet());
            ids.addAll(detachedUnread); // final counts until readHistograms() forgets them
            for (int id : ids) {
                key.set(JAVA_INT, 0, id);
                long[] buckets = new long[LatencyAbi.FINE_BUCKETS];
                if (fineHistograms.lookup(key, v)) {
                    MemorySegment.copy(v, JAVA_LONG, bucketsAt, buckets, 0, buckets.length);
                }
                out.put(id, buckets);
            }
        }
        return out;
    }

    /**
     * Forgets calls in flight for longer than {@code maxAge} (goroutines or threads that never return, or
     * whose exit was missed), counting them in {@link LatencyStats#agedOut()}. Returns how many.
     */
    public synchronized int ageOut(Duration maxAge) throws BpfException {
        checkOpen();
        long cutoff = monotonicNanos.getAsLong() - maxAge.toNanos();
        long startAt = LatencyAbi.offset(LatencyAbi.CALL, "start_ns");
        int n = removeInFlight((k, v) -> v.get(JAVA_LONG, startAt) < cutoff);
        agedOut += n;
        return n;
    }

    private int removeInFlight(java.util.function.Predicate<MemorySegment> byKey) throws BpfException {
        return removeInFlight((k, v) -> byKey.test(k));
    }

    private int removeInFlight(java.util.function.BiPredicate<MemorySegment, MemorySegment> which) throws BpfException {
        List<byte[]> doomed = new ArrayList<>();
        inflight.forEachBatched(256, (k, v) -> {
            if (which.test(k, v)) {
                doomed.add(k.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
            }
        });
        int removed = 0;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = a.allocate(inflight.keySize(), 8);
            for (byte[] bytes : doomed) {
                MemorySegment.copy(bytes, 0, k, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, bytes.length);
                if (inflight.delete(k)) { // the call may have returned meanwhile
                    removed++;
                }
            }
        }
        return removed;
    }

    /** The counters of all probes since open. */
    public synchronized LatencyStats stats() throws BpfException {
        checkOpen();
        long[] s = new long[LatencyAbi.STATS.size() - 1];
        for (int i = 0; i < s.length; i++) {
            s[i] = stats.sumPerCpuLong(i);
        }
        return new LatencyStats(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], agedOut);
    }

    /**
     * Reads and removes the groups summed by the kernel since the last drain: per probe, process, goroutine
     * (Go), caller stack, bucket and fine bucket, the calls and their total duration. The kernel writes new
     * groups under a generation that is flipped first, so what is read is no longer being updated and nothing
     * is counted twice; a program that read the old generation just before the flip leaves its group for a
     * later drain. Caller stacks are drained too and kept in a bounded cache for groups of calls still in flight.
     */
    public synchronized List<LatencyGroup> drainGroups() throws BpfException {
        checkOpen();
        int old = gen;
        gen ^= 1;
        try (Arena a = Arena.ofConfined()) {
            groupGen.update(0, a.allocateFrom(JAVA_INT, gen), BpfMap.BPF_ANY);
        }
        // Programs that read the old generation have finished well within this (they run for microseconds).
        java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        long probeAt = LatencyAbi.offset(LatencyAbi.GROUP_KEY, "probe");
        long tgidAt = LatencyAbi.offset(LatencyAbi.GROUP_KEY, "tgid");
        long goidAt = LatencyAbi.offset(LatencyAbi.GROUP_KEY, "goid");
        long stackAt = LatencyAbi.offset(LatencyAbi.GROUP_KEY, "stack_id");
        long bucketAt = LatencyAbi.offset(LatencyAbi.GROUP_KEY, "bucket");
        long fineBucketAt = LatencyAbi.offset(LatencyAbi.GROUP_KEY, "fine_bucket");
        long genAt = LatencyAbi.offset(LatencyAbi.GROUP_KEY, "gen");
        long countAt = LatencyAbi.offset(LatencyAbi.GROUP, "count");
        long sumAt = LatencyAbi.offset(LatencyAbi.GROUP, "sum_ns");
        long commAt = LatencyAbi.offset(LatencyAbi.GROUP, "comm");
        record Raw(int probe, int pid, long goid, long stackId, int bucket, int fineBucket, long count, long sum, String comm) {}
        List<Raw> raw = new ArrayList<>();
        List<byte[]> doomed = new ArrayList<>();
        groups.forEachBatched(DRAIN_BATCH, (k, v) -> {
            if (k.get(JAVA_INT, genAt) != old) {
                return;
            }
            byte[] comm = v.asSlice(commAt, 16).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            int len = 0;
            while (len < comm.length && comm[len] != 0) {
                len++;
            }
            raw.add(new Raw(k.get(JAVA_INT, probeAt), k.get(JAVA_INT, tgidAt), k.get(JAVA_LONG, goidAt), k.get(JAVA_LONG, stackAt),
                    k.get(JAVA_INT, bucketAt), k.get(JAVA_INT, fineBucketAt), v.get(JAVA_LONG, countAt), v.get(JAVA_LONG, sumAt),
                    new String(comm, 0, len, java.nio.charset.StandardCharsets.UTF_8)));
            doomed.add(k.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
        });
        deleteAll(groups, doomed);
        // After the groups: every stack a group names was stored at its call's entry, before the group existed.
        long depthAt = LatencyAbi.offset(LatencyAbi.STACK, "depth");
        long addrsAt = LatencyAbi.offset(LatencyAbi.STACK, "addrs");
        List<byte[]> stackKeys = new ArrayList<>();
        stacks.forEachBatched(256, (k, v) -> {
            int depth = Math.min(v.get(JAVA_INT, depthAt), LatencyAbi.STACK_MAX);
            long[] addrs = new long[Math.max(0, depth)];
            for (int i = 0; i < addrs.length; i++) {
                addrs[i] = v.get(JAVA_LONG, addrsAt + 8L * i);
            }
            stackCache.put(k.get(JAVA_LONG, 0), addrs);
            stackKeys.add(k.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
        });
        deleteAll(stacks, stackKeys);
        List<LatencyGroup> out = new ArrayList<>(raw.size());
        for (Raw r : raw) {
            long[] stack = NO_STACK;
            boolean lost = false;
            if (r.stackId() != LatencyAbi.STACK_NONE) {
                long[] s = r.stackId() == LatencyAbi.STACK_LOST ? null : stackCache.get(r.stackId());
                if (s == null) {
                    lost = true;
                } else {
                    stack = s.clone();
                }
            }
            out.add(new LatencyGroup(r.probe(), r.pid(), r.goid(), r.bucket(), r.fineBucket(), r.count(), r.sum(), r.comm(),
                    stack, lost));
        }
        return out;
    }

    private static final long[] NO_STACK = new long[0];

    private static void deleteAll(BpfMap map, List<byte[]> keys) throws BpfException {
        if (keys.isEmpty()) {
            return;
        }
        int ks = map.keySize();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate((long) ks * DRAIN_BATCH, 8);
            for (int from = 0; from < keys.size(); from += DRAIN_BATCH) {
                int n = Math.min(DRAIN_BATCH, keys.size() - from);
                for (int i = 0; i < n; i++) {
                    MemorySegment.copy(keys.get(from + i), 0, buf, java.lang.foreign.ValueLayout.JAVA_BYTE, (long) i * ks, ks);
                }
                map.deleteBatch(buf, n);
            }
        }
    }

    /**
     * Cumulative kernel run time and run count of each latency program (latency_entry, latency_exit_go,
     * latency_exit); zero unless kernel.bpf_stats_enabled=1.
     */
    public synchronized Map<String, BpfProgram.RunStats> programStats() throws BpfException {
        checkOpen();
        Map<String, BpfProgram.RunStats> out = new LinkedHashMap<>();
        for (String name : List.of("latency_entry", "latency_exit_go", "latency_exit")) {
            out.put(name, object.program(name).runStats());
        }
        return out;
    }

    private void deactivate(int id) throws BpfException {
        try (Arena a = Arena.ofConfined()) {
            probes.update(id, a.allocate(LatencyAbi.PROBE), BpfMap.BPF_ANY);
        }
    }

    private static void closeAll(List<BpfLink> links) {
        for (BpfLink l : links) {
            l.close();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("latency probes are closed");
        }
    }

    /** Removes every probe and unloads the programs. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        linkCloser.shutdown();
        for (Attached a : attached.values()) {
            List<BpfLink> links = new ArrayList<>(a.links());
            java.util.Collections.reverse(links);
            closeAll(links);
        }
        attached.clear();
        try {
            linkCloser.awaitTermination(60, java.util.concurrent.TimeUnit.SECONDS); // links of probes detached just before
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        object.close();
    }
}
