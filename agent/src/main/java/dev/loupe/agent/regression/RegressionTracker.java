package dev.loupe.agent.regression;

import dev.loupe.pprof.proto.Profile;
import io.prometheus.metrics.model.registry.MultiCollector;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * Each probed function's baselines and current window, their verdicts, their profiles and their files: the agent
 * side of latency regression alerts (docs/alerting.md, "Baselines"). Knows nothing of BPF: the agent feeds it each
 * interval's exact calls per function and build ({@link #record}) and the interval's latency profile
 * ({@link #recordProfile}); time is the injected wall clock (a clock that goes back is held at its latest value).
 *
 * <ul>
 *   <li>The <b>current window</b> is the function's calls of the last {@code window}, in 10 slots of window/10
 *       by wall time (between 90 % and 100 % of the window).</li>
 *   <li>The <b>trailing</b> baseline is the current build's calls over the {@code trailingSpan} before the window
 *       (of its last call: an idle function keeps its last span of activity), in 24 + 1 slots of an hour with the
 *       defaults (the span / 24, rounded down to whole window slots, at least one).</li>
 *   <li>The <b>previous build</b> baseline: when a new build id has calls, the old build's window and trailing
 *       calls (its last ~24 h) become it; calls of the previous build while the current one still runs (old
 *       processes) join it. Rules in {@link FunctionBaselines}.</li>
 * </ul>
 *
 * <p>Memory per function with calls: the written window slot, the window's and the trailing totals and the
 * previous baseline as live histograms ({@link FineHistogram#BUCKETS} longs each, about 2 KB), the other 9
 * window and up to 25 trailing slots as bytes (about 3 bytes per non-empty bucket, 150 bytes for a latency that
 * spans two decades): 12.9 KB measured (docs/alerting.md), 13 MB for 1,000 functions; plus profile samples, at
 * most {@link Settings#maxProfileSamples()} in all (about 130 bytes each: 13 MB at the default cap).
 *
 * <p>Files: one per function under the directory; {@link #persist()} writes a function whose state changed at
 * most every {@value WriteSchedule#EVERY_MINUTES} minutes (each at its own phase, so writes spread out) and at
 * once after a deploy; {@link #close()} writes everything changed. Call {@link #persist()} every interval.
 *
 * <p>Thread-safe: every method holds the tracker's lock (the agent's interval thread records, HTTP threads read).
 */
public final class RegressionTracker implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RegressionTracker.class.getName());
    /** A function with no calls for this long is forgotten, file and all (renamed, unprobed). */
    static final Duration FORGET_AFTER = Duration.ofDays(30);
    private static final int INTERNED_MAX = 1 << 18;

    /**
     * @param window            the current window's length (the verdict compares it with each baseline)
     * @param minCalls          calls each side needs for a verdict
     * @param threshold         the p50 or p90 ratio that counts as slower (with a significant rank test)
     * @param warmup            a new build's calls this long after its deploy are left out of its window and history
     * @param trailingSpan      the trailing baseline's length, and the previous build's span kept at a deploy
     * @param maxProfileSamples profile samples held in all baselines and windows together; more are left out
     */
    public record Settings(Duration window, long minCalls, double threshold, Duration warmup, Duration trailingSpan,
                           int maxProfileSamples) {
        public static final Duration DEFAULT_TRAILING_SPAN = Duration.ofHours(24);
        public static final Duration DEFAULT_WARMUP = Duration.ofMinutes(1);
        public static final int DEFAULT_MAX_PROFILE_SAMPLES = 100_000;

        public Settings {
            if (window.toMillis() < SlotTiming.WINDOW_SLOTS) {
                throw new IllegalArgumentException("window " + window + " is shorter than " + SlotTiming.WINDOW_SLOTS + " ms");
            }
            if (trailingSpan.compareTo(window) < 0) {
                throw new IllegalArgumentException("trailing span " + trailingSpan + " is shorter than the window " + window);
            }
            if (warmup.isNegative()) {
                throw new IllegalArgumentException("warm-up " + warmup + " < 0");
            }
            if (maxProfileSamples < 0) {
                throw new IllegalArgumentException("max profile samples " + maxProfileSamples + " < 0");
            }
            new LatencyComparison(minCalls, threshold, LatencyComparison.DEFAULT_ALPHA); // checks both
        }

        /** The flags' settings with the default trailing span (24 h) and profile sample cap. */
        public Settings(Duration window, long minCalls, double threshold, Duration warmup) {
            this(window, minCalls, threshold, warmup, DEFAULT_TRAILING_SPAN, DEFAULT_MAX_PROFILE_SAMPLES);
        }
    }

    private final LongSupplier wallMillis;
    private final WriteSchedule writes;
    private final Map<FunctionKey, FunctionBaselines> functions = new TreeMap<>();
    private final Interner<Object> interner = new Interner<>(INTERNED_MAX);
    private final SampleBudget budget = new SampleBudget();
    private final Map<String, String> loggedBuild = new HashMap<>(); // binary → the last build id a deploy was logged for
    private Settings settings;
    private SlotTiming timing;
    private LatencyComparison comparison;
    private long latestNow = Long.MIN_VALUE;
    private boolean warnedProfileType;

    private RegressionTracker(BaselineStore store, Settings settings, LongSupplier wallMillis) {
        this.writes = new WriteSchedule(store);
        this.wallMillis = wallMillis;
        apply(settings);
    }

    /**
     * Opens the baselines kept in {@code directory} (created, owner-only, on the first write). Never fails on what
     * the directory holds: unreadable files are logged, set aside and their functions start fresh.
     */
    public static RegressionTracker open(Path directory, Settings settings, LongSupplier wallMillis) {
        BaselineStore store = new BaselineStore(directory);
        RegressionTracker t = new RegressionTracker(store, settings, wallMillis);
        synchronized (t) {
            long now = t.now();
            List<FunctionBaselines> loaded = store.load(t.interner);
            for (FunctionBaselines f : loaded) {
                t.functions.put(f.key, f);
                t.writes.known(f.key, now);
            }
            if (!loaded.isEmpty()) {
                LOG.log(System.Logger.Level.INFO, "latency baselines: " + loaded.size() + " function(s) loaded from " + directory);
            }
        }
        return t;
    }

    private void apply(Settings s) {
        this.settings = s;
        this.timing = SlotTiming.of(s);
        this.comparison = new LatencyComparison(s.minCalls(), s.threshold(), LatencyComparison.DEFAULT_ALPHA);
    }

    /** Takes effect at once: verdicts use the new figures; slots of the old length expire as they would have. */
    public synchronized void updateSettings(Settings s) {
        apply(s);
    }

    public synchronized Settings settings() {
        return settings;
    }

    /**
     * One interval's calls of one function from one build (exact, from the kernel's fine histogram). Empty
     * histograms are ignored (a build is seen by its calls). A new build id is a deploy, see {@link FunctionBaselines};
     * a binary without any build id should pass "" (then it never has a previous build).
     */
    public synchronized void record(FunctionKey function, String buildId, FineHistogram calls) {
        java.util.Objects.requireNonNull(buildId, "buildId");
        if (calls.totalCount() == 0) {
            return;
        }
        long now = now();
        FunctionBaselines f = functions.computeIfAbsent(function, k -> {
            writes.known(k, now);
            return new FunctionBaselines(k);
        });
        String before = f.currentBuild();
        if (f.record(buildId, calls, now, timing) == FunctionBaselines.Change.DEPLOY) {
            writes.deployed(function);
            logDeploy(function, before, buildId, f.previous().calls());
        } else {
            writes.changed(function);
        }
    }

    private void logDeploy(FunctionKey f, String from, String to, long baselineCalls) {
        if (!to.equals(loggedBuild.put(f.binary(), to))) {
            LOG.log(System.Logger.Level.INFO, String.format(Locale.ROOT,
                    "latency baselines: %s is now build %s (was %s): the previous build's calls are its functions' "
                            + "previous_build baselines (%s: %d calls)", f.binary(), to, from, f.function(), baselineCalls));
        }
    }

    /**
     * Adds an interval latency profile's samples (labels {@code binary}, {@code function}, {@code build_id};
     * without {@code build_id}, the function's current build) to the current window's slot or to the previous
     * build's baseline, merged by stack and the {@code le_us}/{@code le_ns} labels. Samples of a function or build
     * with no recorded calls are skipped: {@link #record} the interval's calls first.
     */
    public synchronized void recordProfile(Profile intervalLatencyProfile) {
        if (!IntervalProfileReader.isLatencyProfile(intervalLatencyProfile)) {
            if (!warnedProfileType) {
                warnedProfileType = true;
                LOG.log(System.Logger.Level.WARNING, "latency baselines: a profile without the latency sample types "
                        + "(calls/count, latency/nanoseconds) was ignored");
            }
            return;
        }
        long now = now();
        long held = 0;
        for (FunctionBaselines f : functions.values()) {
            held += f.sampleCount();
        }
        budget.refill(settings.maxProfileSamples(), held);
        IntervalProfileReader.read(intervalLatencyProfile, interner, (function, build, key, calls, nanos) -> {
            FunctionBaselines f = functions.get(function);
            ProfileSamples target = f == null ? null : f.samplesOf(build, now, timing);
            if (target != null) {
                target.add(key, calls, nanos, budget);
                writes.changed(function);
            }
        });
    }

    /** Each function's current window against each baseline it has, at the clock's now; ordered by function. */
    public synchronized List<FunctionStatus> evaluate() {
        long now = now();
        advance(now);
        List<FunctionStatus> out = new ArrayList<>();
        for (FunctionBaselines f : functions.values()) {
            if (f.currentBuild() == null) {
                continue;
            }
            FineHistogram window = f.history().windowSum();
            LatencyQuantiles current = LatencyQuantiles.of(window);
            if (f.previousBuild() != null) {
                FineHistogram previous = f.previous().histogram();
                out.add(new FunctionStatus(f.key, BaselineKind.PREVIOUS_BUILD, f.currentBuild(), f.previousBuild(),
                        comparison.compare(previous, window), LatencyQuantiles.of(previous), current));
            }
            FineHistogram trailing = f.history().trailingSum();
            out.add(new FunctionStatus(f.key, BaselineKind.TRAILING, f.currentBuild(), f.currentBuild(),
                    comparison.compare(trailing, window), LatencyQuantiles.of(trailing), current));
        }
        return out;
    }

    /**
     * All functions' samples of one baseline as one latency profile (the same sample types as the interval
     * profiles, for {@code go tool pprof -diff_base}); empty when no function has that baseline.
     */
    public synchronized Optional<Profile> baselineProfile(BaselineKind kind) {
        long now = now();
        advance(now);
        List<BaselineProfiles.Part> parts = new ArrayList<>();
        long start = Long.MAX_VALUE;
        long end = Long.MIN_VALUE;
        boolean any = false;
        for (FunctionBaselines f : functions.values()) {
            if (kind == BaselineKind.PREVIOUS_BUILD && f.previousBuild() != null) {
                any = true;
                parts.add(new BaselineProfiles.Part(f.key, f.previousBuild(), f.previous().samples));
                start = Math.min(start, f.previous().start);
                end = Math.max(end, f.previous().end);
            } else if (kind == BaselineKind.TRAILING && f.currentBuild() != null) {
                any = true;
                for (Slot s : f.history().trailingSlots()) {
                    parts.add(new BaselineProfiles.Part(f.key, f.currentBuild(), s.samples));
                    start = Math.min(start, s.start);
                    end = Math.max(end, s.end);
                }
            }
        }
        if (!any) {
            return Optional.empty();
        }
        String what = kind == BaselineKind.PREVIOUS_BUILD
                ? "the previous build's calls (build_id) over its last " + text(settings.trailingSpan()) + " and its old processes' since"
                : "the current build's calls over the " + text(settings.trailingSpan()) + " before the current window";
        return Optional.of(profile(start == Long.MAX_VALUE ? now : start, end == Long.MIN_VALUE ? now : end,
                "latency baseline " + kind.label() + ": " + what, parts));
    }

    /** All functions' samples of the current window (the current builds'); empty when no function has calls yet. */
    public synchronized Optional<Profile> currentWindowProfile() {
        long now = now();
        advance(now);
        List<BaselineProfiles.Part> parts = new ArrayList<>();
        boolean any = false;
        for (FunctionBaselines f : functions.values()) {
            if (f.currentBuild() != null) {
                any = true;
                for (Slot s : f.history().windowSlots()) {
                    parts.add(new BaselineProfiles.Part(f.key, f.currentBuild(), s.samples));
                }
            }
        }
        if (!any) {
            return Optional.empty();
        }
        return Optional.of(profile(timing.windowStart(now), now,
                "latency current window: the current builds' calls over the last " + text(settings.window()), parts));
    }

    private Profile profile(long start, long end, String what, List<BaselineProfiles.Part> parts) {
        List<String> comments = new ArrayList<>();
        comments.add(what + "; one sample per function, build, caller stack and bucket (pid, goid and comm merged)");
        if (budget.droppedSamples() > 0) {
            comments.add(budget.droppedSamples() + " interval profile samples (" + budget.droppedCalls()
                    + " calls) left out of baselines and windows since start: more than "
                    + settings.maxProfileSamples() + " samples (the verdicts count every call)");
        }
        return BaselineProfiles.build(start, end, comments, parts);
    }

    /** Interval profile samples left out of baselines and windows since the start (the sample cap). */
    public synchronized long droppedProfileSamples() {
        return budget.droppedSamples();
    }

    /**
     * Writes the functions whose state changed: after a deploy at once, otherwise at most every
     * {@value WriteSchedule#EVERY_MINUTES} minutes per function. Cheap when nothing is due; call it every
     * interval. A failed write is logged (once until writing works again) and retried at the next call.
     */
    public synchronized void persist() {
        long now = now();
        advance(now);
        writes.write(now, false, functions);
    }

    /** Writes everything that changed (the next start reads the same baselines and window). */
    @Override
    public synchronized void close() {
        long now = now();
        advance(now);
        writes.write(now, true, functions);
    }

    /** The {@code loupe_function_latency_*} series of {@link #evaluate()}, evaluated at each scrape. */
    public MultiCollector metrics() {
        return metrics(f -> true);
    }

    /**
     * As {@link #metrics()}, for the functions {@code shown} accepts only: the agent shows the functions it probes
     * now, not every function whose baselines are kept (a probe removed from the list, another agent's state).
     */
    public MultiCollector metrics(java.util.function.Predicate<FunctionKey> shown) {
        return new RegressionMetrics(() -> evaluate().stream().filter(s -> shown.test(s.function())).toList(),
                this::droppedProfileSamples);
    }

    /** Slots move and expire; functions idle for {@link #FORGET_AFTER} are forgotten. */
    private void advance(long now) {
        for (Iterator<FunctionBaselines> it = functions.values().iterator(); it.hasNext(); ) {
            FunctionBaselines f = it.next();
            if (now - f.currentLastCall() > FORGET_AFTER.toMillis()) {
                it.remove();
                writes.forget(f.key);
            } else if (f.advance(now, timing)) {
                writes.changed(f.key);
            }
        }
    }

    /** "10m", "24h", "90s": the flags' spelling. */
    private static String text(Duration d) {
        long ms = d.toMillis();
        for (var unit : List.of(Map.entry(3_600_000L, "h"), Map.entry(60_000L, "m"), Map.entry(1_000L, "s"))) {
            if (ms % unit.getKey() == 0) {
                return ms / unit.getKey() + unit.getValue();
            }
        }
        return ms + "ms";
    }

    private long now() {
        latestNow = Math.max(latestNow, wallMillis.getAsLong());
        return latestNow;
    }
}
