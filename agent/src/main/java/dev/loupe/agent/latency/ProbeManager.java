package dev.loupe.agent.latency;

import dev.loupe.agent.SideProfileSource;
import dev.loupe.bpf.BpfException;
import dev.loupe.bpf.LatencyHistogram;
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
    public record Options(int maxFunctions, int maxInFlight, Duration maxInFlightAge) {
        public static Options defaults(int maxFunctions) {
            return new Options(maxFunctions, LatencyProbes.DEFAULT_MAX_IN_FLIGHT, Duration.ofMinutes(30));
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
    private Map<Integer, LatencyHistogram> intervalBase = Map.of();
    private final CountDownLatch closed = new CountDownLatch(1);
    private long problems;
    private LatencyStats lastStats;

    private ProbeManager(LatencyProbes probes, Options options, LongSupplier monotonicNanos, ProbeResolver resolver,
                         List<ProbeConfig> missing) {
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
        if (configs.stream().anyMatch(ProbeConfig::stacks)) {
            LOG.log(System.Logger.Level.WARNING, "probes: stacks: true is not available: latency is aggregated per function"
                    + " in the kernel, so latency profiles have one location per function and no caller stack");
        }
        ProbeResolver resolver = new ProbeResolver(options.maxFunctions(), Path.of("/proc"), 0);
        ProbeResolver.Plan plan = resolver.plan(configs);
        LatencyProbes probes;
        try {
            // Room for the cap when binaries may still appear; else for what is planned (the maps are per CPU).
            int room = plan.missing().isEmpty() ? plan.functions().size() : options.maxFunctions();
            probes = LatencyProbes.open(Math.max(1, room), options.maxInFlight(), System::nanoTime);
        } catch (BpfException | RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "probes: latency programs cannot be loaded, no function is measured: " + e.getMessage());
            return Optional.empty();
        }
        ProbeManager m = new ProbeManager(probes, options, System::nanoTime, resolver, plan.missing());
        synchronized (m) {
            m.attachPlan(plan);
        }
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

    @Override
    public Optional<Profile> interval(long timeNanos, long durationNanos) {
        Map<Integer, LatencyHistogram> now;
        synchronized (this) {
            if (closed.getCount() == 0) {
                return Optional.empty();
            }
            try {
                now = read();
                maintain();
            } catch (BpfException e) {
                LOG.log(System.Logger.Level.WARNING, "probes: reading histograms failed: " + e.getMessage());
                return Optional.empty();
            }
            Map<Integer, LatencyHistogram> base = intervalBase;
            intervalBase = now;
            return Optional.of(LatencyProfile.build(functions, LatencyProfile.delta(now, base), timeNanos, durationNanos));
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
        Map<Integer, LatencyHistogram> before;
        try {
            before = read();
        } catch (BpfException e) {
            throw new IllegalStateException("reading latency histograms: " + e.getMessage(), e);
        }
        closed.await(duration.toNanos(), TimeUnit.NANOSECONDS);
        Map<Integer, LatencyHistogram> after;
        synchronized (this) {
            try {
                after = closed.getCount() == 0 ? Map.copyOf(cumulative) : read();
            } catch (BpfException e) {
                throw new IllegalStateException("reading latency histograms: " + e.getMessage(), e);
            }
        }
        return LatencyProfile.build(functions, LatencyProfile.delta(after, before), start, monotonicNanos.getAsLong() - t0);
    }

    @Override
    public void appendMetrics(StringBuilder out) {
        Map<Integer, LatencyHistogram> now;
        LatencyStats stats;
        int attachedNow;
        long problemsNow;
        synchronized (this) {
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
            stats = lastStats;
            problemsNow = problems;
        }
        LatencyMetrics.render(out, functions, now, stats, attachedNow, problemsNow);
    }

    /** Functions attached at start, as "binary function" strings (for logs and tests). */
    public List<String> attachedFunctions() {
        return functions.stream().map(f -> f.binary() + " " + f.function()).toList();
    }

    /** Detaches every probe and unloads the programs (the final counts stay on /metrics). */
    @Override
    public synchronized void close() {
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
    }
}
