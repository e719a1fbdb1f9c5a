package dev.loupe.bpf;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Samples every online CPU with one PERF_TYPE_SOFTWARE/CPU_CLOCK event in frequency mode, each running
 * {@code profiler.bpf.c}, which streams kernel + frame-pointer user stacks through a BPF ring buffer.
 * One program over the reusable pieces: {@link BpfObject}, {@link BpfMap}, {@link RingBuffer}, {@link BpfLink}.
 * Samples name processes by the pids of this process's PID namespace ({@link SampledPids}), so that a sample's
 * pid is the /proc entry of its process here; a process outside that namespace comes without pid or user stack.
 * A third program, on the {@code sched_process_exit} raw tracepoint, takes an exited process's unwind entry out of the
 * kernel and reports the exit through the same ring buffer ({@link ProcessExits}), after its samples.
 *
 * <p>Threads: {@link #poll} from one thread; {@link #stats()} and {@link #programStats()} from any
 * (they read maps by fd, which the kernel makes safe, and never wait for a poll in progress).
 */
public final class PerfEventSampler implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(PerfEventSampler.class.getName());
    static final String OBJECT_RESOURCE = "/dev/loupe/bpf/profiler.bpf.o";
    /**
     * The same program for kernels without the VMA iterator kfunc (Linux before 6.7): the walk cannot read a process's
     * memory map, so an unregistered process is walked with frame pointers and asks for its registration.
     */
    static final String NO_ITERATOR_OBJECT_RESOURCE = "/dev/loupe/bpf/profiler-noiter.bpf.o";
    /** The kfunc whose presence in the kernel's BTF picks {@link #OBJECT_RESOURCE}. */
    static final String VMA_ITERATOR_KFUNC = "bpf_iter_task_vma_new";
    private static final int STAT_COUNT = KernelAbi.STATS.size() - 1; // without STAT_MAX

    /** The BPF program's cumulative run time and count (kernel.bpf_stats_enabled). */
    public record ProgramStats(long runTimeNs, long runCount) {}

    /**
     * Off-CPU counters since start.
     *
     * @param switches  switch-outs of user threads the off-CPU program saw (before its probability gate)
     * @param recorded  switch-outs recorded (their stack written)
     * @param drops     switch-out records lost to a full ring buffer
     * @param endDrops  switch-in records lost to a full ring buffer (their waits are lost)
     * @param delivered waits handed to the consumer (stack and length joined)
     * @param unmatched records whose other half never came (lost, or the thread's pending wait was replaced)
     */
    public record OffCpuStats(long switches, long recorded, long drops, long endDrops, long delivered, long unmatched) {}

    /** The off-CPU program, in an object of its own that shares every map of the sampler's (see {@link #offCpu}). */
    static final String OFF_CPU_PROGRAM = "off_cpu_switch";
    /**
     * Waits recorded at switch-out whose switch-in is awaited, at most: beyond, the oldest are dropped as unmatched. As
     * many as the kernel's off_cpu_since map holds (LRU): a wait it has evicted never gets its switch-in record anyway.
     */
    static final int MAX_PENDING_WAITS = 16384;

    private final int frequencyHz;
    private boolean filterPids;
    private int wakeupBytes;
    private BpfObject object;
    private BpfMap stats;
    private BpfProgram program;
    private RingBuffer ringBuffer;
    private UnwindMaps unwindMaps;
    private final List<BpfLink> links = new ArrayList<>();
    private Consumer<RawSample> sink; // set for the duration of a poll, on the polling thread
    private ProcessExits exits = ProcessExits.NONE; // the same
    private final AtomicLong delivered = new AtomicLong();
    private final AtomicLong exitsDelivered = new AtomicLong();
    private final AtomicLong decodeErrors = new AtomicLong();
    private final AtomicLong consumerErrors = new AtomicLong();
    private volatile boolean consumerErrorLogged;
    private volatile boolean closed;
    // Off-CPU: its object and link (under offCpuLock: a reload sets them while the sampling thread polls).
    private final Object offCpuLock = new Object();
    private BpfObject offCpuObject;
    private BpfLink offCpuLink;
    private volatile long offCpuThreshold;
    private volatile int skipTgid;
    private String objectResource;
    // Switch-out records by the kernel's tid, waiting for their switch-in record (poll thread only).
    private final java.util.LinkedHashMap<Integer, RawSample> pendingWaits = new java.util.LinkedHashMap<>();
    private final AtomicLong waitsDelivered = new AtomicLong();
    private final AtomicLong waitsUnmatched = new AtomicLong();

    private PerfEventSampler(int frequencyHz) {
        this.frequencyHz = frequencyHz;
    }

    /**
     * Loads the BPF program and starts sampling, with the unwind maps sized to {@code unwind}. Until Java
     * registers a process in {@link #unwindMaps()}, its stacks are walked with frame pointers (and marked so).
     *
     * @param frequencyHz       samples per second per CPU
     * @param pids              only these processes (tgids as this process's /proc names them); empty = every process
     * @param unwinderConstants the unwinder's values for the enumerators of {@link KernelAbi#UNWINDER_ENUMS}, by C
     *                          name (e.g. {@code RULE_STOP}, {@code NSEC_PER_TICK}): checked against the object
     *                          before it is loaded, and a mismatch fails naming the constant and both values
     */
    public static PerfEventSampler open(int frequencyHz, Set<Integer> pids, UnwindMaps.Capacity unwind,
                                        Map<String, Long> unwinderConstants) throws BpfException {
        return open(frequencyHz, pids, Objects.requireNonNull(unwind, "unwind"), true,
                Optional.of(Map.copyOf(unwinderConstants)), Optional.empty());
    }

    /**
     * This module's tests: tables on, the default budget, the unwinder's constants unchecked (bpf cannot name
     * them; the agent's test checks the values it passes).
     */
    static PerfEventSampler open(int frequencyHz, Set<Integer> pids) throws BpfException {
        return open(frequencyHz, pids, UnwindMaps.Capacity.forBudget(DEFAULT_UNWIND_BUDGET), true, Optional.empty(),
                Optional.empty());
    }

    /** As {@link #open(int, Set)} with the pids reported as {@code sampledPids} says (tests: a forced mode). */
    static PerfEventSampler open(int frequencyHz, Set<Integer> pids, SampledPids sampledPids) throws BpfException {
        return open(frequencyHz, pids, UnwindMaps.Capacity.forBudget(DEFAULT_UNWIND_BUDGET), true, Optional.empty(),
                Optional.of(sampledPids));
    }

    /** Default kernel memory for unwind tables and mappings: 64 MiB (~12 M table rows). */
    public static final long DEFAULT_UNWIND_BUDGET = 64L << 20;

    /**
     * As {@link #open(int, Set, UnwindMaps.Capacity, Map)} without unwind tables ({@code --unwind-tables off}):
     * every user stack is walked with frame pointers, as the choice rather than a fallback (no flag, no count,
     * no early wakeup), by a program that looks nothing up per sample. The unwind maps are created with one
     * entry each. That program uses none of the unwinder's constants, so none are asked for.
     */
    public static PerfEventSampler openWithoutUnwindTables(int frequencyHz, Set<Integer> pids) throws BpfException {
        return open(frequencyHz, pids, NO_TABLES, false, Optional.empty(), Optional.empty());
    }

    private static final UnwindMaps.Capacity NO_TABLES = new UnwindMaps.Capacity(1, 1, 1, 1, 1, 1, 1);

    private static PerfEventSampler open(int frequencyHz, Set<Integer> pids, UnwindMaps.Capacity unwind, boolean tables,
                                         Optional<Map<String, Long>> unwinderConstants, Optional<SampledPids> forcedPids)
            throws BpfException {
        var reason = BpfAvailability.unavailabilityReason();
        if (reason.isPresent()) {
            throw new BpfException("BPF unavailable: " + reason.get(), 0);
        }
        int max = maxSampleRate();
        if (frequencyHz < 1 || (max > 0 && frequencyHz > max)) {
            throw new BpfException("frequency " + frequencyHz + " Hz is outside 1.." + max
                    + " (/proc/sys/kernel/perf_event_max_sample_rate)", 22);
        }
        SampledPids sampledPids = forcedPids.isPresent() ? forcedPids.get()
                : SampledPids.ofThisProcess(BpfAvailability.PROG_PERF_EVENT, BpfAvailability.PROG_RAW_TRACEPOINT);
        PerfEventSampler s = new PerfEventSampler(frequencyHz);
        try {
            s.start(pids, unwind, tables, unwinderConstants, sampledPids);
            return s;
        } catch (BpfException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    /**
     * Opens the shipped profiler object and checks its ABI against {@link KernelAbi} and, if given, the
     * unwinder's constants (not loaded yet).
     */
    static BpfObject openObject(Optional<Map<String, Long>> unwinderConstants) throws BpfException {
        return openObject(kernelHasVmaIterator() ? OBJECT_RESOURCE : NO_ITERATOR_OBJECT_RESOURCE, unwinderConstants);
    }

    /** Whether the running kernel's BTF has the VMA iterator kfunc (read once). */
    static boolean kernelHasVmaIterator() throws BpfException {
        Boolean has = vmaIterator;
        if (has == null) {
            try (Btf vmlinux = Btf.vmlinux()) {
                has = vmlinux.hasFunction(VMA_ITERATOR_KFUNC);
            }
            vmaIterator = has;
            if (!has) {
                LOG.log(System.Logger.Level.INFO, "the kernel has no " + VMA_ITERATOR_KFUNC + " (Linux 6.7+): processes are"
                        + " registered for unwinding by their first samples instead of walked by their files' tables at once");
            }
        }
        return has;
    }

    private static volatile Boolean vmaIterator;

    /** The programs that follow processes' executable mappings for the walk (profiler.bpf.c's proc_maps). */
    static final List<String> FOLLOWERS = List.of("process_exec", "process_fork", "loader_changed");
    /** A function of a host library (found in this JVM's own mappings by a path fragment) that a uprobe watches. */
    record LoaderHook(String library, String function) {}

    /**
     * Where glibc has just mapped libraries into a process: ld.so initialises the main thread's TLS once every needed
     * library is mapped and relocated, before main ({@code _dl_allocate_tls_init}; each new thread too), and a program
     * that dlopens a library looks its symbols up next ({@code dlsym}, libc's: Python's imports, plugins). Not
     * {@code _dl_debug_state}, the debuggers' hook: gdb puts its own breakpoint on that one-byte function, and a uprobe
     * there broke gdb's view of the libraries.
     */
    static final List<LoaderHook> LOADER_HOOKS = List.of(new LoaderHook("/ld-linux", "_dl_allocate_tls_init"),
            new LoaderHook("/libc.so.6", "dlsym"));

    /**
     * Attaches the programs that follow processes' executable mappings: exec and fork (raw tracepoints) and the points
     * where glibc has mapped libraries (uprobes on the ld.so and libc this JVM runs with: the host's). Without the loader's probe (no glibc
     * ld.so, or no such symbol) processes are followed from exec only, and their libraries' pcs are found per sample.
     */
    private void followMappings() throws BpfException {
        links.add(object.program("process_exec").attachRawTracepoint("sched_process_exec"));
        links.add(object.program("process_fork").attachRawTracepoint("sched_process_fork"));
        for (LoaderHook hook : LOADER_HOOKS) {
            java.util.Optional<java.nio.file.Path> library = hostLibrary(hook.library());
            try {
                if (library.isEmpty()) {
                    throw new BpfException("no " + hook.library() + " in /proc/self/maps (not glibc?)", 0);
                }
                links.add(object.program("loader_changed").attachUprobe(-1, library.get(), fileOffset(library.get(), hook.function()), 0));
            } catch (BpfException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot probe " + hook.function() + " (" + e.getMessage()
                        + "): libraries mapped there are found per sample, not followed as they are mapped");
            }
        }
    }

    /**
     * Where {@code function} of {@code library} (mapped in this process) lies in the file: its address here (the
     * dynamic linker's lookup, which picks the default version of a versioned name such as libc's dlsym, where libbpf's
     * lookup by name finds two) translated through this process's mapping of the file.
     */
    static long fileOffset(java.nio.file.Path library, String function) throws BpfException {
        java.lang.foreign.MemorySegment at = java.lang.foreign.SymbolLookup.libraryLookup(library, java.lang.foreign.Arena.global())
                .find(function).orElseThrow(() -> new BpfException(function + " is not in " + library, 0));
        long address = at.address();
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/maps"))) {
                String[] f = line.trim().split("\\s+", 6);
                if (f.length == 6 && f[5].equals(library.toString())) {
                    String[] range = f[0].split("-");
                    long start = Long.parseUnsignedLong(range[0], 16);
                    long end = Long.parseUnsignedLong(range[1], 16);
                    if (Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0) {
                        return address - start + Long.parseUnsignedLong(f[2], 16);
                    }
                }
            }
        } catch (java.io.IOException e) {
            throw new BpfException("cannot read /proc/self/maps: " + e.getMessage(), 0);
        }
        throw new BpfException(function + " at 0x" + Long.toHexString(address) + " is in no mapping of " + library, 0);
    }

    /** The library whose path contains {@code fragment} that this process runs with, as /proc/self/maps names it. */
    static java.util.Optional<java.nio.file.Path> hostLibrary(String fragment) {
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/maps"))) {
                int slash = line.indexOf('/');
                if (slash > 0 && line.substring(slash).contains(fragment)) {
                    return java.util.Optional.of(java.nio.file.Path.of(line.substring(slash).strip()));
                }
            }
        } catch (java.io.IOException e) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.empty();
    }

    static BpfObject openObject(String resource, Optional<Map<String, Long>> unwinderConstants) throws BpfException {
        BpfObject o = BpfObject.fromResource(PerfEventSampler.class, resource, "loupe_profiler");
        try (Btf btf = o.btf()) {
            KernelAbi.checkProfiler(btf, unwinderConstants);
        } catch (BpfException | RuntimeException e) {
            o.close();
            throw e;
        }
        return o;
    }

    private void start(Set<Integer> pids, UnwindMaps.Capacity unwind, boolean tables,
                       Optional<Map<String, Long>> unwinderConstants, SampledPids sampledPids) throws BpfException {
        objectResource = kernelHasVmaIterator() ? OBJECT_RESOURCE : NO_ITERATOR_OBJECT_RESOURCE;
        object = openObject(objectResource, unwinderConstants);
        object.autoload(OFF_CPU_PROGRAM, false); // loaded apart, when asked for (offCpu)
        String programName = tables ? "sample_cpu" : "sample_cpu_fp";
        object.autoload(tables ? "sample_cpu_fp" : "sample_cpu", false);
        boolean follow = tables && kernelHasVmaIterator(); // the programs that follow processes' mappings
        for (String p : FOLLOWERS) {
            object.autoload(p, follow);
        }
        List<Integer> cpus = onlineCpus();
        int ringBytes = ringBufferBytes(cpus.size(), frequencyHz);
        object.resizeMap("samples", ringBytes);
        UnwindMaps.resize(object, unwind);
        try (Arena a = Arena.ofConfined()) {
            object.setSectionData(SampledPids.SECTION, sampledPids.config(a));
        }
        object.load();
        unwindMaps = tables ? new UnwindMaps(object, unwind) : null;

        stats = object.map("stats");
        BpfMap filter = object.map("pid_filter");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment one = a.allocateFrom(JAVA_BYTE, (byte) 1);
            for (int pid : pids) {
                filter.update(pid, one, BpfMap.BPF_ANY);
            }
        }
        filterPids = !pids.isEmpty();
        wakeupBytes = ringBytes / 4;
        writeConfig();
        ringBuffer = RingBuffer.open(object.map("samples"), this::onRecord);
        // Exits first: a process that exits once sampling runs is always reported.
        links.add(object.program("process_exit").attachRawTracepoint("sched_process_exit"));
        if (follow) {
            followMappings();
        }
        program = object.program(programName);
        for (int cpu : cpus) {
            int fd = LibC.perfEventOpenCpuClock(cpu, frequencyHz);
            try {
                links.add(program.attachPerfEvent(fd));
            } catch (BpfException e) {
                LibC.close(fd);
                throw e;
            }
        }
        LOG.log(System.Logger.Level.INFO, "sampling " + cpus.size() + " CPUs at " + frequencyHz + " Hz"
                + (pids.isEmpty() ? ", all processes" : ", pids " + new TreeSet<>(pids))
                + ", ring buffer " + (ringBytes >> 10) + " KiB"
                + (tables ? ", unwind maps " + (unwind.bytes() >> 20) + " MiB" : ", frame pointers only")
                + (sampledPids.mode() == SampledPids.Mode.INITIAL ? "" : ", " + sampledPids.describe()));
    }

    /** Half a second of samples from every CPU at ~1 KiB each, as a power of two between 1 and 64 MiB. */
    static int ringBufferBytes(int cpus, int frequencyHz) {
        long want = (long) cpus * frequencyHz * 1024 / 2;
        int size = 1 << 20;
        while (size < want && size < (64 << 20)) {
            size <<= 1;
        }
        return size;
    }

    static List<Integer> onlineCpus() throws BpfException {
        try {
            return parseCpuList(SysctlFiles.read(Path.of("/sys/devices/system/cpu/online")));
        } catch (IOException | IllegalArgumentException e) {
            throw new BpfException("cannot read /sys/devices/system/cpu/online: " + e.getMessage(), 0);
        }
    }

    /** Parses a kernel CPU list such as {@code 0-3,6,8-9}. */
    static List<Integer> parseCpuList(String text) {
        List<Integer> cpus = new ArrayList<>();
        for (String part : text.trim().split(",")) {
            if (part.isEmpty()) {
                continue;
            }
            int dash = part.indexOf('-');
            try {
                int lo = Integer.parseInt(dash < 0 ? part : part.substring(0, dash));
                int hi = dash < 0 ? lo : Integer.parseInt(part.substring(dash + 1));
                for (int c = lo; c <= hi; c++) {
                    cpus.add(c);
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad CPU list \"" + text.trim() + "\"");
            }
        }
        return cpus;
    }

    private static int maxSampleRate() {
        try {
            return Integer.parseInt(SysctlFiles.read(Path.of("/proc/sys/kernel/perf_event_max_sample_rate")));
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    /** One ring-buffer record (called during {@link #poll}); failures are counted by kind. */
    private void onRecord(MemorySegment data) {
        RawSample sample;
        try {
            sample = RawSampleDecoder.decode(data);
        } catch (RuntimeException e) {
            decodeErrors.incrementAndGet();
            return;
        }
        try {
            if ((sample.flags() & (RawSample.OFF_CPU | RawSample.OFF_CPU_END)) != 0) {
                onWait(sample);
                return;
            }
            if ((sample.flags() & RawSample.PROCESS_EXIT) != 0) {
                exits.exited(sample.pid(), sample.processStartNs());
                exitsDelivered.incrementAndGet();
                return;
            }
            sink.accept(sample);
            delivered.incrementAndGet();
        } catch (Throwable t) {
            consumerErrors.incrementAndGet();
            if (!consumerErrorLogged) {
                consumerErrorLogged = true;
                LOG.log(System.Logger.Level.ERROR, "sample consumer failed (sample lost; logged once)", t);
            }
        }
    }

    /**
     * Joins a wait's two records: the switch-out's (the stack) waits here for the switch-in's (the length), which the
     * kernel writes after it; the joined wait goes to the consumer as one sample ({@link RawSample#offCpuNs}).
     */
    private void onWait(RawSample r) {
        if ((r.flags() & RawSample.OFF_CPU) != 0) {
            if (pendingWaits.size() >= MAX_PENDING_WAITS) {
                var oldest = pendingWaits.keySet().iterator();
                oldest.next();
                oldest.remove();
                waitsUnmatched.incrementAndGet();
            }
            if (pendingWaits.put(r.hostTid(), r) != null) {
                waitsUnmatched.incrementAndGet(); // its switch-in record was lost
            }
            return;
        }
        RawSample start = pendingWaits.get(r.hostTid());
        if (start == null || start.ktimeNs() != r.ktimeNs()) {
            waitsUnmatched.incrementAndGet(); // its switch-out record was lost, or another one replaced it
            return;
        }
        pendingWaits.remove(r.hostTid());
        sink.accept(start.withOffCpuNs(r.offCpuNs()));
        waitsDelivered.incrementAndGet();
    }

    /**
     * Records off-CPU waits with this probability per switch-out (0 to 1; 0 detaches the program, so it costs nothing).
     * The program is loaded the first time it is asked for, in an object of its own that shares this one's maps, so a
     * sampler started without it never pays for its verification. The agent's own process ({@code selfHostTgid}, as
     * the kernel names it; 0: none) is left out.
     */
    public void offCpu(double probability, int selfHostTgid) throws BpfException {
        if (!(probability >= 0 && probability <= 1)) {
            throw new IllegalArgumentException("off-CPU probability " + probability + " is outside 0..1");
        }
        synchronized (offCpuLock) {
            if (closed) {
                throw new IllegalStateException("sampler closed");
            }
            offCpuThreshold = Math.round(probability * 0x1p32);
            skipTgid = selfHostTgid;
            if (probability > 0 && offCpuObject == null) {
                BpfObject o = openObject(objectResource, Optional.empty());
                try {
                    o.autoload("sample_cpu", false);
                    o.autoload("sample_cpu_fp", false);
                    o.autoload("process_exit", false);
                    for (String p : FOLLOWERS) {
                        o.autoload(p, false);
                    }
                    o.shareMapsOf(object);
                    o.load();
                } catch (BpfException | RuntimeException e) {
                    o.close();
                    throw e;
                }
                offCpuObject = o;
            }
            writeConfig();
            if (probability > 0 && offCpuLink == null) {
                offCpuLink = offCpuObject.program(OFF_CPU_PROGRAM).attachRawTracepoint("sched_switch");
            } else if (probability == 0 && offCpuLink != null) {
                offCpuLink.close();
                offCpuLink = null;
            }
        }
        LOG.log(System.Logger.Level.INFO, probability > 0 ? "off-CPU: recording a switch-out with probability " + probability
                : "off-CPU: off");
    }

    /** Off-CPU counters since start. Never waits for a poll in progress. */
    public OffCpuStats offCpuStats() {
        long[] v = new long[4];
        BpfMap m = stats;
        int first = KernelAbi.STATS.indexOf("STAT_OFF_CPU_SWITCHES");
        if (!closed && m != null) {
            try {
                for (int i = 0; i < v.length; i++) {
                    v[i] = m.sumPerCpuLong(first + i);
                }
            } catch (BpfException | IllegalStateException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot read off-CPU statistics: " + e.getMessage());
            }
        }
        return new OffCpuStats(v[0], v[1], v[2], v[3], waitsDelivered.get(), waitsUnmatched.get());
    }

    /** The off-CPU program's cumulative run time and count (kernel.bpf_stats_enabled); zeros when it was never loaded. */
    public ProgramStats offCpuProgramStats() throws BpfException {
        synchronized (offCpuLock) {
            if (offCpuObject == null) {
                return new ProgramStats(0, 0);
            }
            BpfProgram.RunStats r = offCpuObject.program(OFF_CPU_PROGRAM).runStats();
            return new ProgramStats(r.runTimeNs(), r.runCount());
        }
    }

    // Not under the poll monitor: poll() holds it while it waits. A map update needs no lock of ours.
    private void writeConfig() throws BpfException {
        try (Arena a = Arena.ofConfined()) {
            // Wake user space when a quarter is full; otherwise the poll timeout paces consumption.
            MemorySegment cfg = a.allocate(KernelAbi.CONFIG);
            cfg.set(JAVA_INT, KernelAbi.offset(KernelAbi.CONFIG, "filter_pids"), filterPids ? 1 : 0);
            cfg.set(JAVA_INT, KernelAbi.offset(KernelAbi.CONFIG, "wakeup_bytes"), wakeupBytes);
            cfg.set(java.lang.foreign.ValueLayout.JAVA_LONG, KernelAbi.offset(KernelAbi.CONFIG, "off_cpu_threshold"), offCpuThreshold);
            cfg.set(JAVA_INT, KernelAbi.offset(KernelAbi.CONFIG, "skip_tgid"), skipTgid);
            object.map("config").update(0, cfg, BpfMap.BPF_ANY);
        }
    }

    /**
     * Waits up to {@code timeout}, then hands every available sample to {@code sink}; returns how many. Exit records
     * are consumed and ignored.
     */
    public int poll(Duration timeout, Consumer<RawSample> sink) throws BpfException {
        return poll(timeout, sink, ProcessExits.NONE);
    }

    /**
     * Waits up to {@code timeout}, then hands every available sample to {@code sink} and every process exit to
     * {@code exits}, in the order the kernel wrote them (a process's samples before its exit); returns how many
     * records (samples and exits).
     */
    public synchronized int poll(Duration timeout, Consumer<RawSample> sink, ProcessExits exits) throws BpfException {
        if (closed) {
            throw new IllegalStateException("sampler closed");
        }
        long before = delivered.get() + exitsDelivered.get() + decodeErrors.get() + consumerErrors.get();
        this.sink = sink;
        this.exits = exits;
        try {
            // Records arrive without a wakeup below the threshold, so poll (wait) and then consume.
            ringBuffer.poll(timeout);
            ringBuffer.consume();
        } finally {
            this.sink = null;
            this.exits = ProcessExits.NONE;
        }
        return (int) (delivered.get() + exitsDelivered.get() + decodeErrors.get() + consumerErrors.get() - before);
    }

    /** Counters since start. Never waits for a poll in progress. */
    public SamplerStats stats() {
        long[] v = new long[STAT_COUNT];
        BpfMap m = stats;
        if (!closed && m != null) {
            try {
                for (int i = 0; i < STAT_COUNT; i++) {
                    v[i] = m.sumPerCpuLong(i);
                }
            } catch (BpfException | IllegalStateException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot read sampler statistics: " + e.getMessage());
            }
        }
        return new SamplerStats(v[0], v[1], v[2], v[3], v[4], v[5], v[6], delivered.get(), decodeErrors.get(),
                consumerErrors.get(), v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[16], v[17]);
    }

    /**
     * The BPF program's cumulative run time and run count; both stay 0 unless kernel.bpf_stats_enabled=1.
     * Fails if the running kernel's BTF does not say where bpf_prog_info holds them.
     */
    public ProgramStats programStats() throws BpfException {
        if (closed) {
            throw new IllegalStateException("sampler closed");
        }
        BpfProgram.RunStats r = program.runStats();
        return new ProgramStats(r.runTimeNs(), r.runCount());
    }

    /** The loaded program (tests read what the verifier kept of it). */
    BpfProgram program() {
        return program;
    }

    /** Where Java registers unwind tables and processes for the kernel's walker. */
    public UnwindMaps unwindMaps() {
        if (unwindMaps == null) {
            throw new IllegalStateException("opened without unwind tables");
        }
        return unwindMaps;
    }

    public int frequencyHz() {
        return frequencyHz;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        synchronized (offCpuLock) {
            if (offCpuLink != null) {
                offCpuLink.close();
                offCpuLink = null;
            }
            if (offCpuObject != null) {
                offCpuObject.close();
                offCpuObject = null;
            }
        }
        for (BpfLink link : links) {
            link.close(); // closes the perf fd too
        }
        links.clear();
        if (ringBuffer != null) {
            ringBuffer.close();
        }
        if (object != null) {
            object.close();
        }
    }
}
