package dev.loupe.agent.regression;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static dev.loupe.agent.regression.RegressionTrackerTest.F;
import static dev.loupe.agent.regression.RegressionTrackerTest.MINUTE;
import static dev.loupe.agent.regression.RegressionTrackerTest.SETTINGS;
import static dev.loupe.agent.regression.RegressionTrackerTest.T0;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The verdicts' series as the real Prometheus client writes them. */
class RegressionMetricsTest {
    @TempDir
    Path state;

    static String exposition(io.prometheus.metrics.model.registry.MultiCollector collector) throws IOException {
        PrometheusRegistry registry = new PrometheusRegistry();
        registry.register(collector);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrometheusTextFormatWriter.create().write(out, registry.scrape());
        return out.toString(StandardCharsets.UTF_8);
    }

    static RegressionVerdict verdict(RegressionVerdict.Outcome outcome, double r50, double r90, double r99) {
        return new RegressionVerdict(outcome, r50, r90, r99, 1e-9, 1_000, 900, "test");
    }

    /** main.checkout's current window, the same against both of its baselines. */
    private static final LatencyQuantiles CHECKOUT_NOW = new LatencyQuantiles(6_000_000, 11_000_000, 20_000_000);

    @Test
    void oneSeriesPerFunctionAndBaselineWithExactNamesAndLabels() throws IOException {
        FunctionKey search = new FunctionKey("/srv/shop", "main.search");
        List<FunctionStatus> statuses = List.of(
                new FunctionStatus(F, BaselineKind.PREVIOUS_BUILD, "b2", "b1",
                        verdict(RegressionVerdict.Outcome.REGRESSED, 3, 2.75, 2.5),
                        new LatencyQuantiles(2_000_000, 4_000_000, 8_000_000), CHECKOUT_NOW),
                new FunctionStatus(F, BaselineKind.TRAILING, "b2", "b2",
                        verdict(RegressionVerdict.Outcome.TOO_FEW_CALLS, Double.NaN, Double.NaN, Double.NaN),
                        new LatencyQuantiles(Double.NaN, Double.NaN, Double.NaN), CHECKOUT_NOW),
                new FunctionStatus(search, BaselineKind.TRAILING, "b2", "b2",
                        verdict(RegressionVerdict.Outcome.NOT_REGRESSED, 1.25, 1, 0.5),
                        new LatencyQuantiles(400_000, 1_000_000, 2_000_000), new LatencyQuantiles(500_000, 1_000_000, 1_000_000)));
        assertEquals("""
                # HELP loupe_function_latency_baseline_info The build compared (build_id) and the baseline's build (baseline_build_id).
                # TYPE loupe_function_latency_baseline_info gauge
                loupe_function_latency_baseline_info{baseline="previous_build",baseline_build_id="b1",binary="/srv/shop",build_id="b2",function="main.checkout"} 1
                loupe_function_latency_baseline_info{baseline="trailing",baseline_build_id="b2",binary="/srv/shop",build_id="b2",function="main.checkout"} 1
                loupe_function_latency_baseline_info{baseline="trailing",baseline_build_id="b2",binary="/srv/shop",build_id="b2",function="main.search"} 1
                # HELP loupe_function_latency_baseline_quantile_seconds The baseline's latency quantile from the agent's fine histograms (NaN when it has no calls).
                # TYPE loupe_function_latency_baseline_quantile_seconds gauge
                loupe_function_latency_baseline_quantile_seconds{baseline="previous_build",binary="/srv/shop",function="main.checkout",quantile="0.5"} 0.002
                loupe_function_latency_baseline_quantile_seconds{baseline="previous_build",binary="/srv/shop",function="main.checkout",quantile="0.9"} 0.004
                loupe_function_latency_baseline_quantile_seconds{baseline="previous_build",binary="/srv/shop",function="main.checkout",quantile="0.99"} 0.008
                loupe_function_latency_baseline_quantile_seconds{baseline="trailing",binary="/srv/shop",function="main.checkout",quantile="0.5"} NaN
                loupe_function_latency_baseline_quantile_seconds{baseline="trailing",binary="/srv/shop",function="main.checkout",quantile="0.9"} NaN
                loupe_function_latency_baseline_quantile_seconds{baseline="trailing",binary="/srv/shop",function="main.checkout",quantile="0.99"} NaN
                loupe_function_latency_baseline_quantile_seconds{baseline="trailing",binary="/srv/shop",function="main.search",quantile="0.5"} 4.0E-4
                loupe_function_latency_baseline_quantile_seconds{baseline="trailing",binary="/srv/shop",function="main.search",quantile="0.9"} 0.001
                loupe_function_latency_baseline_quantile_seconds{baseline="trailing",binary="/srv/shop",function="main.search",quantile="0.99"} 0.002
                # HELP loupe_function_latency_baseline_samples_dropped_total Interval latency profile samples left out of the baseline and window profiles (sample cap; verdicts count every call).
                # TYPE loupe_function_latency_baseline_samples_dropped_total counter
                loupe_function_latency_baseline_samples_dropped_total 7.0
                # HELP loupe_function_latency_regressed 1 when the current window is slower than the baseline (enough calls, significant, above the threshold), else 0.
                # TYPE loupe_function_latency_regressed gauge
                loupe_function_latency_regressed{baseline="previous_build",binary="/srv/shop",function="main.checkout"} 1.0
                loupe_function_latency_regressed{baseline="trailing",binary="/srv/shop",function="main.checkout"} 0.0
                loupe_function_latency_regressed{baseline="trailing",binary="/srv/shop",function="main.search"} 0.0
                # HELP loupe_function_latency_regression_ratio Current window's latency quantile divided by the baseline's (NaN when a side has no calls).
                # TYPE loupe_function_latency_regression_ratio gauge
                loupe_function_latency_regression_ratio{baseline="previous_build",binary="/srv/shop",function="main.checkout",quantile="0.5"} 3.0
                loupe_function_latency_regression_ratio{baseline="previous_build",binary="/srv/shop",function="main.checkout",quantile="0.9"} 2.75
                loupe_function_latency_regression_ratio{baseline="previous_build",binary="/srv/shop",function="main.checkout",quantile="0.99"} 2.5
                loupe_function_latency_regression_ratio{baseline="trailing",binary="/srv/shop",function="main.checkout",quantile="0.5"} NaN
                loupe_function_latency_regression_ratio{baseline="trailing",binary="/srv/shop",function="main.checkout",quantile="0.9"} NaN
                loupe_function_latency_regression_ratio{baseline="trailing",binary="/srv/shop",function="main.checkout",quantile="0.99"} NaN
                loupe_function_latency_regression_ratio{baseline="trailing",binary="/srv/shop",function="main.search",quantile="0.5"} 1.25
                loupe_function_latency_regression_ratio{baseline="trailing",binary="/srv/shop",function="main.search",quantile="0.9"} 1.0
                loupe_function_latency_regression_ratio{baseline="trailing",binary="/srv/shop",function="main.search",quantile="0.99"} 0.5
                # HELP loupe_function_latency_window_quantile_seconds The current window's latency quantile from the agent's fine histograms (NaN when it has no calls).
                # TYPE loupe_function_latency_window_quantile_seconds gauge
                loupe_function_latency_window_quantile_seconds{binary="/srv/shop",function="main.checkout",quantile="0.5"} 0.006
                loupe_function_latency_window_quantile_seconds{binary="/srv/shop",function="main.checkout",quantile="0.9"} 0.011
                loupe_function_latency_window_quantile_seconds{binary="/srv/shop",function="main.checkout",quantile="0.99"} 0.02
                loupe_function_latency_window_quantile_seconds{binary="/srv/shop",function="main.search",quantile="0.5"} 5.0E-4
                loupe_function_latency_window_quantile_seconds{binary="/srv/shop",function="main.search",quantile="0.9"} 0.001
                loupe_function_latency_window_quantile_seconds{binary="/srv/shop",function="main.search",quantile="0.99"} 0.001
                """, exposition(new RegressionMetrics(() -> statuses, () -> 7)));
    }

    @Test
    void theTrackersSeriesFollowItsVerdicts() throws IOException {
        AtomicLong clock = new AtomicLong(T0);
        try (RegressionTracker t = RegressionTracker.open(state.resolve("b"), SETTINGS, clock::get)) {
            assertEquals("""
                    # HELP loupe_function_latency_baseline_samples_dropped_total Interval latency profile samples left out of the baseline and window profiles (sample cap; verdicts count every call).
                    # TYPE loupe_function_latency_baseline_samples_dropped_total counter
                    loupe_function_latency_baseline_samples_dropped_total 0.0
                    """, exposition(t.metrics())); // no function yet: no series
            for (int m = 0; m < 70; m++) {
                t.record(F, m < 60 ? "b1" : "b2", Samples.histogram(Samples.lognormal(m, 200, 2_000_000, 0.5, m < 60 ? 1 : 3)));
                clock.addAndGet(MINUTE);
            }
            String text = exposition(t.metrics());
            List<String> regressedAndInfo = text.lines()
                    .filter(l -> l.startsWith("loupe_function_latency_regressed{") || l.startsWith("loupe_function_latency_baseline_info{"))
                    .toList();
            assertEquals(List.of(
                    "loupe_function_latency_baseline_info{baseline=\"previous_build\",baseline_build_id=\"b1\",binary=\"/srv/shop\",build_id=\"b2\",function=\"main.checkout\"} 1",
                    "loupe_function_latency_baseline_info{baseline=\"trailing\",baseline_build_id=\"b2\",binary=\"/srv/shop\",build_id=\"b2\",function=\"main.checkout\"} 1",
                    "loupe_function_latency_regressed{baseline=\"previous_build\",binary=\"/srv/shop\",function=\"main.checkout\"} 1.0",
                    "loupe_function_latency_regressed{baseline=\"trailing\",binary=\"/srv/shop\",function=\"main.checkout\"} 0.0"),
                    regressedAndInfo);
            // The ratios are the verdict's, as the client prints doubles.
            RegressionVerdict previous = RegressionTrackerTest.status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD).verdict();
            String p50 = "loupe_function_latency_regression_ratio{baseline=\"previous_build\",binary=\"/srv/shop\",function=\"main.checkout\",quantile=\"0.5\"} ";
            assertEquals(List.of(p50 + previous.ratioP50()), text.lines().filter(l -> l.startsWith(p50)).toList());
            // The quantiles behind that ratio: ~2 ms before the deploy, ~6 ms after, and their quotient is the ratio.
            FunctionStatus s = RegressionTrackerTest.status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            double before = seconds(text, "loupe_function_latency_baseline_quantile_seconds{baseline=\"previous_build\",binary=\"/srv/shop\",function=\"main.checkout\",quantile=\"0.5\"} ");
            double after = seconds(text, "loupe_function_latency_window_quantile_seconds{binary=\"/srv/shop\",function=\"main.checkout\",quantile=\"0.5\"} ");
            assertEquals(s.baseline().p50() / 1e9, before);
            assertEquals(s.current().p50() / 1e9, after);
            assertEquals(2e-3, before, 0.4e-3);
            assertEquals(6e-3, after, 1.2e-3);
            assertEquals(previous.ratioP50(), after / before, 1e-9);
        }
    }

    /** The value of the one line that starts with {@code prefix}. */
    private static double seconds(String text, String prefix) {
        List<String> lines = text.lines().filter(l -> l.startsWith(prefix)).toList();
        assertEquals(1, lines.size(), prefix + " in " + text);
        return Double.parseDouble(lines.get(0).substring(prefix.length()));
    }
}
