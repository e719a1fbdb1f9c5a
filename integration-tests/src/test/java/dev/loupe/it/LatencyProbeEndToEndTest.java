package dev.loupe.it;

import dev.loupe.pprof.ParcaRules;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 7 end to end: the packaged agent with {@code --probe BINARY:FUNCTION} against Go targets (normal, PIE,
 * stripped PIE) and a C target, all started after the agent (a probe on a path covers later processes).
 * The targets measure every call themselves; /metrics, the per-interval latency profiles and the HTTP
 * latency profile must agree with them.
 */
class LatencyProbeEndToEndTest {
    static final Path GO = Path.of("/usr/lib/go-1.19/bin/go");
    /** The bpf module's latency target, one source for both its tests and these. */
    static final Path GO_SOURCES = Path.of(System.getProperty("loupe.repo", "..")).toAbsolutePath()
            .resolve("bpf/src/test/go/latency_target");
    static final int GOROUTINES = 1000;
    static final int CALLS_EACH = 4;

    @TempDir
    static Path dir;
    static Path goNormal;
    static Path goPie;
    static Path goStrippedPie;
    static Path cTarget;

    @BeforeAll
    static void build() throws Exception {
        goNormal = buildGo("go-normal");
        goPie = buildGo("go-pie", "-buildmode=pie");
        goStrippedPie = buildGo("go-stripped-pie", "-buildmode=pie", "-ldflags=-s -w");
        cTarget = Targets.build(Targets.LATENCY_TARGET, dir, "c-target", "-pthread");
    }

    static Path buildGo(String name, String... flags) throws Exception {
        Path out = dir.resolve(name);
        List<String> cmd = new ArrayList<>(List.of(GO.toString(), "build", "-o", out.toString()));
        cmd.addAll(List.of(flags));
        cmd.add("main.go");
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(GO_SOURCES.toFile()).redirectErrorStream(true);
        pb.environment().put("GO111MODULE", "off");
        pb.environment().put("GOCACHE", dir.resolve("gocache").toString());
        pb.environment().putIfAbsent("HOME", dir.toString());
        Process p = pb.start();
        String log = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), "go build " + name + ": " + log);
        return out;
    }

    /** A target's own measurement; a Go target's also names the goroutines that made the calls. */
    record Truth(long calls, long sumNs, Set<Long> goids, String output) {
        double meanNs() {
            return (double) sumNs / calls;
        }
    }

    static Truth runTarget(Path bin, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(bin.toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("GODEBUG", "adaptivestackstart=0"); // each goroutine grows its stack in work()'s prologue
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), bin + " failed:\n" + out);
        assertFalse(out.contains("fatal error") || out.contains("panic") || out.contains("unexpected return pc"), out);
        Matcher calls = Pattern.compile("(?m)^calls (\\d+)$").matcher(out);
        Matcher sum = Pattern.compile("(?m)^sum_ns (\\d+)$").matcher(out);
        assertTrue(calls.find() && sum.find(), "no ground truth from " + bin + ":\n" + out);
        Matcher goids = Pattern.compile("(?m)^goids ([0-9 ]+)$").matcher(out);
        Set<Long> g = goids.find() ? Arrays.stream(goids.group(1).split(" ")).map(Long::valueOf).collect(Collectors.toSet()) : Set.of();
        return new Truth(Long.parseLong(calls.group(1)), Long.parseLong(sum.group(1)), g, out);
    }

    @Test
    void goAndCFunctionsMeasuredIntoMetricsAndProfiles(@TempDir Path work) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String base = "http://127.0.0.1:" + port;
        HttpClient http = HttpClient.newHttpClient();
        Path out = work.resolve("profiles");
        Map<Path, String> function = Map.of(goNormal, "main.work", goPie, "main.work", goStrippedPie, "main.work", cTarget, "work");
        Map<Path, Truth> truth = new HashMap<>();
        String metrics;
        String log;
        try (AgentProcess agent = AgentProcess.start(work, "--pid", Long.toString(ProcessHandle.current().pid()),
                "--interval", "1s", "--output", out.toString(), "--http", "127.0.0.1:" + port, "--http-profiles", "unauthenticated",
                "--probe", goNormal + ":main.work", "--probe", goPie + ":main.work", "--probe", goStrippedPie + ":main.work",
                "--probe", cTarget + ":work", "--probe", goNormal + ":nomatch.*")) {
            agent.awaitSampling(Duration.ofSeconds(120));
            String before = get(http, base + "/metrics");
            for (Path bin : function.keySet()) {
                assertTrue(before.contains(series("count", bin, function.get(bin)) + " 0"),
                        "each series is present at 0 once attached:\n" + before);
            }
            for (Path bin : List.of(goNormal, goPie, goStrippedPie)) {
                truth.put(bin, runTarget(bin, "work", Integer.toString(GOROUTINES), Integer.toString(CALLS_EACH)));
            }
            truth.put(cTarget, runTarget(cTarget, "flat", "16", "50"));
            metrics = get(http, base + "/metrics");
            Path metricsFile = work.resolve("metrics.txt");
            Files.writeString(metricsFile, metrics);
            assertEquals(List.of(), MetricsLint.problems(metricsFile), "promtool check metrics");

            byte[] live = http.send(HttpRequest.newBuilder(URI.create(base + "/debug/pprof/latency?seconds=1")).build(),
                    HttpResponse.BodyHandlers.ofByteArray()).body();
            Path liveFile = work.resolve("live-latency.pb.gz");
            Files.write(liveFile, live);
            assertTrue(ParcaRules.violations(PprofFiles.parse(live)).isEmpty());
            PprofTool.run("-raw", liveFile.toString());

            // The intervals the calls fell in end and are written: wait until the latency profiles hold every call.
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            Map<String, Long> written;
            while (!(written = callsInProfiles(out, function.keySet())).equals(expectedCalls(function, truth))) {
                assertTrue(System.nanoTime() < deadline, "the latency profiles do not hold every call within 30 s: "
                        + written + ", the targets made " + expectedCalls(function, truth));
                Thread.sleep(100);
            }
            agent.terminate();
            int exit = agent.awaitExit(Duration.ofSeconds(60));
            assertTrue(exit == 0 || exit == 143, "exit " + exit + " after SIGTERM:\n" + agent.log());
            log = agent.log();
        }
        System.out.println(log);
        assertTrue(log.contains("no function matches 'nomatch.*'"), "a glob matching nothing is named:\n" + log);

        Map<String, Long> profileCalls = new HashMap<>();
        Map<String, Long> profileNanos = new HashMap<>();
        Map<String, Set<Long>> profileGoids = new HashMap<>();
        // Every call is in the latency profiles (waited for above); they are written beside the CPU profiles.
        List<Path> files = latencyFiles(out);
        try (Stream<Path> s = Files.list(out)) {
            assertTrue(s.anyMatch(p -> p.getFileName().toString().startsWith("cpu-")), "no CPU profile in " + out);
        }
        for (Path f : files) {
            Profile p = PprofFiles.parse(Files.readAllBytes(f));
            assertEquals(List.of(), ParcaRules.violations(p), f.toString());
            assertEquals("calls", p.getStringTable((int) p.getSampleType(0).getType()));
            assertEquals("nanoseconds", p.getStringTable((int) p.getSampleType(1).getUnit()));
            for (Sample s : p.getSampleList()) {
                String key = str(p, s, "binary") + " " + str(p, s, "function");
                profileCalls.merge(key, s.getValue(0), Long::sum);
                profileNanos.merge(key, s.getValue(1), Long::sum);
                goid(p, s).ifPresent(g -> profileGoids.computeIfAbsent(key, k -> new HashSet<>()).add(g));
            }
        }
        // The Go and C targets may have run in different intervals: check each in a file that has it.
        Path withGo = firstWithFunction(files, "main.work");
        Path withC = firstWithFunction(files, "work");
        String raw = PprofTool.run("-raw", withGo.toString());
        assertTrue(raw.contains("main.work"), raw);
        String rawC = PprofTool.run("-raw", withC.toString());
        assertTrue(rawC.contains(" work"), rawC);
        String top = PprofTool.run("-top", "-sample_index=calls", withGo.toString());
        assertTrue(top.contains("main.work"), top);

        StringBuilder report = new StringBuilder();
        for (Path bin : function.keySet()) {
            Truth t = truth.get(bin);
            String f = function.get(bin);
            long count = value(metrics, series("count", bin, f));
            double sumSeconds = Double.parseDouble(valueText(metrics, series("sum", bin, f)));
            double mean = sumSeconds * 1e9 / count;
            String line = bin.getFileName() + " " + f + ": target calls " + t.calls() + " mean " + Math.round(t.meanNs())
                    + " ns; /metrics count " + count + " mean " + Math.round(mean) + " ns (ratio " + String.format("%.4f", mean / t.meanNs())
                    + "); profiles calls " + profileCalls.get(bin + " " + f);
            report.append(line).append('\n');
            assertEquals(t.calls(), count, line);
            assertEquals(1.0, mean / t.meanNs(), 0.02, line);
            assertEquals(count, value(metrics, series("bucket", bin, f).replace("}", ",le=\"+Inf\"}")), line);
            assertEquals(t.calls(), profileCalls.get(bin + " " + f), "per-interval deltas add up to the total: " + line);
            assertEquals(sumSeconds * 1e9, profileNanos.get(bin + " " + f), 1e-6 * sumSeconds * 1e9, line);
            assertEquals(t.goids(), profileGoids.getOrDefault(bin + " " + f, Set.of()),
                    "goid labels: exactly the goroutines the Go target printed (none for C): " + line);
        }
        for (Path bin : List.of(goNormal, goPie, goStrippedPie)) {
            assertEquals(GOROUTINES, truth.get(bin).goids().size(), bin + " printed one goid per goroutine");
        }
        report.append("thread migrations ").append(value(metrics, "loupe_probe_thread_migrations_total"))
                .append(", re-entries ").append(value(metrics, "loupe_probe_reentries_total"))
                .append(", calls measured ").append(value(metrics, "loupe_probe_calls_measured_total"))
                .append(", latency files ").append(files.size());
        System.out.println(report);
        assertEquals((long) GOROUTINES * CALLS_EACH, truth.get(goNormal).calls());
        long migrations = value(metrics, "loupe_probe_thread_migrations_total");
        assertTrue(migrations > 0, "goroutines return on other threads: " + migrations);
        assertEquals(0, value(metrics, "loupe_probe_unmatched_exits_total"), metrics);
        assertEquals(1, value(metrics, "loupe_probe_problems_total"), "the glob that matched nothing");
        assertTrue(metrics.contains("le=\"1.0E-6\"") && metrics.contains("le=\"1073.741824\""), metrics);
    }

    /** The latency profiles written so far (each appears whole: written aside, then renamed). */
    static List<Path> latencyFiles(Path out) throws IOException {
        try (Stream<Path> s = Files.list(out)) {
            return s.filter(p -> p.getFileName().toString().startsWith("latency-")).sorted().toList();
        }
    }

    /** "binary function" → calls, over every latency profile written so far, for the probed binaries. */
    static Map<String, Long> callsInProfiles(Path out, Set<Path> binaries) throws IOException {
        Map<String, Long> calls = new HashMap<>();
        for (Path f : latencyFiles(out)) {
            Profile p = PprofFiles.parse(Files.readAllBytes(f));
            for (Sample s : p.getSampleList()) {
                if (binaries.contains(Path.of(str(p, s, "binary")))) {
                    calls.merge(str(p, s, "binary") + " " + str(p, s, "function"), s.getValue(0), Long::sum);
                }
            }
        }
        return calls;
    }

    static Map<String, Long> expectedCalls(Map<Path, String> function, Map<Path, Truth> truth) {
        Map<String, Long> calls = new HashMap<>();
        function.forEach((bin, f) -> calls.put(bin + " " + f, truth.get(bin).calls()));
        return calls;
    }

    static String series(String suffix, Path bin, String function) {
        return "loupe_function_duration_seconds_" + suffix + "{binary=\"" + bin + "\",function=\"" + function + "\"}";
    }

    static String valueText(String metrics, String series) {
        for (String line : metrics.split("\n")) {
            if (line.startsWith(series + " ")) {
                return line.substring(series.length() + 1).trim();
            }
        }
        throw new AssertionError(series + " not in /metrics:\n" + metrics);
    }

    /** A series' value, which must be a whole number (the format writes counters as 16.0). */
    static long value(String metrics, String series) {
        double v = Double.parseDouble(valueText(metrics, series));
        assertEquals(Math.rint(v), v, series + " is not a whole number");
        return (long) v;
    }

    static String str(Profile p, Sample s, String key) {
        for (var l : s.getLabelList()) {
            if (p.getStringTable((int) l.getKey()).equals(key)) {
                return p.getStringTable((int) l.getStr());
            }
        }
        throw new AssertionError("sample without label " + key);
    }

    /** The numeric goid label, absent for native functions. */
    static Optional<Long> goid(Profile p, Sample s) {
        return s.getLabelList().stream().filter(l -> p.getStringTable((int) l.getKey()).equals("goid")).findFirst()
                .map(dev.loupe.pprof.proto.Label::getNum);
    }

    static String get(HttpClient http, String url) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), url + ": " + r.body());
        return r.body();
    }

    private static Path firstWithFunction(List<Path> files, String name) throws IOException {
        for (Path f : files) {
            Profile p = PprofFiles.parse(Files.readAllBytes(f));
            for (var fn : p.getFunctionList()) {
                if (p.getStringTable((int) fn.getName()).equals(name)) {
                    return f;
                }
            }
        }
        throw new AssertionError("no latency profile has function " + name + " among " + files);
    }
}
