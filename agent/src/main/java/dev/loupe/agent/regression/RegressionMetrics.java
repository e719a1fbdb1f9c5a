package dev.loupe.agent.regression;

import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.InfoSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The verdicts on /metrics, one series per (binary, function, baseline) that exists, as
 * config/alerting/loupe-rules.yml reads them: {@value #RATIO} (current window's quantile over the baseline's, at
 * 0.5, 0.9 and 0.99; NaN when a side has no calls), {@value #REGRESSED} (1 when the verdict says slower, 0 also
 * when there are too few calls) and {@value #INFO} (= 1, with both build ids); and the latencies the ratios divide,
 * so an alert can say "p99 2.1 ms → 6.3 ms": {@value #BASELINE_QUANTILE} per baseline and {@value #WINDOW_QUANTILE}
 * once per function, in seconds (NaN when that side has no calls). Evaluated at each scrape.
 */
final class RegressionMetrics implements MultiCollector {
    static final String RATIO = "loupe_function_latency_regression_ratio";
    static final String REGRESSED = "loupe_function_latency_regressed";
    /** Written {@code loupe_function_latency_baseline_info}: the client adds {@code _info} to info metrics. */
    static final String INFO = "loupe_function_latency_baseline";
    static final String DROPPED = "loupe_function_latency_baseline_samples_dropped";
    static final String BASELINE_QUANTILE = "loupe_function_latency_baseline_quantile_seconds";
    static final String WINDOW_QUANTILE = "loupe_function_latency_window_quantile_seconds";
    private static final String[] QUANTILE_LABELS = {"0.5", "0.9", "0.99"};

    private final Supplier<List<FunctionStatus>> statuses;
    private final LongSupplier droppedSamples;

    RegressionMetrics(Supplier<List<FunctionStatus>> statuses, LongSupplier droppedSamples) {
        this.statuses = statuses;
        this.droppedSamples = droppedSamples;
    }

    @Override
    public MetricSnapshots collect() {
        GaugeSnapshot.Builder ratio = GaugeSnapshot.builder().name(RATIO)
                .help("Current window's latency quantile divided by the baseline's (NaN when a side has no calls).");
        GaugeSnapshot.Builder regressed = GaugeSnapshot.builder().name(REGRESSED)
                .help("1 when the current window is slower than the baseline (enough calls, significant, above the threshold), else 0.");
        InfoSnapshot.Builder info = InfoSnapshot.builder().name(INFO)
                .help("The build compared (build_id) and the baseline's build (baseline_build_id).");
        GaugeSnapshot.Builder baselineQuantile = GaugeSnapshot.builder().name(BASELINE_QUANTILE)
                .help("The baseline's latency quantile from the agent's fine histograms (NaN when it has no calls).");
        GaugeSnapshot.Builder windowQuantile = GaugeSnapshot.builder().name(WINDOW_QUANTILE)
                .help("The current window's latency quantile from the agent's fine histograms (NaN when it has no calls).");
        Set<FunctionKey> windowsWritten = new HashSet<>();
        for (FunctionStatus s : statuses.get()) {
            String binary = s.function().binary();
            String function = s.function().function();
            String baseline = s.kind().label();
            RegressionVerdict v = s.verdict();
            double[] ratios = {v.ratioP50(), v.ratioP90(), v.ratioP99()};
            double[] before = s.baseline().values();
            double[] after = s.current().values();
            boolean firstOfFunction = windowsWritten.add(s.function());
            for (int i = 0; i < ratios.length; i++) {
                String quantile = QUANTILE_LABELS[i];
                ratio.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder()
                        .labels(Labels.of("binary", binary, "function", function, "quantile", quantile, "baseline", baseline))
                        .value(ratios[i]).build());
                baselineQuantile.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder()
                        .labels(Labels.of("binary", binary, "function", function, "quantile", quantile, "baseline", baseline))
                        .value(before[i] / 1e9).build());
                if (firstOfFunction) {
                    windowQuantile.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder()
                            .labels(Labels.of("binary", binary, "function", function, "quantile", quantile))
                            .value(after[i] / 1e9).build());
                }
            }
            regressed.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder()
                    .labels(Labels.of("binary", binary, "function", function, "baseline", baseline))
                    .value(v.regressed() ? 1 : 0).build());
            info.dataPoint(InfoSnapshot.InfoDataPointSnapshot.builder()
                    .labels(Labels.of("binary", binary, "function", function, "baseline", baseline,
                            "build_id", s.buildId(), "baseline_build_id", s.baselineBuildId()))
                    .build());
        }
        CounterSnapshot dropped = CounterSnapshot.builder().name(DROPPED)
                .help("Interval latency profile samples left out of the baseline and window profiles (sample cap; verdicts count every call).")
                .dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().value(droppedSamples.getAsLong()).build())
                .build();
        return new MetricSnapshots(ratio.build(), regressed.build(), info.build(), baselineQuantile.build(),
                windowQuantile.build(), dropped);
    }
}
