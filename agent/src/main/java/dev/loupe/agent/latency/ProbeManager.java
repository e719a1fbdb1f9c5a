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
 * {@link Options#maxInFlightAge()} and detaches the probes of {@code pid=} processes that exited.
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
    private final Map<Integer, Integer> pidOfProbe = new HashMap<>();
    private final Map<Integer, LatencyHistogram> cumulative = new HashMap<>();
    private Map<Integer, LatencyHistogram> intervalBase = Map.of();
    private final CountDownLatch closed = new CountDownLatch(1);
    private long problems;
    private LatencyStats lastStats;

    private ProbeManager(LatencyProbes probes, Options options, LongSupplier monotonicNanos, List<ProbedFunction> functions,
                         long problems) {
        this.probes = probes;
        this.options = options;
        this.monotonicNanos = monotonicNanos;
        this.functions = functions;
        this.problems = problems;
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
        ProbeResolver.Plan plan = new ProbeResolver(options.maxFunctions(), Path.of("/proc"), 0).plan(configs);
        LatencyProbes probes;
        try {
            probes = LatencyProbes.open(Math.max(1, plan.functions().size()), options.maxInFlight(), System::nanoTime);
        } catch (BpfException | RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "probes: latency programs cannot be loaded, no function is measured: " + e.getMessage());
            return Optional.empty();
        }
        long problems = plan.problems().size();
        for (String p : plan.problems()) {
            LOG.log(System.Logger.Level.WARNING, p);
        }
        List<ProbedFunction> attached = new ArrayList<>();
        for (ProbedFunction f : plan.functions()) {
            try {
                probes.attach(f.spec());
                attached.add(f);
            } catch (BpfException | RuntimeException e) {
                problems++;
                LOG.log(System.Logger.Level.WARNING, "probe " + f.binary() + ": " + f.function() + ": cannot attach: " + e.getMessage());
            }
        }
        for (String n : plan.notes()) {
            LOG.log(System.Logger.Level.INFO, "probing " + n);
        }
        ProbeManager m = new ProbeManager(probes, options, System::nanoTime, attached, problems);
        for (ProbedFunction f : attached) {
            if (f.spec().pid() != -1) {
                m.pidOfProbe.put(f.id(), f.spec().pid());
            }
        }
        LOG.log(System.Logger.Level.INFO, "probes: " + attached.size() + " functions attached"
                + (problems > 0 ? ", " + problems + " problem(s) logged above" : ""));
        return Optional.of(m);
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
