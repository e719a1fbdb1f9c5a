package dev.loupe.agent.latency;

import dev.loupe.agent.labels.CgroupLabelCache;
import dev.loupe.agent.labels.CgroupLabels;
import dev.loupe.agent.regression.BaselineKind;
import dev.loupe.agent.regression.FunctionKey;
import dev.loupe.agent.regression.RegressionTracker;
import dev.loupe.agent.sampling.SideProfileSource;
import dev.loupe.bpf.BpfException;
import dev.loupe.bpf.LatencyGroup;
import dev.loupe.unwinder.proc.FileKey;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.Symbolizer;
import dev.loupe.bpf.LatencyHistogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import dev.loupe.bpf.LatencyProbes;
import dev.loupe.bpf.LatencyStats;
import dev.loupe.config.ProbeConfig;
import dev.loupe.pprof.proto.Profile;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Function latency (issue 7) for the agent: resolves the configured probes, attaches them in the kernel
 * ({@link LatencyProbes}), and turns the kernel's cumulative per-function histograms into
 * {@code loupe_function_duration_seconds} on /metrics (cumulative for the agent's lifetime) and one
 * latency profile per interval (deltas), whose calls and profile also feed the regression baselines
 * ({@link RegressionTracker}). Each interval it also forgets calls in flight for longer than
 * {@link Options#maxInFlightAge()} and detaches the probes of {@code pid=} processes that exited. Every
 * second it checks the configured binaries: one that appeared, or now names another file (a deploy), is
 * resolved and attached again (the old build's probes drain, {@link ProbeSet}). A reload applies a new probe
 * list the same way ({@link #reconfigure}).
 *
 * <p>Nothing configured wrongly stops the agent: every problem is one log line and a count in
 * {@code loupe_probe_problems_total}.
 */
public final class ProbeManager implements SideProfileSource {
    private static final System.Logger LOG = System.getLogger(ProbeManager.class.getName());

    /**
     * @param maxFunctions   most functions one pattern may match, and all probes together (probes-max-functions)
     * @param maxInFlight    calls in flight at once in the kernel, all probes together
     * @param maxInFlightAge calls in flight longer than this are forgotten and counted (never-returning goroutines)
     * @param maxGroups      groups (function, process, goroutine, stack, bucket) the kernel holds between two drains
     * @param drainEvery     how often the kernel's groups are drained and symbolized (while processes are alive),
     *                       and how often configured binaries are checked for a new build
     * @param maxProfileGroups groups one latency profile holds; calls beyond are counted, not shown
     * @param drainIdle      a previous build's probe is detached after this long without a call
     * @param spareIds       probe ids beyond maxFunctions, for previous builds draining after a deploy
     */
    public record Options(int maxFunctions, int maxInFlight, Duration maxInFlightAge, int maxGroups, Duration drainEvery,
                          int maxProfileGroups, Duration drainIdle, int spareIds) {
        public static Options defaults(int maxFunctions) {
            return new Options(maxFunctions, LatencyProbes.DEFAULT_MAX_IN_FLIGHT, Duration.ofMinutes(30),
                    LatencyProbes.DEFAULT_MAX_GROUPS, Duration.ofSeconds(1), 65536, Duration.ofMinutes(1),
                    Math.min(maxFunctions, 256));
        }

        /**
         * Probe ids the kernel's maps hold: every function allowed plus room for previous builds draining after a
         * deploy (beyond it, the oldest draining probes are detached early, and the rest of the new build is
         * attached once their ids are free, at the interval's end).
         */
        int capacity() {
            return maxFunctions + spareIds;
        }
    }

    private final Options options;
    private final LongSupplier monotonicNanos;
    private final java.util.function.Supplier<Symbolizer> symbolizers;
    private final RegressionTracker regressions; // null: no baselines (tests)
    private final CgroupLabelCache cgroups = new CgroupLabelCache(CgroupLabelCache.procReader(Path.of("/proc")), 4096,
            Duration.ofSeconds(30), System::nanoTime);
    private LatencyProbes probes; // opened on the first configuration with probes
    private ProbeSet set;
    private List<ProbeConfig> configs = List.of();
    /** Binary-path probes: the file each path named when last planned (empty: no file yet). */
    private Map<Path, Optional<FileKey>> watched = Map.of();
    private final CountDownLatch closed = new CountDownLatch(1);
    private long problems;
    private LatencyStats lastStats;
    private Map<FunctionKey, LatencyHistogram> lastTotals = Map.of();
    private Symbolizer symbolizer; // made when a probe first has stacks on
    private LatencyGroups intervalGroups;
    private final List<LatencyGroups> captures = new ArrayList<>();
    private long profileGroupsDropped;
    private final java.util.concurrent.ScheduledExecutorService drainer;

    private ProbeManager(Options options, LongSupplier monotonicNanos, java.util.function.Supplier<Symbolizer> symbolizers,
                         RegressionTracker regressions) {
        this.options = options;
        this.monotonicNanos = monotonicNanos;
        this.symbolizers = symbolizers;
        this.regressions = regressions;
        this.intervalGroups = new LatencyGroups(options.maxProfileGroups());
        this.drainer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "loupe-latency-drain");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Loads the latency programs, resolves and attaches {@code configs}; logs one line per pattern (what was
     * attached, or why not). Empty if the latency programs cannot be loaded at all (logged).
     */
    public static Optional<ProbeManager> start(List<ProbeConfig> configs, Options options) {
        return start(configs, options, () -> Symbolizer.create(new Symbolizer.Options(Path.of("/proc"), Path.of("/proc/kallsyms"),
                16L << 20, System::nanoTime)), null);
    }

    /**
     * @param symbolizers makes the symbolizer of caller stacks (owned and closed by the manager), called only
     *                    if a probe has {@code stacks: true}; the agent's shares its process registry
     * @param regressions where each interval's calls and profile go for the regression verdicts (closed by the
     *                    manager), or null
     * @return empty if there are probes to attach and the latency programs cannot be loaded (logged)
     */
    public static Optional<ProbeManager> start(List<ProbeConfig> configs, Options options,
                                               java.util.function.Supplier<Symbolizer> symbolizers,
                                               RegressionTracker regressions) {
        return start(configs, options, symbolizers, regressions, System::nanoTime);
    }

    /** As above, on the monotonic clock {@code monotonicNanos} (tests move it past a deploy's drain). */
    static Optional<ProbeManager> start(List<ProbeConfig> configs, Options options,
                                        java.util.function.Supplier<Symbolizer> symbolizers,
                                        RegressionTracker regressions, LongSupplier monotonicNanos) {
        ProbeManager m = new ProbeManager(options, monotonicNanos, symbolizers, regressions);
        synchronized (m) {
            if (!configs.isEmpty() && !m.openKernel()) {
                if (regressions != null) {
                    regressions.close();
                }
                return Optional.empty();
            }
            m.configureLocked(configs);
        }
        long every = options.drainEvery().toNanos();
        m.drainer.scheduleWithFixedDelay(m::tick, every, every, TimeUnit.NANOSECONDS);
        return Optional.of(m);
    }

    private boolean openKernel() {
        if (probes != null) {
            return true;
        }
        try {
            probes = LatencyProbes.open(options.capacity(), options.maxInFlight(), options.maxGroups(),
                    LatencyProbes.DEFAULT_MAX_STACKS, System::nanoTime);
        } catch (BpfException | RuntimeException e) {
            problems++;
            LOG.log(System.Logger.Level.ERROR, "probes: latency programs cannot be loaded, no function is measured: " + e.getMessage());
            return false;
        }
        set = new ProbeSet(probes, options.capacity(), options.drainIdle());
        return true;
    }

    /**
     * Applies a new list of probes (a reload): functions no longer configured are detached (their counts stay
     * on /metrics), new ones attached, unchanged ones keep their probes and counts. Returns one line saying
     * what changed, for the reload's log.
     */
    public String reconfigure(List<ProbeConfig> next) {
        synchronized (this) {
            if (closed.getCount() == 0) {
                return "probes: closed";
            }
            if (!next.isEmpty() && !openKernel()) {
                return "probes: latency programs cannot be loaded";
            }
            ProbeSet.Change c = configureLocked(next);
            return "probes: " + c.attached().size() + " attached, " + c.detached().size() + " detached, "
                    + set.attachedCount() + " now";
        }
    }

    private ProbeSet.Change configureLocked(List<ProbeConfig> next) {
        configs = List.copyOf(next);
        Map<Path, Optional<FileKey>> files = new HashMap<>();
        for (ProbeConfig c : configs) {
            c.binary().ifPresent(b -> files.put(b, FileKey.of(b)));
        }
        watched = files;
        if (set == null) {
            return new ProbeSet.Change(List.of(), List.of(), List.of(), List.of());
        }
        ProbeResolver.Plan plan = new ProbeResolver(options.maxFunctions(), Path.of("/proc"), 0).plan(configs);
        problems += plan.problems().size();
        for (String p : plan.problems()) {
            LOG.log(System.Logger.Level.WARNING, p);
        }
        if (symbolizer == null && configs.stream().anyMatch(ProbeConfig::stacks)) {
            symbolizer = symbolizers.get();
        }
        ProbeSet.Change change;
        try {
            change = set.reconcile(plan.functions(), monotonicNanos.getAsLong());
        } catch (BpfException e) {
            problems++;
            LOG.log(System.Logger.Level.WARNING, "probes: applying the probes failed: " + e.getMessage());
            return new ProbeSet.Change(List.of(), List.of(), List.of(), List.of(e.getMessage()));
        }
        problems += change.problems().size();
        for (String p : change.problems()) {
            LOG.log(System.Logger.Level.WARNING, p);
        }
        if (!change.isEmpty()) {
            for (String n : plan.notes()) {
                LOG.log(System.Logger.Level.INFO, "probing " + n);
            }
        }
        for (ProbedFunction f : change.draining()) {
            LOG.log(System.Logger.Level.INFO, "probes: " + f.binary() + " " + f.function() + ": a new build is probed; build "
                    + (f.buildId().isEmpty() ? "(no build id)" : f.buildId()) + " stays probed while its processes call it");
        }
        LOG.log(System.Logger.Level.INFO, "probes: " + set.attachedCount() + " functions attached"
                + (change.attached().isEmpty() && change.detached().isEmpty() ? ""
                : " (" + change.attached().size() + " new, " + change.detached().size() + " detached)")
                + (plan.problems().size() + change.problems().size() > 0
                ? ", " + (plan.problems().size() + change.problems().size()) + " problem(s) logged above" : ""));
        return change;
    }

    @Override
    public String profileType() {
        return "latency";
    }

    @Override
    public String seriesName() {
        return "loupe_function_latency";
    }

    /** Each drainEvery: groups into the open profiles; a configured binary that now names another file is planned again. */
    private void tick() {
        try {
            synchronized (this) {
                if (closed.getCount() == 0) {
                    return;
                }
                checkBinaries();
                if (set != null) {
                    drain();
                }
            }
        } catch (BpfException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "probes: draining latency groups failed: " + e.getMessage());
        }
    }

    /** A configured binary path that appeared, went or names another file (a deploy): the probes are planned again. */
    private void checkBinaries() {
        for (var e : watched.entrySet()) {
            Optional<FileKey> now = FileKey.of(e.getKey());
            if (!now.equals(e.getValue())) {
                LOG.log(System.Logger.Level.INFO, "probes: " + e.getKey() + (now.isEmpty() ? " is gone"
                        : e.getValue().isEmpty() ? " appeared" : " is a new file (a deploy)") + "; planning its probes again");
                if (now.isPresent() && !openKernel()) {
                    return;
                }
                configureLocked(configs);
                return;
            }
        }
    }

    /**
     * Moves the kernel's groups into the open profiles (the interval's and any capture's), symbolizing caller
     * stacks now, while their processes most likely still run.
     */
    private void drain() throws BpfException {
        List<LatencyGroup> drained = probes.drainGroups();
        if (drained.isEmpty()) {
            return;
        }
        Map<StackKey, List<Frame>> symbolized = new HashMap<>();
        Map<Integer, CgroupLabels> cgroupOf = new HashMap<>();
        List<Frame> scratch = new ArrayList<>();
        for (LatencyGroup g : drained) {
            List<Frame> callers = List.of();
            // pid 0: a process outside the agent's PID namespace, which the kernel gives no stack anyway.
            if (g.stack().length > 1 && symbolizer != null && g.pid() != 0) {
                callers = symbolized.computeIfAbsent(new StackKey(g.pid(), g.stack()), k -> {
                    scratch.clear();
                    symbolizer.symbolizeUser(g.pid(), g.stack(), g.stack().length, scratch);
                    // Frame 0 is the probed function itself: the profile has one location for it.
                    return List.copyOf(scratch.subList(Math.min(1, scratch.size()), scratch.size()));
                });
            }
            // Read while the process most likely still runs; a pid reused within the cache's 30 s keeps the old labels.
            CgroupLabels cg = g.pid() == 0 ? CgroupLabels.NONE : cgroupOf.computeIfAbsent(g.pid(), pid -> cgroups.labels(pid, 0));
            LatencyGroups.Key key = new LatencyGroups.Key(g.probe(), g.pid(), g.goid(), g.bucket(), g.fineBucket(), callers,
                    g.stackLost());
            if (!intervalGroups.add(key, g.comm(), cg, g.count(), g.sumNanos())) {
                profileGroupsDropped += g.count();
            }
            for (LatencyGroups c : captures) {
                c.add(key, g.comm(), cg, g.count(), g.sumNanos());
            }
        }
    }

    private record StackKey(int pid, long[] stack) {
        @Override
        public boolean equals(Object o) {
            return o instanceof StackKey k && k.pid == pid && java.util.Arrays.equals(k.stack, stack);
        }

        @Override
        public int hashCode() {
            return 31 * pid + java.util.Arrays.hashCode(stack);
        }
    }

    @Override
    public Optional<Profile> interval(long timeNanos, long durationNanos) {
        synchronized (this) {
            if (closed.getCount() == 0) {
                return Optional.empty();
            }
            checkBinaries();
            if (set == null) {
                return Optional.empty();
            }
            Profile profile;
            try {
                maintain();
                drain();
                List<ProbeSet.FineDelta> calls = set.fineDeltas(monotonicNanos.getAsLong());
                profile = LatencyProfile.build(set.known(), intervalGroups, timeNanos, durationNanos);
                intervalGroups = new LatencyGroups(options.maxProfileGroups());
                set.endInterval();
                if (set.waitingForRoom() > 0) {
                    // A deploy of more functions than the spare ids: the previous build's ids are free now.
                    LOG.log(System.Logger.Level.INFO, "probes: " + set.waitingForRoom()
                            + " functions of a new build waited for the previous build's probe ids; planning again");
                    configureLocked(configs);
                }
                if (regressions != null) {
                    for (ProbeSet.FineDelta d : calls) {
                        regressions.record(d.function().key(), d.function().buildId(), d.calls());
                    }
                    regressions.recordProfile(profile);
                    regressions.persist();
                }
            } catch (BpfException e) {
                LOG.log(System.Logger.Level.WARNING, "probes: reading latency failed: " + e.getMessage());
                return Optional.empty();
            }
            return Optional.of(profile);
        }
    }

    /** Ages out stuck calls and detaches probes of exited pid= processes (their series keep their counts). */
    private void maintain() throws BpfException {
        probes.ageOut(options.maxInFlightAge());
        for (ProbedFunction f : set.detachExited(pid -> Files.exists(Path.of("/proc", Integer.toString(pid))))) {
            LOG.log(System.Logger.Level.INFO, "probes: process " + f.spec().pid() + " exited; probe " + f.id() + " ("
                    + f.function() + ") detached");
        }
    }

    @Override
    public Profile capture(Duration duration) throws InterruptedException {
        long start = System.currentTimeMillis() * 1_000_000L;
        long t0 = monotonicNanos.getAsLong();
        LatencyGroups mine = new LatencyGroups(options.maxProfileGroups());
        synchronized (this) {
            try {
                if (closed.getCount() > 0 && set != null) {
                    drain(); // what returned before the capture belongs to the interval only
                }
            } catch (BpfException e) {
                throw new IllegalStateException("reading latency groups: " + e.getMessage(), e);
            }
            captures.add(mine);
        }
        try {
            closed.await(duration.toNanos(), TimeUnit.NANOSECONDS);
            synchronized (this) {
                if (closed.getCount() > 0 && set != null) {
                    drain();
                }
            }
        } catch (BpfException e) {
            throw new IllegalStateException("reading latency groups: " + e.getMessage(), e);
        } finally {
            synchronized (this) {
                captures.remove(mine);
            }
        }
        synchronized (this) {
            return LatencyProfile.build(set == null ? List.of() : set.known(), mine, start, monotonicNanos.getAsLong() - t0);
        }
    }

    @Override
    public Optional<Profile> stored(String parameter, String value) {
        if (regressions == null) {
            throw new IllegalArgumentException("latency baselines are off");
        }
        if (parameter.equals("window") && value.equals("current")) {
            return regressions.currentWindowProfile();
        }
        if (parameter.equals("baseline")) {
            Optional<BaselineKind> kind = BaselineKind.ofLabel(value);
            if (kind.isPresent()) {
                return regressions.baselineProfile(kind.get());
            }
        }
        throw new IllegalArgumentException(parameter + "=" + value + ": use baseline=previous_build, baseline=trailing or window=current");
    }

    /** Applies new regression settings (a reload); no-op without baselines. */
    public void updateRegressionSettings(RegressionTracker.Settings s) {
        if (regressions != null) {
            regressions.updateSettings(s);
        }
    }

    @Override
    public void registerMetrics(PrometheusRegistry registry) {
        registry.register(new LatencyMetrics(this::metricsSnapshot));
        if (regressions != null) {
            registry.register(regressions.metrics(this::probedNow));
        }
    }

    /** The histograms read from the kernel now (the last ones once closed) and the probes' counters. */
    private LatencyMetrics.Snapshot metricsSnapshot() {
        synchronized (this) {
            if (closed.getCount() > 0 && set != null) {
                try {
                    lastTotals = set.totals(probes.readHistograms());
                    lastStats = probes.stats();
                } catch (BpfException e) {
                    LOG.log(System.Logger.Level.WARNING, "probes: reading histograms failed: " + e.getMessage());
                }
            }
            int attachedNow = closed.getCount() > 0 && set != null ? set.attachedCount() : 0;
            return new LatencyMetrics.Snapshot(lastTotals, lastStats, attachedNow, problems, profileGroupsDropped);
        }
    }

    /** Whether a function is attached now (or its previous build still drains). */
    private boolean probedNow(FunctionKey f) {
        synchronized (this) {
            if (set == null || closed.getCount() == 0) {
                return false;
            }
            long now = monotonicNanos.getAsLong();
            if (probedKeys == null || now - probedKeysAt > 1_000_000_000L) { // once per scrape, not per series
                probedKeys = new java.util.HashSet<>();
                set.known().forEach(p -> probedKeys.add(p.key()));
                probedKeysAt = now;
            }
            return probedKeys.contains(f);
        }
    }

    private java.util.Set<FunctionKey> probedKeys;
    private long probedKeysAt;

    /** Functions attached now, as "binary function" strings (for logs and tests). */
    public List<String> attachedFunctions() {
        synchronized (this) {
            return set == null ? List.of() : set.active().stream().map(f -> f.binary() + " " + f.function()).toList();
        }
    }

    /** Detaches every probe and unloads the programs (the final counts stay on /metrics); saves the baselines. */
    @Override
    public void close() {
        drainer.shutdownNow();
        synchronized (this) {
            if (closed.getCount() == 0) {
                return;
            }
            if (set != null) {
                try {
                    lastTotals = set.totals(probes.readHistograms());
                    lastStats = probes.stats();
                } catch (BpfException e) {
                    LOG.log(System.Logger.Level.WARNING, "probes: final read failed: " + e.getMessage());
                }
            }
            closed.countDown();
            if (probes != null) {
                probes.close();
            }
            if (symbolizer != null) {
                symbolizer.close();
            }
            if (regressions != null) {
                regressions.close();
            }
        }
    }
}
