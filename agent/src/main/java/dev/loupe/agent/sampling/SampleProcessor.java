package dev.loupe.agent.sampling;

import dev.loupe.agent.labels.CgroupLabelCache;
import dev.loupe.agent.labels.CgroupLabels;
import dev.loupe.agent.unwind.UnwindTableUploader;
import dev.loupe.bpf.KernelAbi;
import dev.loupe.bpf.ProcessExits;
import dev.loupe.bpf.RawSample;
import dev.loupe.pprof.Label;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.MappingRef;
import dev.loupe.unwinder.symbolize.Symbolizer;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * Symbolizes each raw sample once, while its process is most likely still alive, and adds it to every
 * open profile window. A user stack the kernel could not finish ends in one synthetic frame naming why
 * ({@code [unwind: no unwind info in libfoo.so]}, {@code [unwind: truncated at 127 frames]}); samples
 * taken before their process's unwind tables were live carry the label {@code unwind=frame_pointers}.
 * Samples of a process in a systemd unit or a container carry {@code systemd_unit},
 * {@code systemd_user_unit} and {@code container_id} (those its cgroup says), read once per process and
 * checked again every {@link #CGROUP_MAX_AGE} of its threads' samples (a process may be moved after it
 * started).
 * A sample of a process outside the agent's PID namespace has no pid the agent may read /proc with: it
 * keeps its kernel frames, one frame {@code [outside the agent's PID namespace]} in place of its user stack,
 * and the labels {@code comm} and {@code pid_namespace=outside} only. Every sampled process is named to the
 * {@link SampleObserver}s, with whether the symbolizer found code no runtime named or walked yet, which the unwind
 * tables hear too (their runtimes then read their code again soon).
 * A process's exit ({@link #processExited}, from the kernel, after its samples) releases its unwind registration at
 * once, and what is held for it here (labels, cgroup) and tells the observers and the exit listeners (the process
 * registry, and through it the symbolizer's state and its runtimes) {@link #EXIT_GRACE} later: a sample of the rest
 * of the kernel's exit path may follow the exit record, and it should find the process as it was, not read /proc for
 * it again or ask for its registration. Runs on the sampling thread.
 */
final class SampleProcessor implements Consumer<RawSample> {
    private static final Label FP_FALLBACK = Label.str("unwind", "frame_pointers");
    private static final Label PID_OUTSIDE = Label.str("pid_namespace", "outside");
    private static final String OUTSIDE_FRAME = "[outside the agent's PID namespace]";
    private static final int MAX_CACHED_THREADS = 8192;
    private static final int MAX_CACHED_CGROUPS = 8192;
    static final Duration CGROUP_MAX_AGE = Duration.ofSeconds(30);
    /** How long after its exit record a process's state stays (late samples of the exit path find it). */
    static final Duration EXIT_GRACE = Duration.ofSeconds(1);

    private final Symbolizer symbolizer;
    private final List<ProfileWindow> windows = new CopyOnWriteArrayList<>();
    /** Off-CPU waits go to these windows (never to the CPU profile's). */
    private final List<ProfileWindow> offCpuWindows = new CopyOnWriteArrayList<>();
    /** The probability a switch-out is recorded with now: each wait stands for 1/P waits. */
    private volatile double offCpuProbability;
    private final java.util.SplittableRandom rounding = new java.util.SplittableRandom();
    private final Map<String, Label> stateLabels = new HashMap<>();
    private final List<Frame> frames = new ArrayList<>(256);
    private final AtomicLong processed = new AtomicLong();
    private final AtomicLong offCpuProcessed = new AtomicLong();
    private final AtomicLong empty = new AtomicLong();
    private volatile UnwindTableUploader unwind;
    private final List<SampleObserver> observers = new CopyOnWriteArrayList<>();
    // Synthetic frames get addresses of their own (a window keeps one location per mapping and address).
    private final java.util.Map<String, Frame> synthetic = new java.util.HashMap<>();
    // A thread's label list, reused while it stays the same: one list per sample would be built and hashed
    // again (with the strings decoded afresh) by every window. cgroupAsOf: the sample time its cgroup was looked up.
    private record ThreadLabels(int pid, long processStartNs, String comm, String threadComm, boolean fallback,
                                CgroupLabels cgroup, long cgroupAsOf, List<Label> labels) {
        boolean sameThread(RawSample s, boolean fallback) {
            return pid == s.pid() && processStartNs == s.processStartNs() && this.fallback == fallback
                    && java.util.Objects.equals(comm, s.comm()) && java.util.Objects.equals(threadComm, s.threadComm());
        }
    }

    /** The label lists of one process's threads (by tid), so that an exit drops them all. */
    private static final class ProcessLabels {
        final long startNs;
        final Map<Integer, ThreadLabels> threads = new HashMap<>(4);

        ProcessLabels(long startNs) {
            this.startNs = startNs;
        }
    }

    private final Map<Integer, ProcessLabels> labelsByPid = new HashMap<>();
    private int cachedThreads; // threads over all of labelsByPid
    private final CgroupLabelCache cgroups;
    private final LongSupplier monotonicNanos;
    /** Exits waiting out {@link #EXIT_GRACE}, in arrival order, and the same by pid (value: the start). */
    private record PendingExit(int pid, long startNs, long dueNanos) {}

    private final ArrayDeque<PendingExit> pendingExits = new ArrayDeque<>();
    private final Map<Integer, Long> exiting = new HashMap<>();
    private final List<ProcessExits> exitListeners = new CopyOnWriteArrayList<>();
    private final AtomicLong exitsReleased = new AtomicLong();
    private final java.util.Map<String, List<Label>> outsideLabelsByComm = new java.util.HashMap<>();

    /**
     * @param cgroupReader   reads a process's {@code /proc/PID/cgroup}
     * @param monotonicNanos the cgroup cache's clock
     */
    SampleProcessor(Symbolizer symbolizer, CgroupLabelCache.Reader cgroupReader, LongSupplier monotonicNanos) {
        this.symbolizer = symbolizer;
        this.cgroups = new CgroupLabelCache(cgroupReader, MAX_CACHED_CGROUPS, CGROUP_MAX_AGE, monotonicNanos);
        this.monotonicNanos = monotonicNanos;
    }

    /** Told of every process exit once its grace has passed (the agent's process registry, before start). */
    void addExitListener(ProcessExits l) {
        exitListeners.add(l);
    }

    /**
     * The kernel reports {@code pid} (started at {@code processStartNs}) exited: the unwind tables release its
     * registration now (nothing of a late sample needs it), what else is held for it goes {@link #EXIT_GRACE} from now
     * ({@link #releaseExited}).
     */
    void processExited(int pid, long processStartNs) {
        if (pid <= 0) {
            return;
        }
        UnwindTableUploader u = unwind;
        if (u != null) {
            u.processExited(pid, processStartNs);
        }
        pendingExits.add(new PendingExit(pid, processStartNs, monotonicNanos.getAsLong() + EXIT_GRACE.toNanos()));
        exiting.put(pid, processStartNs);
    }

    /** Releases what is held for the processes whose exit grace has passed (the loop calls it after each poll). */
    void releaseExited() {
        long now = monotonicNanos.getAsLong();
        PendingExit e;
        while ((e = pendingExits.peek()) != null && now - e.dueNanos() >= 0) {
            pendingExits.poll();
            exiting.remove(e.pid(), e.startNs());
            release(e.pid(), e.startNs());
        }
    }

    private void release(int pid, long startNs) {
        ProcessLabels p = labelsByPid.get(pid);
        if (p != null && p.startNs == startNs) {
            labelsByPid.remove(pid);
            cachedThreads -= p.threads.size();
        }
        cgroups.forget(pid, startNs);
        for (SampleObserver o : observers) {
            o.exited(pid, startNs);
        }
        for (ProcessExits l : exitListeners) {
            l.exited(pid, startNs);
        }
        exitsReleased.incrementAndGet();
    }

    /** Whether the sample is of a process whose exit record came already (a sample of the rest of its exit). */
    private boolean exiting(RawSample s) {
        if (exiting.isEmpty()) {
            return false;
        }
        Long start = exiting.get(s.pid());
        return start != null && start == s.processStartNs();
    }

    void unwindTables(UnwindTableUploader u) {
        this.unwind = u;
    }

    /** Told of every sampled process and whether it showed unknown code. */
    void addObserver(SampleObserver o) {
        observers.add(o);
    }

    void open(ProfileWindow w) {
        windows.add(w);
    }

    void close(ProfileWindow w) {
        windows.remove(w);
    }

    void openOffCpu(ProfileWindow w) {
        offCpuWindows.add(w);
    }

    void closeOffCpu(ProfileWindow w) {
        offCpuWindows.remove(w);
    }

    void offCpuProbability(double p) {
        offCpuProbability = p;
    }

    @Override
    public void accept(RawSample s) {
        if ((s.flags() & RawSample.PID_OUTSIDE) != 0) {
            acceptOutside(s);
            return;
        }
        UnwindTableUploader u = unwind;
        boolean exited = exiting(s); // nothing to register, nothing new to learn of it
        if (u != null && !exited) {
            u.observe(s.pid(), s.processStartNs(), (s.flags() & RawSample.NEEDS_PROCESS) != 0,
                    (s.flags() & RawSample.FP_FALLBACK) != 0);
        }
        frames.clear();
        symbolizer.symbolizeKernel(s.kernelStack(), s.kernelStack().length, frames);
        long[] user = s.userStack();
        int n = user.length;
        int marker = -1;
        if (n > 0 && RawSample.isUnwindMarker(user[n - 1])) {
            marker = RawSample.markerReason(user[n - 1]);
            n--;
        }
        int userBase = frames.size();
        int hints = symbolizer.symbolizeUser(s.pid(), s.processStartNs(), user, n, s.mappings(), frames);
        boolean unnamed = (hints & Symbolizer.UNNAMED_CODE) != 0;
        if (!exited) {
            for (SampleObserver o : observers) {
                o.sampled(s.pid(), s.processStartNs(), unnamed);
            }
        }
        if (u != null && !exited && (unnamed || stoppedInRuntimeCode(marker, hints))) {
            u.unknownCode(s.pid()); // code the runtime's table does not describe yet: read it again soon
        }
        if (marker >= 0) {
            frames.add(stopFrame(marker, frames.size() > userBase ? frames.get(frames.size() - 1).mapping() : null));
        } else if ((s.flags() & RawSample.USER_TRUNCATED) != 0) {
            frames.add(synthetic("[unwind: truncated at " + KernelAbi.MAX_USER_FRAMES + " frames]"));
        }
        if (frames.isEmpty()) {
            empty.incrementAndGet();
            return;
        }
        // Without tables (--unwind-tables off) frame pointers are the choice, not a fallback: no label.
        List<Label> labels = labels(s, u != null && (s.flags() & RawSample.FP_FALLBACK) != 0);
        if (s.offCpu()) {
            addWait(s, labels);
            return;
        }
        for (ProfileWindow w : windows) {
            w.add(frames, labels);
        }
        processed.incrementAndGet();
    }

    /**
     * An off-CPU wait: the CPU profile's labels plus {@code state}, weighted by 1/P (the count rounded at random, up or
     * down by its fraction, so that sums stay unbiased).
     */
    private void addWait(RawSample s, List<Label> labels) {
        double p = offCpuProbability;
        if (p <= 0) {
            return; // recorded before off-CPU was turned off
        }
        // The stack was taken in the tracepoint: the program's own frames and the tracepoint's lead to __schedule.
        int tracing = 0;
        while (tracing < frames.size() && isTracingFrame(frames.get(tracing).function())) {
            tracing++;
        }
        if (tracing > 0) {
            frames.subList(0, tracing).clear();
        }
        String state = dev.loupe.bpf.OffCpuState.ofCode(s.offCpuState()).map(dev.loupe.bpf.OffCpuState::label)
                .orElse("unknown");
        Label stateLabel = stateLabels.computeIfAbsent(state, v -> Label.str("state", v));
        List<Label> withState = new ArrayList<>(labels.size() + 1);
        withState.addAll(labels);
        withState.add(stateLabel);
        double weight = 1 / p;
        long count = (long) weight;
        if (rounding.nextDouble() < weight - count) {
            count++;
        }
        long[] values = {count, Math.round(s.offCpuNs() * weight)};
        if (count == 0 && values[1] == 0) {
            return;
        }
        for (ProfileWindow w : offCpuWindows) {
            w.add(frames, withState, values);
        }
        offCpuProcessed.incrementAndGet();
    }

    /** A kernel frame of the BPF program or of the tracepoint's call into it. */
    static boolean isTracingFrame(String function) {
        return function != null && (function.startsWith("bpf_prog_") || function.startsWith("bpf_trace_run")
                || function.startsWith("__bpf_trace_") || function.startsWith("__traceiter_"));
    }

    long offCpuProcessed() {
        return offCpuProcessed.get();
    }

    /** Nothing of it is looked up by pid: its pid here is unknown, and a pid it has elsewhere names another process here. */
    private void acceptOutside(RawSample s) {
        frames.clear();
        symbolizer.symbolizeKernel(s.kernelStack(), s.kernelStack().length, frames);
        frames.add(synthetic(OUTSIDE_FRAME));
        List<Label> labels = outsideLabelsByComm.get(s.comm());
        if (labels == null) {
            if (outsideLabelsByComm.size() >= MAX_CACHED_THREADS) {
                outsideLabelsByComm.clear();
            }
            labels = List.of(Label.str("comm", s.comm()), PID_OUTSIDE);
            outsideLabelsByComm.put(s.comm(), labels);
        }
        if (s.offCpu()) {
            addWait(s, labels);
            return;
        }
        for (ProfileWindow w : windows) {
            w.add(frames, labels);
        }
        processed.incrementAndGet();
    }

    private List<Label> labels(RawSample s, boolean fallback) {
        ProcessLabels p = labelsByPid.get(s.pid());
        ThreadLabels c = p == null || p.startNs != s.processStartNs() ? null : p.threads.get(s.tid());
        boolean same = c != null && c.sameThread(s, fallback);
        if (same && s.ktimeNs() - c.cgroupAsOf() < CGROUP_MAX_AGE.toNanos()) {
            return c.labels();
        }
        CgroupLabels cgroup = s.pid() > 0 ? cgroups.labels(s.pid(), s.processStartNs()) : CgroupLabels.NONE;
        List<Label> labels = same && cgroup.equals(c.cgroup()) ? c.labels() : newLabels(s, fallback, cgroup);
        if (c == null && cachedThreads >= MAX_CACHED_THREADS) {
            labelsByPid.clear(); // exits release processes; this bounds what exits were not reported for (rare)
            cachedThreads = 0;
        }
        p = labelsByPid.get(s.pid());
        if (p == null || p.startNs != s.processStartNs()) {
            if (p != null) {
                cachedThreads -= p.threads.size(); // the pid's earlier process
            }
            p = new ProcessLabels(s.processStartNs());
            labelsByPid.put(s.pid(), p);
        }
        if (p.threads.put(s.tid(), new ThreadLabels(s.pid(), s.processStartNs(), s.comm(), s.threadComm(), fallback,
                cgroup, s.ktimeNs(), labels)) == null) {
            cachedThreads++;
        }
        return labels;
    }

    /** Processes and threads whose label lists are cached (tests, /metrics). */
    int cachedLabelProcesses() {
        return labelsByPid.size();
    }

    int cachedLabelThreads() {
        return cachedThreads;
    }

    int cachedCgroups() {
        return cgroups.size();
    }

    /** Exits waiting out their grace (a read from another thread is a snapshot, possibly stale). */
    int pendingExits() {
        return exiting.size();
    }

    /** Exits released (their grace passed) since start. */
    long exitsReleased() {
        return exitsReleased.get();
    }

    private static List<Label> newLabels(RawSample s, boolean fallback, CgroupLabels cgroup) {
        List<Label> labels = new ArrayList<>(8);
        labels.add(Label.num("pid", s.pid()));
        labels.add(Label.num("tid", s.tid()));
        labels.add(Label.str("comm", s.comm()));
        labels.add(Label.str("thread_comm", s.threadComm()));
        for (Map.Entry<String, String> e : cgroup.asMap().entrySet()) {
            labels.add(Label.str(e.getKey(), e.getValue()));
        }
        if (fallback) {
            labels.add(FP_FALLBACK);
        }
        return List.copyOf(labels);
    }

    /** The walk stopped for want of unwind info in a runtime's code (its table is older than the code). */
    static boolean stoppedInRuntimeCode(int marker, int hints) {
        return marker == StopReason.NO_UNWIND_INFO.code() && (hints & Symbolizer.ENDS_IN_RUNTIME_CODE) != 0;
    }

    /** The synthetic frame for a stop reason; its name also carries the binary the walk stopped in. */
    private Frame stopFrame(int code, MappingRef lastMapping) {
        StopReason r = StopReason.ofCode(code);
        String binary = lastMapping == null || lastMapping.path() == null ? null : baseName(lastMapping.path());
        return synthetic(r == null ? "[unwind: stopped (reason " + code + ")]" : r.frameName(binary));
    }

    /** One frame per distinct name, at an address no user or kernel code has (below the marker range). */
    private Frame synthetic(String name) {
        Frame f = synthetic.get(name);
        if (f == null) {
            if (synthetic.size() > 10_000) {
                synthetic.clear(); // bounded; names repeat, so this is rare
            }
            f = new Frame(KernelAbi.UNWIND_MARKER - 0x10000 - synthetic.size(), null, name, false);
            synthetic.put(name, f);
        }
        return f;
    }

    private static String baseName(String path) {
        int slash = path.lastIndexOf('/');
        return slash >= 0 ? path.substring(slash + 1) : path;
    }

    long processed() {
        return processed.get();
    }

    long emptyStacks() {
        return empty.get();
    }
}
