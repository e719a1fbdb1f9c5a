package dev.loupe.it.bench;

import dev.loupe.it.Deployment;
import dev.loupe.it.FreePort;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ./loupe bench alerting}'s cost part: the agent's CPU and RSS with N probed functions (all called, 5 times a
 * second each, {@link ManyFunctionsTarget}) against the same agent without probes and, with {@code --baseline-jar},
 * another build of the agent with the same probes (e.g. one without regression baselines: the difference is what the
 * baselines cost). Each configuration runs its own agent: a warm-up, a steady phase (the running build's trailing
 * baseline only), an equally fast rebuild deployed, a phase after the deploy (previous-build baselines too). CPU from
 * /proc/PID/stat utime + stime over each phase, RSS from /proc/PID/status at its end. The agent samples only this
 * JVM (--pid), so its sampling costs the same in every configuration; uprobe handlers run in the target's context.
 */
final class BaselineCostBench {
    private static final Pattern COUNT = Pattern.compile(
            "(?m)^loupe_function_duration_seconds_count\\{binary=\"([^\"]+)\",function=\"(" + ManyFunctionsTarget.PREFIX + "\\d+)\"} (\\S+)$");

    record Phase(String config, String phase, double cpuPercentOfCore, long rssKb, long hwmKb, int functionsCalled) {}

    private BaselineCostBench() {}

    static List<Phase> run(Path tmp, int functions, int warmupSeconds, int measureSeconds, String window, Path baselineJar)
            throws Exception {
        Path v1 = ManyFunctionsTarget.build(tmp.resolve("many-v1"), functions, "v1");
        Path v2 = ManyFunctionsTarget.build(tmp.resolve("many-v2"), functions, "v2");
        List<Phase> phases = new ArrayList<>();
        phases.addAll(runOne("no probes", BenchAgent.jar(), false, tmp, v1, v2, functions, warmupSeconds, measureSeconds, window));
        phases.addAll(runOne("probes", BenchAgent.jar(), true, tmp, v1, v2, functions, warmupSeconds, measureSeconds, window));
        if (baselineJar != null) {
            phases.addAll(runOne("probes, baseline jar", baselineJar.toString(), true, tmp, v1, v2, functions, warmupSeconds,
                    measureSeconds, window));
        }
        System.out.printf(Locale.ROOT, "%n%d functions, each called 5 times a second; --latency-regression-window %s; %d s a phase after a %d s warm-up%n",
                functions, window, measureSeconds, warmupSeconds);
        System.out.println("config                 phase          agent CPU (% of a core)  RSS MB  peak RSS MB  functions called");
        for (Phase p : phases) {
            System.out.printf(Locale.ROOT, "%-22s %-14s %23.2f  %6d  %11d  %d/%d%n", p.config(), p.phase(), p.cpuPercentOfCore(),
                    p.rssKb() / 1024, p.hwmKb() / 1024, p.functionsCalled(), p.config().equals("no probes") ? 0 : functions);
        }
        return phases;
    }

    private static List<Phase> runOne(String config, String jar, boolean probes, Path tmp, Path v1, Path v2, int functions,
                                      int warmupSeconds, int measureSeconds, String window) throws Exception {
        Path dir = Files.createDirectories(tmp.resolve(config.replaceAll("\\W+", "-")));
        int port = FreePort.next();
        List<String> args = new ArrayList<>(List.of("--pid", Long.toString(ProcessHandle.current().pid()), "--output", "off",
                "--http", "127.0.0.1:" + port, "--state-dir", dir.resolve("state").toString(),
                "--latency-regression-window", window, "--probes-max-functions", Integer.toString(Math.max(functions, 1000))));
        List<Phase> phases = new ArrayList<>();
        try (Deployment service = new Deployment(dir.resolve("many_functions"), "5")) {
            service.deploy(v1);
            if (probes) {
                args.addAll(List.of("--probe", service.path() + ":" + ManyFunctionsTarget.PREFIX + "*"));
            }
            Process agent = BenchAgent.start(jar, dir.resolve("agent.log"), args);
            try {
                String metrics = "http://127.0.0.1:" + port + "/metrics";
                System.out.printf("%s: warming up %d s%n", config, warmupSeconds);
                Thread.sleep(warmupSeconds * 1000L);
                phases.add(measure(config, "steady", agent, metrics, measureSeconds));
                service.deploy(v2);
                Thread.sleep(10_000);
                phases.add(measure(config, "after deploy", agent, metrics, measureSeconds));
            } finally {
                BenchAgent.stop(agent);
            }
        }
        return phases;
    }

    private static Phase measure(String config, String phase, Process agent, String metrics, int seconds) throws Exception {
        Map<String, Double> before = counts(metrics);
        long cpu0 = CpuMeter.sinceStartNanos(agent.pid());
        Thread.sleep(seconds * 1000L);
        long cpu = CpuMeter.sinceStartNanos(agent.pid()) - cpu0;
        Map<String, Double> after = counts(metrics);
        int called = 0;
        for (Map.Entry<String, Double> e : after.entrySet()) {
            if (e.getValue() > before.getOrDefault(e.getKey(), 0.0)) {
                called++;
            }
        }
        Phase p = new Phase(config, phase, 100.0 * cpu / (seconds * 1e9), BenchAgent.statusKb(agent.pid(), "VmRSS:"),
                BenchAgent.statusKb(agent.pid(), "VmHWM:"), called);
        System.out.println("  " + p);
        return p;
    }

    /** Calls so far per generated function, from the agent's /metrics. */
    private static Map<String, Double> counts(String url) throws IOException, InterruptedException {
        String body = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        Map<String, Double> counts = new HashMap<>();
        Matcher m = COUNT.matcher(body);
        while (m.find()) {
            counts.put(m.group(2), Double.parseDouble(m.group(3)));
        }
        return counts;
    }
}
