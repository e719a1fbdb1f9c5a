package dev.loupe.agent.latency;

import dev.loupe.agent.sampling.SideProfileSource;
import dev.loupe.bpf.BpfException;
import dev.loupe.bpf.LatencyGroup;
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
 * latency profile per interval (deltas). Each interval it also forgets calls in flight for longer than
 * {@link Options#maxInFlightAge()}, detaches the probes of {@code pid=} processes that exited, and attaches
 * probes on binary paths that did not exist at start once they do.
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
     */
    /**
     * @param maxGroups      groups (function, process, goroutine, stack, bucket) the kernel holds between two drains
     * @param drainEvery     how often the kernel's groups are drained and symbolized (while processes are alive)
     * @param maxProfileGroups groups one latency profile holds; calls beyond are counted, not shown
     */
    public record Options(int maxFunctions, int maxInFlight, Duration maxInFlightAge, int maxGroups, Duration drainEvery,
                          int maxProfileGroups) {
        public static Options defaults(int maxFunctions) {
            return new Options(maxFunctions, LatencyProbes.DEFAULT_MAX_IN_FLIGHT, Duration.ofMinutes(30),
                    LatencyProbes.DEFAULT_MAX_GROUPS, Duration.ofSeconds(1), 65536);
        }
    }

    private final LatencyProbes probes;
    private final Options options;
    private final LongSupplier monotonicNanos;
    private final List<ProbedFunction> functions; // every function ever attached, in attach order
    private final ProbeResolver resolver;
    private List<ProbeConfig> missing;
    private final Map<Integer, Integer> pidOfProbe = new HashMap<>();
    private final Map<Integer, LatencyHistogram> cumulative = new HashMap<>();
    private final CountDownLatch closed = new CountDownLatch(1);
    private long problems;
    private LatencyStats lastStats;
    private final Symbolizer symbolizer; // null: no probe has stacks on
    private LatencyGroups intervalGroups;
    private final List<LatencyGroups> captures = new ArrayList<>();
    private long profileGroupsDropped;
    private final java.util.concurrent.ScheduledExecutorService drainer;

    private ProbeManager(LatencyProbes probes, Options options, LongSupplier monotonicNanos, ProbeResolver resolver,
                         List<ProbeConfig> missing, Symbolizer symbolizer) {
        this.symbolizer = symbolizer;
        this.intervalGroups = new LatencyGroups(options.maxProfileGroups());
        this.drainer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "loupe-latency-drain");
            t.setDaemon(true);
            return t;
        });
        this.probes = probes;
        this.options = options;
        this.monotonicNanos = monotonicNanos;
        this.resolver = resolver;
        this.missing = List.copyOf(missing);
        this.functions = new java.util.concurrent.CopyOnWriteArrayList<>();
    }

    /**
     * Loads the latency programs, resolves and attaches {@code configs}; logs one line per pattern (what was
     * attached, or why not). Empty if the latency programs cannot be loaded at all (logged).
     */
    public static Optional<ProbeManager> start(List<ProbeConfig> configs, Options options) {
        return start(configs, options, () -> Symbolizer.create(new Symbolizer.Options(Path.of("/proc"), Path.of("/proc/kallsyms"),
                16L << 20, System::nanoTime)));
    }

    /**
     * @param symbolizers makes the symbolizer of caller stacks (owned and closed by the manager), called only
     *                    if a probe has {@code stacks: true}; the agent's shares its process registry
     */
    public static Optional<ProbeManager> start(List<ProbeConfig> configs, Options options,
                                               java.util.function.Supplier<Symbolizer> symbolizers) {
        ProbeResolver resolver = new ProbeResolver(options.maxFunctions(), Path.of("/proc"), 0);
        ProbeResolver.Plan plan = resolver.plan(configs);
        LatencyProbes probes;
        try {
            // Room for the cap when binaries may still appear; else for what is planned (the maps are per CPU).
            int room = plan.missing().isEmpty() ? plan.functions().size() : options.maxFunctions();
            probes = LatencyProbes.open(Math.max(1, room), options.maxInFlight(), options.maxGroups(),
                    LatencyProbes.DEFAULT_MAX_STACKS, System::nanoTime);
        } catch (BpfException | RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "probes: latency programs cannot be loaded, no function is measured: " + e.getMessage());
            return Optional.empty();
        }
        Symbolizer symbolizer = configs.stream().anyMatch(ProbeConfig::stacks) ? symbolizers.get() : null;
        ProbeManager m = new ProbeManager(probes, options, System::nanoTime, resolver, plan.missing(), symbolizer);
        synchronized (m) {
            m.attachPlan(plan);
        }
        long every = options.drainEvery().toNanos();
        m.drainer.scheduleWithFixedDelay(m::drainQuietly, every, every, TimeUnit.NANOSECONDS);
        LOG.log(System.Logger.Level.INFO, "probes: " + m.functions.size() + " functions attached"
                + (m.problems > 0 ? ", " + m.problems + " problem(s) logged above" : ""));
        return Optional.of(m);
    }

    private void attachPlan(ProbeResolver.Plan plan) {
        problems += plan.problems().size();
        for (String p : plan.problems()) {
            LOG.log(System.Logger.Level.WARNING, p);
        }
        for (ProbedFunction f : plan.functions()) {
            try {
                probes.attach(f.spec());
                functions.add(f);
                if (f.spec().pid() != -1) {
                    pidOfProbe.put(f.id(), f.spec().pid());
                }
            } catch (BpfException | RuntimeException e) {
                problems++;
                LOG.log(System.Logger.Level.WARNING, "probe " + f.binary() + ": " + f.function() + ": cannot attach: " + e.getMessage());
            }
        }
        for (String n : plan.notes()) {
            LOG.log(System.Logger.Level.INFO, "probing " + n);
        }
    }

    @Override
    public String profileType() {
        return "latency";
    }

    @Override
    public String seriesName() {
        return "loupe_function_latency";
    }

    /** Cumulative counts of every function since attach (detached ones keep their final counts). */
    private synchronized Map<Integer, LatencyHistogram> read() throws BpfException {
        cumulative.putAll(probes.readHistograms());
        return Map.copyOf(cumulative);
    }

    private void drainQuietly() {
        try {
            synchronized (this) {
                if (closed.getCount() > 0) {
                    drain();
                }
            }
        } catch (BpfException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "probes: draining latency groups failed: " + e.getMessage());
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
            LatencyGroups.Key key = new LatencyGroups.Key(g.probe(), g.pid(), g.goid(), g.bucket(), g.fineBucket(), callers,
                    g.stackLost());
            if (!intervalGroups.add(key, g.comm(), g.count(), g.sumNanos())) {
                profileGroupsDropped += g.count();
            }
            for (LatencyGroups c : captures) {
                c.add(key, g.comm(), g.count(), g.sumNanos());
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
            try {
                read();
                maintain();
                drain();
            } catch (BpfException e) {
                LOG.log(System.Logger.Level.WARNING, "probes: reading latency failed: " + e.getMessage());
                return Optional.empty();
            }
            LatencyGroups done = intervalGroups;
            intervalGroups = new LatencyGroups(options.maxProfileGroups());
            return Optional.of(LatencyProfile.build(functions, done, timeNanos, durationNanos));
        }
    }

    /** Ages out stuck calls and detaches probes of exited pid= processes (their series keep their counts). */
    private void maintain() throws BpfException {
        probes.ageOut(options.maxInFlightAge());
        if (!missing.isEmpty()) {
            List<ProbeConfig> appeared = missing.stream().filter(c -> Files.isRegularFile(c.binary().orElseThrow())).toList();
            if (!appeared.isEmpty()) {
                missing = missing.stream().filter(c -> !appeared.contains(c)).toList();
                attachPlan(resolver.plan(appeared));
            }
        }
        for (var it = pidOfProbe.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (!Files.exists(Path.of("/proc", Integer.toString(e.getValue())))) {
                probes.detach(e.getKey());
                it.remove();
                LOG.log(System.Logger.Level.INFO, "probes: process " + e.getValue() + " exited; probe " + e.getKey() + " detached");
            }
        }
        cumulative.putAll(probes.readHistograms()); // the detached probes' final counts
    }

    @Override
    public Profile capture(Duration duration) throws InterruptedException {
        long start = System.currentTimeMillis() * 1_000_000L;
        long t0 = monotonicNanos.getAsLong();
        LatencyGroups mine = new LatencyGroups(options.maxProfileGroups());
        synchronized (this) {
            try {
                if (closed.getCount() > 0) {
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
                if (closed.getCount() > 0) {
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
        return LatencyProfile.build(functions, mine, start, monotonicNanos.getAsLong() - t0);
    }

    @Override
    public void registerMetrics(PrometheusRegistry registry) {
        registry.register(new LatencyMetrics(this::metricsSnapshot));
    }

    /** The histograms read from the kernel now (the last ones once closed) and the probes' counters. */
    private LatencyMetrics.Snapshot metricsSnapshot() {
        synchronized (this) {
            Map<Integer, LatencyHistogram> now;
            int attachedNow;
            if (closed.getCount() > 0) {
                try {
                    now = read();
                    lastStats = probes.stats();
                } catch (BpfException e) {
                    LOG.log(System.Logger.Level.WARNING, "probes: reading histograms failed: " + e.getMessage());
                    now = Map.copyOf(cumulative);
                }
                attachedNow = probes.attachedProbes().size();
            } else {
                now = Map.copyOf(cumulative);
                attachedNow = 0;
            }
            return new LatencyMetrics.Snapshot(functions, now, lastStats, attachedNow, problems, profileGroupsDropped);
        }
    }

    /** Functions attached at start, as "binary function" strings (for logs and tests). */
    public List<String> attachedFunctions() {
        return functions.stream().map(f -> f.binary() + " " + f.function()).toList();
    }

    /** Detaches every probe and unloads the programs (the final counts stay on /metrics). */
    @Override
    public void close() {
        drainer.shutdownNow();
        synchronized (this) {
            if (closed.getCount() == 0) {
                return;
            }
            try {
                read();
                lastStats = probes.stats();
            } catch (BpfException e) {
                LOG.log(System.Logger.Level.WARNING, "probes: final read failed: " + e.getMessage());
            }
            closed.countDown();
            probes.close();
            if (symbolizer != null) {
                symbolizer.close();
            }
        }
    }
}
