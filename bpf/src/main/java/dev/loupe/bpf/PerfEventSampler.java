package dev.loupe.bpf;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Samples every online CPU with one PERF_TYPE_SOFTWARE/CPU_CLOCK event in frequency mode, each running
 * {@code profiler.bpf.c}, which streams kernel + frame-pointer user stacks through a BPF ring buffer.
 */
public final class PerfEventSampler implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(PerfEventSampler.class.getName());
    static final String OBJECT_RESOURCE = "/dev/loupe/bpf/profiler.bpf.o";
    private static final int STAT_MAX = 7;

    /** perf_event_open per CPU plus BPF program statistics from the kernel (kernel.bpf_stats_enabled). */
    public record ProgramStats(long runTimeNs, long runCount) {}

    private final Arena arena = Arena.ofShared();
    private final int frequencyHz;
    private MemorySegment object = MemorySegment.NULL;
    private MemorySegment ringBuffer = MemorySegment.NULL;
    private final List<MemorySegment> links = new ArrayList<>();
    private int statsFd = -1;
    private int programFd = -1;
    private int possibleCpus;
    private Consumer<RawSample> sink;
    private volatile long delivered;
    private volatile long decodeErrors;
    private volatile long consumerErrors;
    private boolean consumerErrorLogged;
    private boolean closed;

    private PerfEventSampler(int frequencyHz) {
        this.frequencyHz = frequencyHz;
    }

    /**
     * Loads the BPF program and starts sampling.
     *
     * @param frequencyHz samples per second per CPU
     * @param pids        only these processes (tgids); empty = every process
     */
    public static PerfEventSampler open(int frequencyHz, Set<Integer> pids) throws BpfException {
        var reason = BpfAvailability.unavailabilityReason();
        if (reason.isPresent()) {
            throw new BpfException("BPF unavailable: " + reason.get(), 0);
        }
        int max = maxSampleRate();
        if (frequencyHz < 1 || (max > 0 && frequencyHz > max)) {
            throw new BpfException("frequency " + frequencyHz + " Hz is outside 1.." + max
                    + " (/proc/sys/kernel/perf_event_max_sample_rate)", 22);
        }
        PerfEventSampler s = new PerfEventSampler(frequencyHz);
        try {
            s.start(pids);
            return s;
        } catch (BpfException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    private void start(Set<Integer> pids) throws BpfException {
        byte[] elf = objectBytes();
        MemorySegment elfSeg = arena.allocate(elf.length, 8);
        MemorySegment.copy(elf, 0, elfSeg, JAVA_BYTE, 0, elf.length);
        object = LibBpf.objectOpenMem(elfSeg, "loupe_profiler");
        possibleCpus = LibBpf.numPossibleCpus();
        List<Integer> cpus = onlineCpus();

        int ringBytes = ringBufferBytes(cpus.size(), frequencyHz);
        MemorySegment samplesMap = LibBpf.findMap(object, "samples");
        LibBpf.mapSetMaxEntries(samplesMap, ringBytes);
        LibBpf.objectLoad(object);

        statsFd = LibBpf.mapFd(LibBpf.findMap(object, "stats"));
        int configFd = LibBpf.mapFd(LibBpf.findMap(object, "config"));
        int filterFd = LibBpf.mapFd(LibBpf.findMap(object, "pid_filter"));
        for (int pid : pids) {
            MemorySegment key = arena.allocateFrom(JAVA_INT, pid);
            MemorySegment one = arena.allocateFrom(JAVA_BYTE, (byte) 1);
            LibBpf.mapUpdate(filterFd, key, one, "pid_filter[" + pid + "]");
        }
        // struct config { u32 filter_pids; u32 wakeup_bytes; }: wake user space when a quarter is full,
        // otherwise the poll timeout paces consumption (no wakeup per sample).
        MemorySegment cfg = arena.allocate(8, 8);
        cfg.set(JAVA_INT, 0, pids.isEmpty() ? 0 : 1);
        cfg.set(JAVA_INT, 4, ringBytes / 4);
        LibBpf.mapUpdate(configFd, arena.allocateFrom(JAVA_INT, 0), cfg, "config");

        MethodHandle onRecord;
        try {
            onRecord = MethodHandles.lookup().findVirtual(PerfEventSampler.class, "onRecord",
                    MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class, long.class))
                    .bindTo(this);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
        MemorySegment callback = Linker.nativeLinker().upcallStub(onRecord, LibBpf.RING_BUFFER_SAMPLE_FN, arena);
        ringBuffer = LibBpf.ringBufferNew(LibBpf.mapFd(samplesMap), callback);

        MemorySegment program = LibBpf.findProgram(object, "sample_cpu");
        programFd = LibBpf.programFd(program);
        for (int cpu : cpus) {
            int fd = LibC.perfEventOpenCpuClock(cpu, frequencyHz);
            try {
                links.add(LibBpf.attachPerfEvent(program, fd));
            } catch (BpfException e) {
                LibC.close(fd);
                throw e;
            }
        }
        LOG.log(System.Logger.Level.INFO, "sampling " + cpus.size() + " CPUs at " + frequencyHz + " Hz"
                + (pids.isEmpty() ? ", all processes" : ", pids " + new TreeSet<>(pids))
                + ", ring buffer " + (ringBytes >> 10) + " KiB");
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

    private static byte[] objectBytes() throws BpfException {
        try (InputStream in = PerfEventSampler.class.getResourceAsStream(OBJECT_RESOURCE)) {
            if (in == null) {
                throw new BpfException("BPF object " + OBJECT_RESOURCE + " is not on the classpath (build bpf/ with clang)", 0);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new BpfException("cannot read BPF object " + OBJECT_RESOURCE + ": " + e.getMessage(), 0);
        }
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

    /** ring_buffer_sample_fn upcall. Must never throw: an exception escaping an upcall kills the JVM. */
    private int onRecord(MemorySegment ctx, MemorySegment data, long size) {
        RawSample sample;
        try {
            sample = RawSampleDecoder.decode(data.reinterpret(size));
        } catch (Throwable t) {
            decodeErrors++;
            return 0;
        }
        try {
            sink.accept(sample);
            delivered++;
        } catch (Throwable t) {
            consumerErrors++;
            if (!consumerErrorLogged) {
                consumerErrorLogged = true;
                LOG.log(System.Logger.Level.ERROR, "sample consumer failed (sample lost; logged once)", t);
            }
        }
        return 0;
    }

    /** Waits up to {@code timeout}, then hands every available sample to {@code sink}; returns how many. */
    public synchronized int poll(Duration timeout, Consumer<RawSample> sink) throws BpfException {
        if (closed) {
            throw new IllegalStateException("sampler closed");
        }
        long before = delivered + decodeErrors + consumerErrors;
        this.sink = sink;
        try {
            // Records arrive without a wakeup below the threshold, so poll (wait) and then consume.
            LibBpf.ringBufferPoll(ringBuffer, (int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
            LibBpf.ringBufferConsume(ringBuffer);
        } finally {
            this.sink = null;
        }
        return (int) (delivered + decodeErrors + consumerErrors - before);
    }

    /** Counters since start. */
    public SamplerStats stats() {
        long[] v = new long[STAT_MAX];
        synchronized (this) {
            if (closed || statsFd < 0) {
                return new SamplerStats(0, 0, 0, 0, 0, 0, 0, delivered, decodeErrors, consumerErrors);
            }
            try (Arena a = Arena.ofConfined()) {
                MemorySegment key = a.allocate(JAVA_INT);
                MemorySegment val = a.allocate(8L * possibleCpus, 8);
                for (int i = 0; i < STAT_MAX; i++) {
                    key.set(JAVA_INT, 0, i);
                    LibBpf.mapLookup(statsFd, key, val, "stats[" + i + "]");
                    for (int c = 0; c < possibleCpus; c++) {
                        v[i] += val.getAtIndex(JAVA_LONG, c);
                    }
                }
            } catch (BpfException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot read sampler statistics: " + e.getMessage());
            }
        }
        return new SamplerStats(v[0], v[1], v[2], v[3], v[4], v[5], v[6], delivered, decodeErrors, consumerErrors);
    }

    /** The BPF program's cumulative run time and run count; both stay 0 unless kernel.bpf_stats_enabled=1. */
    public synchronized ProgramStats programStats() throws BpfException {
        if (closed) {
            throw new IllegalStateException("sampler closed");
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment info = a.allocate(232, 8); // sizeof(struct bpf_prog_info), UAPI 6.1
            LibBpf.objGetInfoByFd(programFd, info);
            return new ProgramStats(info.get(JAVA_LONG, 192), info.get(JAVA_LONG, 200));
        }
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
        for (MemorySegment link : links) {
            LibBpf.linkDestroy(link); // closes the perf fd too
        }
        links.clear();
        if (ringBuffer.address() != 0) {
            LibBpf.ringBufferFree(ringBuffer);
        }
        if (object.address() != 0) {
            LibBpf.objectClose(object);
        }
        arena.close();
    }
}
