package dev.loupe.it.bench;

import dev.loupe.it.AlertmanagerServer;
import dev.loupe.it.Deployment;
import dev.loupe.it.Directories;
import dev.loupe.it.FreePort;
import dev.loupe.it.GoBuild;
import dev.loupe.it.PrometheusServer;
import dev.loupe.it.ShortenedRules;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code ./loupe bench alerting [--part all|cost|alert] [--functions N] [--warmup SECONDS] [--cost-seconds SECONDS]
 * [--cost-window DURATION] [--baseline-jar JAR] [--before-minutes M] [--steady-minutes M] [--scrape-seconds S]}:
 * issue 16's figures.
 * <ol>
 *   <li><b>Time to alert</b> ({@code alert}): the agent with its default window, Prometheus (scrape and evaluation
 *       every {@code --scrape-seconds}, default 15) loading {@code config/alerting/loupe-rules.yml} unchanged (its
 *       real {@code for:}), real Alertmanager. A Go service whose {@code main.work} takes 2 ms runs
 *       {@code --before-minutes} (10), then a 6 ms build is deployed at the same path: the time from its first slow
 *       call to {@code LoupeFunctionLatencyRegression} active in Alertmanager.</li>
 *   <li><b>Cost</b> ({@code cost}): the agent's CPU and RSS with {@code --functions} (1,000) probed functions, see
 *       {@link BaselineCostBench}.</li>
 *   <li><b>False positives</b> ({@code alert}, the same run): beside the regressing service, an equally fast
 *       redeploy of a Go service and of the N-function C program, all steady for {@code --steady-minutes} (40)
 *       after their deploy: of the agent's verdicts on them in Prometheus (one sample of
 *       {@code loupe_function_latency_regressed} per series and scrape), the share at 1, per baseline, and alerts.</li>
 * </ol>
 */
public final class AlertingBench {
    private AlertingBench() {}

    public static void main(String[] args) throws Exception {
        String part = "all";
        int functions = 1000;
        int warmup = 60;
        int costSeconds = 90;
        String costWindow = "1m";
        Path baselineJar = null;
        int beforeMinutes = 10;
        int steadyMinutes = 40;
        int scrapeSeconds = 15;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--part" -> part = args[++i];
                case "--functions" -> functions = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--cost-seconds" -> costSeconds = Integer.parseInt(args[++i]);
                case "--cost-window" -> costWindow = args[++i];
                case "--baseline-jar" -> baselineJar = Path.of(args[++i]).toAbsolutePath();
                case "--before-minutes" -> beforeMinutes = Integer.parseInt(args[++i]);
                case "--steady-minutes" -> steadyMinutes = Integer.parseInt(args[++i]);
                case "--scrape-seconds" -> scrapeSeconds = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i] + " (usage: alerting [--part all|cost|alert]"
                        + " [--functions N] [--warmup S] [--cost-seconds S] [--cost-window D] [--baseline-jar JAR]"
                        + " [--before-minutes M] [--steady-minutes M] [--scrape-seconds S])");
            }
        }
        if (!List.of("all", "cost", "alert").contains(part)) {
            throw new IllegalArgumentException("--part all, cost or alert: " + part);
        }
        Path tmp = Files.createTempDirectory("loupe-alerting-bench");
        try {
            if (!part.equals("alert")) {
                System.out.println("== the agent's CPU and RSS with " + functions + " probed functions");
                BaselineCostBench.run(tmp, functions, warmup, costSeconds, costWindow, baselineJar);
            }
            if (!part.equals("cost")) {
                System.out.printf("== time to alert (default window, the rules' for:) and false positives over %d steady minutes%n",
                        steadyMinutes);
                alertAndSteadyRun(tmp, functions, beforeMinutes, steadyMinutes, scrapeSeconds);
            }
        } finally {
            Directories.delete(tmp);
        }
    }

    private static void alertAndSteadyRun(Path tmp, int functions, int beforeMinutes, int steadyMinutes, int scrapeSeconds)
            throws Exception {
        Path cache = tmp.resolve("gocache");
        Path fast1 = GoBuild.regressionTarget(tmp.resolve("go-fast1"), cache, 2000, "fast1");
        Path fast2 = GoBuild.regressionTarget(tmp.resolve("go-fast2"), cache, 2000, "fast2");
        Path slow = GoBuild.regressionTarget(tmp.resolve("go-slow"), cache, 6000, "slow");
        Path many1 = ManyFunctionsTarget.build(tmp.resolve("many-steady-v1"), functions, "v1");
        Path many2 = ManyFunctionsTarget.build(tmp.resolve("many-steady-v2"), functions, "v2");
        Path steadyDir = Files.createDirectories(tmp.resolve("steady"));
        String instance = "127.0.0.1:" + FreePort.next();
        Duration scrape = Duration.ofSeconds(scrapeSeconds);
        try (AlertmanagerServer alertmanager = AlertmanagerServer.start(tmp);
             PrometheusServer prometheus = PrometheusServer.start(tmp, new PrometheusServer.Config(List.of(instance), scrape, scrape,
                     List.of(ShortenedRules.LOUPE_RULES), alertmanager.address()));
             Deployment regressing = new Deployment(tmp.resolve("regressing"), "300");
             Deployment steady = new Deployment(steadyDir.resolve("go"), "300");
             Deployment steadyMany = new Deployment(steadyDir.resolve("many"), "5")) {
            regressing.deploy(fast1);
            steady.deploy(fast1);
            steadyMany.deploy(many1);
            Process agent = BenchAgent.start(BenchAgent.jar(), tmp.resolve("agent.log"), List.of("--output", "off",
                    "--http", instance, "--state-dir", tmp.resolve("state").toString(),
                    "--probes-max-functions", Integer.toString(functions + 1000),
                    "--probe", regressing.path() + ":main.work", "--probe", steady.path() + ":main.work",
                    "--probe", steadyMany.path() + ":" + ManyFunctionsTarget.PREFIX + "*"));
            try {
                System.out.printf("first builds running; deploying in %d minutes%n", beforeMinutes);
                Thread.sleep(Duration.ofMinutes(beforeMinutes).toMillis());
                regressing.deploy(slow);
                steady.deploy(fast2);
                steadyMany.deploy(many2);
                Instant deployed = Instant.now();
                Instant firstSlowCall = regressing.firstCall(Duration.ofSeconds(10));
                Instant end = deployed.plus(Duration.ofMinutes(steadyMinutes));
                Duration toAlert = null;
                Instant nextProgress = deployed.plusSeconds(60);
                while (Instant.now().isBefore(end)) {
                    if (toAlert == null) {
                        List<AlertmanagerServer.Alert> alerts = alertmanager.alerts("LoupeFunctionLatencyRegression",
                                Map.of("binary", regressing.path().toString(), "baseline", "previous_build"));
                        if (alerts.stream().anyMatch(a -> a.state().equals("active"))) {
                            toAlert = Duration.between(firstSlowCall, Instant.now());
                            System.out.printf(Locale.ROOT, "ALERT active in Alertmanager %.1f min after the first slow call%n",
                                    toAlert.toMillis() / 60000.0);
                        }
                    }
                    if (Instant.now().isAfter(nextProgress)) {
                        nextProgress = nextProgress.plusSeconds(60);
                        System.out.printf("+%d min: regressing service %s%n", Duration.between(deployed, Instant.now()).toMinutes(),
                                prometheus.query("{__name__=~\"loupe_function_latency_regressed|loupe_function_latency_regression_ratio\","
                                        + "binary=\"" + regressing.path() + "\",quantile=~\"|0.5\"}"));
                    }
                    Thread.sleep(5000);
                }
                long seconds = Duration.between(deployed, Instant.now()).toSeconds();
                System.out.println();
                System.out.printf(Locale.ROOT, "time from the first slow call to the alert in Alertmanager (default window, for: as deployed, "
                        + "scrape and evaluation every %d s): %s%n", scrapeSeconds,
                        toAlert == null ? "not within " + steadyMinutes + " min" : String.format(Locale.ROOT, "%.1f min", toAlert.toMillis() / 60000.0));
                falsePositives(prometheus, steadyDir, seconds, scrapeSeconds);
            } finally {
                BenchAgent.stop(agent);
            }
        }
    }

    private static void falsePositives(PrometheusServer prometheus, Path steadyDir, long seconds, int scrapeSeconds) throws Exception {
        String steady = "loupe_function_latency_regressed{binary=~\"" + steadyDir + "/.*\"}";
        String range = "[" + seconds + "s]";
        Map<String, Double> evaluations = byBaseline(prometheus, "sum by (baseline) (count_over_time(" + steady + range + "))");
        Map<String, Double> regressed = byBaseline(prometheus, "sum by (baseline) (sum_over_time(" + steady + range + "))");
        Map<String, Double> series = byBaseline(prometheus, "count by (baseline) (last_over_time(" + steady + range + "))");
        Map<String, Double> everRegressed = byBaseline(prometheus, "count by (baseline) (max_over_time(" + steady + range + ") == 1)");
        List<PrometheusServer.Sample> alerts = prometheus.query("count by (alertstate) (count_over_time(ALERTS{binary=~\""
                + steadyDir + "/.*\"}" + range + "))");
        System.out.printf("false positives over %d steady minutes after an equally fast redeploy (verdicts = samples of "
                + "loupe_function_latency_regressed, one per series every %d s):%n", seconds / 60, scrapeSeconds);
        if (evaluations.isEmpty()) {
            System.out.println("  no loupe_function_latency_regressed series for the steady services (the agent has no baselines)");
        }
        for (Map.Entry<String, Double> e : evaluations.entrySet()) {
            double ones = regressed.getOrDefault(e.getKey(), 0.0);
            System.out.printf(Locale.ROOT, "  baseline %-15s %6.0f series  %9.0f verdicts  %6.0f at 1 (%.4f %%)  series ever at 1: %.0f%n",
                    e.getKey(), series.getOrDefault(e.getKey(), 0.0), e.getValue(), ones, 100 * ones / e.getValue(),
                    everRegressed.getOrDefault(e.getKey(), 0.0));
        }
        System.out.println("  alerts on the steady services (per state, series): " + (alerts.isEmpty() ? "none" : alerts));
    }

    private static Map<String, Double> byBaseline(PrometheusServer prometheus, String promql) throws Exception {
        Map<String, Double> m = new TreeMap<>();
        for (PrometheusServer.Sample s : prometheus.query(promql)) {
            m.put(s.labels().getOrDefault("baseline", "-"), s.value());
        }
        return m;
    }
}
