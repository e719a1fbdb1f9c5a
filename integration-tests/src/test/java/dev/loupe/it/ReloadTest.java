package dev.loupe.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * SIGHUP (systemctl reload) on the packaged agent: a changed output directory is applied live, the interval
 * waits for a restart, no interval is lost across the sink swap, and a broken file is refused with its line
 * while the agent goes on as it was.
 */
class ReloadTest {
    private static final DateTimeFormatter NAME = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss.SSS'Z'");

    @TempDir
    Path dir;

    @Test
    void reloadAppliesLiveOptionsKeepsTheRestAndRefusesABrokenFile() throws Exception {
        Path first = dir.resolve("first");
        Path second = dir.resolve("second");
        Path config = dir.resolve("loupe.yaml");
        Files.writeString(config, "output: " + first + "\ninterval: 2s\nhttp:\n  address: off\n");
        try (AgentProcess agent = AgentProcess.start(dir, "--config", config.toString(), "--frequency", "49")) {
            agent.awaitSampling(Duration.ofSeconds(60));
            await("a profile in the first directory", () -> cpuFiles(first).size() >= 2, agent);

            Files.writeString(config, "output: " + second + "\ninterval: 5s\nhttp:\n  address: off\n");
            hup(agent);
            await("the reload's log line", () -> agent.log().contains("reload: applied:"), agent);
            assertTrue(agent.log().contains("reload: applied: output; needs a restart (the running value stays): interval"),
                    agent.log());
            await("two profiles in the second directory", () -> cpuFiles(second).size() >= 2, agent);
            int firstCount = cpuFiles(first).size();

            Files.writeString(config, "output: " + first + "\nfrequency: [\n");
            hup(agent);
            await("the refusal", () -> agent.log().contains("reload refused"), agent);
            assertTrue(agent.log().contains("reload refused, the running configuration stays: " + config + ":"), agent.log());
            int secondCount = cpuFiles(second).size();
            await("profiles still going to the second directory", () -> cpuFiles(second).size() >= secondCount + 2, agent);
            assertEquals(firstCount, cpuFiles(first).size(), "nothing written to the first directory after the swap");

            agent.terminate();
            agent.awaitExit(Duration.ofSeconds(60));
        }
        List<Path> all = new ArrayList<>(cpuFiles(first));
        all.addAll(cpuFiles(second));
        all = all.stream().sorted((a, b) -> a.getFileName().toString().compareTo(b.getFileName().toString())).toList();
        // Intervals follow each other without a gap: each starts 2 s (the kept interval) after the one before,
        // whichever directory it went to; the last one is the partial interval flushed at SIGTERM.
        for (int i = 1; i < all.size(); i++) {
            long ms = Duration.between(start(all.get(i - 1)), start(all.get(i))).toMillis();
            assertTrue(ms >= 1900 && ms <= 2600, "interval " + i + " starts " + ms + " ms after the one before: " + all);
        }
    }

    /**
     * Probes are reloaded live: a function removed from the list is detached (its series keeps its count), one
     * added is attached, the regression settings change, all in one reload and without a restart.
     */
    @Test
    void reloadChangesProbesWithoutARestart() throws Exception {
        Path target = Targets.build(Targets.LATENCY_TARGET, dir, "c-target", "-pthread");
        int port = FreePort.next();
        Path config = dir.resolve("loupe.yaml");
        String common = "output: " + dir.resolve("profiles") + "\ninterval: 1s\nhttp:\n  address: 127.0.0.1:" + port
                + "\nstate-dir: " + dir.resolve("state") + "\n";
        Files.writeString(config, common + "probes: [{binary: " + target + ", functions: [work]}]\n");
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        String metricsUrl = "http://127.0.0.1:" + port + "/metrics";
        try (AgentProcess agent = AgentProcess.start(dir, "--config", config.toString(), "--frequency", "19")) {
            agent.awaitSampling(Duration.ofSeconds(60));
            Commands.run(List.of(target.toString(), "flat", "1", "20"), 60).check();
            await("20 calls of work", () -> LatencyProbeEndToEndTest.get(http, metricsUrl)
                    .contains(LatencyProbeEndToEndTest.series("count", target, "work") + " 20"), agent);
            long pid = agent.pid();

            Files.writeString(config, common + "probes: [{binary: " + target + ", functions: [rec]}]\n"
                    + "latency-regression:\n  threshold: 1.5\n");
            hup(agent);
            await("the reload's probe line", () -> agent.log().contains("reload: probes: 1 attached, 1 detached, 1 now"), agent);
            assertTrue(agent.log().contains("reload: applied: probes, latency-regression.threshold"), agent.log());
            String out = Commands.run(List.of(target.toString(), "rec", "3"), 60).check().output();
            long recCalls = Long.parseLong(out.replaceAll("(?s).*calls (\\d+).*", "$1"));
            Commands.run(List.of(target.toString(), "flat", "1", "5"), 60).check(); // work is no longer probed
            await("rec's calls", () -> LatencyProbeEndToEndTest.get(http, metricsUrl)
                    .contains(LatencyProbeEndToEndTest.series("count", target, "rec") + " " + recCalls), agent);
            String m = LatencyProbeEndToEndTest.get(http, metricsUrl);
            assertEquals(20, LatencyProbeEndToEndTest.value(m, LatencyProbeEndToEndTest.series("count", target, "work")),
                    "work detached: its count stays");
            assertEquals(1, LatencyProbeEndToEndTest.value(m, "loupe_probe_functions_attached"));
            assertEquals(pid, agent.pid(), "the same process");
            agent.terminate();
            agent.awaitExit(Duration.ofSeconds(60));
        }
    }

    private static LocalDateTime start(Path file) {
        String n = file.getFileName().toString();
        return LocalDateTime.parse(n.substring("cpu-".length(), n.length() - ".pb.gz".length()), NAME);
    }

    private static List<Path> cpuFiles(Path d) throws Exception {
        if (!Files.isDirectory(d)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(d)) {
            return s.filter(p -> p.getFileName().toString().startsWith("cpu-") && p.toString().endsWith(".pb.gz")).sorted().toList();
        }
    }

    static void hup(AgentProcess agent) throws Exception {
        Commands.run(List.of("kill", "-HUP", Long.toString(agent.pid())), 10).check();
    }

    @FunctionalInterface
    interface Check {
        boolean holds() throws Exception;
    }

    static void await(String what, Check c, AgentProcess agent) throws Exception {
        long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < end) {
            if (c.holds()) {
                return;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("timed out waiting for " + what + ":\n" + agent.log());
    }
}
