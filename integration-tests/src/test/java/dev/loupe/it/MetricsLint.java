package dev.loupe.it;

import java.nio.file.Path;
import java.util.List;

/** {@code promtool check metrics} on an exposition, as Prometheus itself lints it. */
final class MetricsLint {
    /**
     * promtool's advice against a {@code quantile} label outside summaries: issue 16 names the label of
     * {@code loupe_function_latency_regression_ratio} {@code quantile} (the quantile whose ratio it is), and
     * alert rules match on it; the two series of the quantiles that ratio divides carry the same label, so the
     * alert's annotations select all three alike. promtool still parses the series (exit 3 is its lint exit, not a
     * parse error).
     */
    private static final java.util.Set<String> MANDATED = java.util.Set.of(
            "loupe_function_latency_regression_ratio non-summary metrics should not have \"quantile\" label",
            "loupe_function_latency_baseline_quantile_seconds non-summary metrics should not have \"quantile\" label",
            "loupe_function_latency_window_quantile_seconds non-summary metrics should not have \"quantile\" label");

    private MetricsLint() {}

    /** promtool's complaints about {@code exposition}, less the one above; a parse failure is a complaint too. */
    static List<String> problems(Path exposition) throws Exception {
        Commands.Result r = Commands.run(List.of("promtool", "check", "metrics"), exposition, 60);
        List<String> rest = r.output().lines().map(String::strip).filter(l -> !l.isEmpty() && !MANDATED.contains(l)).toList();
        if (r.exit() != 0 && r.exit() != 3) {
            return java.util.stream.Stream.concat(rest.stream(), java.util.stream.Stream.of("promtool exited " + r.exit())).toList();
        }
        if (r.exit() == 3 && r.output().lines().map(String::strip).noneMatch(MANDATED::contains)) {
            return java.util.stream.Stream.concat(rest.stream(), java.util.stream.Stream.of("promtool exited 3")).toList();
        }
        return rest;
    }
}
