package dev.loupe.agent.regression;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.loupe.agent.regression.RegressionTrackerTest.F;
import static dev.loupe.agent.regression.RegressionTrackerTest.MINUTE;
import static dev.loupe.agent.regression.RegressionTrackerTest.SETTINGS;
import static dev.loupe.agent.regression.RegressionTrackerTest.T0;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The agent's series against the shipped rules (config/alerting): the real promtool evaluates
 * loupe-rules.yml on the tracker's own exposition text, scraped from three hosts, and the series the rules'
 * unit tests feed in have the agent's names and labels. promtool is Debian's prometheus package's.
 */
class RegressionRulesTest {
    private static final Path ALERTING = Path.of("..", "config", "alerting");
    private static final Path PROMTOOL = Path.of("/usr/bin/promtool");
    private static final Pattern SERIES = Pattern.compile("^(loupe_function_latency_\\w+)\\{([^}]*)\\} (\\S+)$");
    private static final Pattern LABEL_NAME = Pattern.compile("(\\w+)=\"");
    private static final List<String> HOSTS = List.of("host-a:6060", "host-b:6060", "host-c:6060");

    @TempDir
    Path dir;

    /** The tracker's series after an hour of b1 and ten minutes of b2, {@code slowdown} times slower. */
    private String agentExposition(double slowdown, int callsPerMinute) throws IOException {
        AtomicLong clock = new AtomicLong(T0);
        try (RegressionTracker t = RegressionTracker.open(dir.resolve("state-" + slowdown), SETTINGS, clock::get)) {
            for (int m = 0; m < 70; m++) {
                boolean b2 = m >= 60;
                t.record(F, b2 ? "b2" : "b1", Samples.histogram(Samples.lognormal(m, b2 ? callsPerMinute : 200,
                        2_000_000, 0.5, b2 ? slowdown : 1)));
                clock.addAndGet(MINUTE);
            }
            return RegressionMetricsTest.exposition(t.metrics());
        }
    }

    /** promtool input series: each agent series on every host, constant for 30 minutes. */
    private static String inputSeries(String exposition) {
        StringBuilder out = new StringBuilder();
        int n = 0;
        for (String line : exposition.lines().toList()) {
            Matcher m = SERIES.matcher(line);
            if (!m.matches()) {
                continue;
            }
            for (String host : HOSTS) {
                out.append("      - series: '").append(m.group(1)).append("{instance=\"").append(host)
                        .append("\",job=\"loupe\",").append(m.group(2)).append("}'\n")
                        .append("        values: '").append((m.group(3) + " ").repeat(31).strip()).append("'\n");
                n++;
            }
        }
        assertEquals(3 * (2 * 8 + 3), n,
                "3 hosts × (2 baselines × (3 ratios, regressed, info, 3 baseline quantiles) + 3 window quantiles) in " + exposition);
        return out.toString();
    }

    @Test
    void theShippedAlertsFireOnTheAgentsSeriesOfARegressionAndNotOfTooFewCalls() throws Exception {
        // Each alert fires once its for: (15m per host, 5m for the fleet of 3) has passed, not a minute earlier.
        String regressed = inputSeries(agentExposition(3, 200));
        String tooFew = inputSeries(agentExposition(10, 10));
        String firing = "ALERTS{alertname=\"LoupeFunctionLatencyRegression\",alertstate=\"firing\",severity=\"warning\","
                + "job=\"loupe\",baseline=\"previous_build\",baseline_build_id=\"b1\",binary=\"/srv/shop\",build_id=\"b2\","
                + "function=\"main.checkout\",instance=\"%s\"}";
        StringBuilder expected = new StringBuilder();
        for (String host : HOSTS) {
            expected.append("          - labels: '").append(String.format(firing, host)).append("'\n            value: 1\n");
        }
        String test = """
                rule_files:
                  - loupe-rules.yml
                evaluation_interval: 1m
                tests:
                  - interval: 1m
                    input_series:
                %s    promql_expr_test:
                      - expr: ALERTS{alertname="LoupeFunctionLatencyRegression",alertstate="firing"}
                        eval_time: 14m
                        exp_samples: []
                      - expr: ALERTS{alertname="LoupeFunctionLatencyRegression",alertstate="firing"}
                        eval_time: 15m
                        exp_samples:
                %s      - expr: ALERTS{alertname="LoupeFunctionLatencyRegressionFleet",alertstate="firing"}
                        eval_time: 4m
                        exp_samples: []
                      - expr: ALERTS{alertname="LoupeFunctionLatencyRegressionFleet",alertstate="firing"}
                        eval_time: 5m
                        exp_samples:
                          - labels: 'ALERTS{alertname="LoupeFunctionLatencyRegressionFleet",alertstate="firing",severity="critical",function="main.checkout",build_id="b2"}'
                            value: 1
                  - interval: 1m
                    input_series:
                %s    promql_expr_test:
                      - expr: ALERTS
                        eval_time: 30m
                        exp_samples: []
                """.formatted(regressed, expected, tooFew);
        Files.copy(ALERTING.resolve("loupe-rules.yml"), dir.resolve("loupe-rules.yml"));
        Files.writeString(dir.resolve("agent.test.yml"), test);
        String out = promtool("test", "rules", "agent.test.yml");
        assertTrue(out.contains("SUCCESS"), out);
    }

    @Test
    void theRulesUnitTestsFeedSeriesWithTheAgentsNamesAndLabels() throws IOException {
        Map<String, Set<String>> agent = labelNames(agentExposition(3, 200));
        assertEquals(Set.of("loupe_function_latency_regression_ratio", "loupe_function_latency_regressed",
                "loupe_function_latency_baseline_info", "loupe_function_latency_baseline_quantile_seconds",
                "loupe_function_latency_window_quantile_seconds"), agent.keySet());
        String tests = Files.readString(ALERTING.resolve("loupe-rules.test.yml"));
        Matcher m = Pattern.compile("series: '(loupe_function_latency_\\w+)\\{([^}]*)\\}'").matcher(tests);
        int checked = 0;
        while (m.find()) {
            Set<String> names = names(m.group(2));
            names.removeAll(Set.of("instance", "job")); // added by the scrape
            assertEquals(agent.get(m.group(1)), names, m.group());
            checked++;
        }
        assertTrue(checked >= 20, checked + " series checked");
        // Every loupe_function_latency_ name the rules read is one the agent writes.
        Matcher used = Pattern.compile("loupe_function_latency_[a-z_]+").matcher(Files.readString(ALERTING.resolve("loupe-rules.yml")));
        Set<String> read = new TreeSet<>();
        while (used.find()) {
            read.add(used.group());
        }
        assertEquals(new TreeSet<>(agent.keySet()), read);
    }

    private static Map<String, Set<String>> labelNames(String exposition) {
        Map<String, Set<String>> out = new TreeMap<>();
        for (String line : exposition.lines().toList()) {
            Matcher m = SERIES.matcher(line);
            if (m.matches()) {
                Set<String> before = out.putIfAbsent(m.group(1), names(m.group(2)));
                assertTrue(before == null || before.equals(names(m.group(2))), line);
            }
        }
        return out;
    }

    private static Set<String> names(String labels) {
        Set<String> names = new TreeSet<>();
        Matcher m = LABEL_NAME.matcher(labels);
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    private String promtool(String... args) throws IOException, InterruptedException {
        assertTrue(Files.isExecutable(PROMTOOL), PROMTOOL + " is missing: install Debian's prometheus package");
        List<String> command = new ArrayList<>(List.of(PROMTOOL.toString()));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(2, TimeUnit.MINUTES), "promtool did not finish");
        assertEquals(0, p.exitValue(), out + "\n" + Files.readString(dir.resolve("agent.test.yml")));
        return out;
    }
}
