package dev.loupe.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The parts {@link LatencyRegressionAlertTest} stands on, checked on their own: the rule copy changes only {@code for:},
 * the Go target's builds differ in build id and a deploy replaces the running binary, and real Prometheus scrapes the
 * packaged agent, loads the deployed rules and sends an alert that real Alertmanager then lists. The alert here
 * comes from a rule file of this test only ({@code vector(1)}); the end-to-end test loads only the deployed rules.
 */
class AlertingHarnessTest {
    static final String SELF_TEST_RULES = """
            groups:
              - name: harness-self-test
                rules:
                  - alert: LoupeHarnessSelfTest
                    expr: vector(1)
                    for: 1s
                    labels:
                      severity: none
                    annotations:
                      summary: 'Prometheus reached Alertmanager'
            """;

    @Test
    void rulesCopyDiffersOnlyInForValues(@TempDir Path dir) throws Exception {
        Path copy = ShortenedRules.write(ShortenedRules.LOUPE_RULES, "7s", dir.resolve("rules.yml"));
        List<String> original = Files.readAllLines(ShortenedRules.LOUPE_RULES);
        List<String> shortened = Files.readAllLines(copy);
        assertEquals(original.size(), shortened.size());
        List<String> changed = new ArrayList<>();
        for (int i = 0; i < original.size(); i++) {
            if (!original.get(i).equals(shortened.get(i))) {
                changed.add(original.get(i).strip() + " -> " + shortened.get(i).strip());
            }
        }
        assertEquals(List.of("for: 15m -> for: 7s", "for: 5m -> for: 7s"), changed);
        assertEquals(Files.size(ShortenedRules.LOUPE_RULES) - "15m5m".length() + "7s7s".length(), Files.size(copy),
                "byte for byte the same apart from the two values, line ends included");
    }

    @Test
    void rulesCopyRefusesAnyOtherChange() {
        String rules = "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up == 0\n        for: 15m\n";
        ShortenedRules.check(rules, rules.replace("15m", "5s"), "5s");
        IllegalStateException expr = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                () -> ShortenedRules.check(rules, rules.replace("15m", "5s").replace("up == 0", "up == 1"), "5s"));
        assertEquals("the copy changed more than the for: lines", expr.getMessage());
        IllegalStateException noFor = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                () -> ShortenedRules.check(rules.replace("        for: 15m\n", ""), rules, "5s"));
        assertEquals("1 alerts and 0 for: lines in the rules: each alert needs one", noFor.getMessage());
    }

    @Test
    void buildsDifferInGoBuildIdAndADeployReplacesTheRunningBinary(@TempDir Path dir) throws Exception {
        Path cache = dir.resolve("gocache");
        Path first = GoBuild.regressionTarget(dir.resolve("first"), cache, 2000, "first");
        Path second = GoBuild.regressionTarget(dir.resolve("second"), cache, 2000, "second");
        String firstId = GoBuild.buildId(first);
        String secondId = GoBuild.buildId(second);
        assertNotEquals(firstId, secondId);
        assertTrue(firstId.matches("[^/]+/[^/]+/[^/]+/[^/]+"), firstId);
        try (Deployment service = new Deployment(dir.resolve("service"), "300")) {
            service.deploy(first);
            Process before = service.process();
            assertEquals(firstId, GoBuild.buildId(Path.of("/proc", Long.toString(before.pid()), "exe")));
            service.deploy(second);
            assertTrue(before.waitFor(10, java.util.concurrent.TimeUnit.SECONDS));
            assertEquals(secondId, GoBuild.buildId(service.path()));
            assertEquals(secondId, GoBuild.buildId(Path.of("/proc", Long.toString(service.process().pid()), "exe")));
            service.firstCall(Duration.ofSeconds(10));
            awaitTrue("a second of calls", Duration.ofSeconds(10), () -> service.output().contains("calls "));
            assertTrue(service.output().startsWith("release second work_us 2000 rate 300\n"), service.output());
        }
    }

    @Test
    void prometheusScrapesTheAgentLoadsTheRulesAndAlertsReachAlertmanager(@TempDir Path dir) throws Exception {
        Path target = GoBuild.regressionTarget(dir.resolve("build"), dir.resolve("gocache"), 2000, "selftest");
        Path rules = ShortenedRules.write(ShortenedRules.LOUPE_RULES, "5s", dir.resolve("loupe-rules.yml"));
        Path selfTest = Files.writeString(dir.resolve("self-test.yml"), SELF_TEST_RULES);
        int port = FreePort.next();
        String instance = "127.0.0.1:" + port;
        try (AlertmanagerServer alertmanager = AlertmanagerServer.start(dir);
             PrometheusServer prometheus = PrometheusServer.start(dir, new PrometheusServer.Config(List.of(instance),
                     Duration.ofSeconds(1), Duration.ofSeconds(1), List.of(rules, selfTest), alertmanager.address()));
             Deployment service = new Deployment(dir.resolve("service"), "300")) {
            service.deploy(target);
            String series = "loupe_function_duration_seconds_count{binary=\"" + service.path() + "\",function=\"main.work\"}";
            try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(ProcessHandle.current().pid()),
                    "--interval", "1s", "--output", "off", "--http", instance, "--state-dir", dir.resolve("state").toString(),
                    "--probe", service.path() + ":main.work")) {
                agent.awaitSampling(Duration.ofSeconds(120));
                awaitTrue("up == 1 for the agent", Duration.ofSeconds(30),
                        () -> prometheus.query("up{job=\"loupe\",instance=\"" + instance + "\"} == 1").size() == 1);
                awaitTrue(series + " > 100 in Prometheus", Duration.ofSeconds(30),
                        () -> prometheus.query(series + " > 100").size() == 1);

                // The agent's mean latency of main.work against the target's own, over the same stretch of calls: once
                // the rate's 5 s window holds a scrape each second, every one of them with the calls counted.
                awaitTrue("5 s of scrapes of main.work's calls", Duration.ofSeconds(30),
                        () -> prometheus.query("count_over_time(" + series + "[5s]) >= 5").size() == 1
                                && prometheus.query("min_over_time(" + series + "[5s]) > 100").size() == 1);
                List<PrometheusServer.Sample> mean = prometheus.query("rate(" + series.replace("_count{", "_sum{") + "[5s]) / rate("
                        + series + "[5s])");
                assertEquals(1, mean.size(), mean.toString());
                double agentMicros = mean.get(0).value() * 1e6;
                double targetMicros = recentTargetMeanMicros(service.output(), 5);
                System.out.printf("main.work mean: agent %.0f us, target %.0f us%n", agentMicros, targetMicros);
                assertEquals(1.0, agentMicros / targetMicros, 0.05, "agent " + agentMicros + " us, target " + targetMicros + " us");

                String deployed = Files.readString(ShortenedRules.LOUPE_RULES);
                assertEquals(List.of("LoupeFunctionLatencyRegression", "LoupeFunctionLatencyRegressionFleet"), ruleNames(deployed, "alert"));
                Set<String> expectedRules = new TreeSet<>(ruleNames(deployed, "alert"));
                expectedRules.addAll(ruleNames(deployed, "record"));
                expectedRules.add("LoupeHarnessSelfTest");
                assertEquals(9, expectedRules.size(), expectedRules.toString());
                awaitTrue("every rule evaluated without error", Duration.ofSeconds(15), () -> {
                    Map<String, String> health = prometheus.rules();
                    return health.keySet().equals(expectedRules) && new TreeSet<>(health.values()).equals(Set.of("ok"));
                });

                awaitTrue("LoupeHarnessSelfTest active in Alertmanager", Duration.ofSeconds(30),
                        () -> alertmanager.alerts("LoupeHarnessSelfTest", Map.of()).size() == 1,
                        () -> "Prometheus:\n" + prometheus.log() + "\nAlertmanager:\n" + alertmanager.log());
                AlertmanagerServer.Alert alert = alertmanager.alerts("LoupeHarnessSelfTest", Map.of()).get(0);
                assertEquals("active", alert.state());
                assertEquals(Map.of("alertname", "LoupeHarnessSelfTest", "severity", "none"), alert.labels());
                assertEquals(Map.of("summary", "Prometheus reached Alertmanager"), alert.annotations());
            }
        }
    }

    /** The mean of the last {@code seconds} "calls C mean_us M" lines, weighted by calls. */
    static double recentTargetMeanMicros(String output, int seconds) {
        Matcher m = Pattern.compile("(?m)^calls (\\d+) mean_us (\\d+)$").matcher(output);
        List<long[]> lines = new ArrayList<>();
        while (m.find()) {
            lines.add(new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2))});
        }
        assertTrue(lines.size() >= seconds, "fewer than " + seconds + " seconds of calls:\n" + output);
        long calls = 0;
        double micros = 0;
        for (long[] l : lines.subList(lines.size() - seconds, lines.size())) {
            calls += l[0];
            micros += (double) l[0] * l[1];
        }
        return micros / calls;
    }

    /** The names of a rule file's rules of one kind ({@code alert} or {@code record}), in order. */
    static List<String> ruleNames(String rules, String kind) {
        return Pattern.compile("(?m)^ +- " + kind + ": (\\S+)$").matcher(rules).results().map(r -> r.group(1)).toList();
    }

    static void awaitTrue(String what, Duration timeout, Callable<Boolean> condition) throws Exception {
        awaitTrue(what, timeout, condition, () -> "");
    }

    /** Polls {@code condition} every 250 ms; past {@code timeout}, fails with {@code diagnostics}. */
    static void awaitTrue(String what, Duration timeout, Callable<Boolean> condition, Callable<String> diagnostics) throws Exception {
        long end = System.nanoTime() + timeout.toNanos();
        while (!condition.call()) {
            if (System.nanoTime() > end) {
                throw new AssertionError(what + ": not within " + timeout + "\n" + diagnostics.call());
            }
            Thread.sleep(250);
        }
    }
}
