package dev.loupe.agent.latency;

import dev.loupe.agent.regression.FineHistogram;
import dev.loupe.bpf.LatencyHistogram;
import dev.loupe.bpf.LatencyStats;
import dev.loupe.bpf.ProbeSpec;
import dev.loupe.pprof.ParcaRules;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import dev.loupe.agent.http.DebugHttpServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The /metrics text and the latency profile, checked by promtool, go tool pprof and Parca's rules. */
class LatencyOutputTest {
    static final ProbedFunction WORK = new ProbedFunction("/usr/bin/app \"x\"", "main.work", 0x4a1000,
            ProbeSpec.nativeFunction(0, Path.of("/bin/true"), -1, 0x1000));
    static final ProbedFunction IDLE = new ProbedFunction("/usr/bin/app \"x\"", "main.idle", 0x4a2000,
            ProbeSpec.nativeFunction(1, Path.of("/bin/true"), -1, 0x2000));

    static LatencyHistogram hist(int id, long sum, long... perBucket) {
        long[] b = new long[LatencyHistogram.BUCKETS];
        long n = 0;
        for (int i = 0; i + 1 < perBucket.length; i += 2) {
            b[(int) perBucket[i]] = perBucket[i + 1];
            n += perBucket[i + 1];
        }
        return new LatencyHistogram(id, b, sum, n);
    }

    /** The text /metrics serves for these functions and counters. */
    static String text(LatencyMetrics.Snapshot snapshot) throws java.io.IOException {
        PrometheusRegistry r = new PrometheusRegistry();
        r.register(new LatencyMetrics(() -> snapshot));
        return new String(DebugHttpServer.metricsText(r), StandardCharsets.UTF_8);
    }

    /**
     * The bucket bounds are 2^k µs for k = 0..30 and +Inf, the same numbers as ever; the {@code le} strings
     * are the client library's float form (below 1 ms it writes {@code 1.0E-6}, where the hand-written
     * renderer wrote {@code 0.000001}). Pinned here: rules that match {@code le} as a string depend on them.
     */
    @Test
    void bucketBoundsArePowersOfTwoMicrosecondsInTheLibrarysFloatForm() throws Exception {
        String text = text(new LatencyMetrics.Snapshot(totals(List.of(WORK), Map.of()), null, 1, 0, 0));
        List<String> le = text.lines().filter(l -> l.startsWith("loupe_function_duration_seconds_bucket{"))
                .map(l -> l.replaceAll(".*,le=\"([^\"]+)\"}.*", "$1")).toList();
        assertEquals(List.of("1.0E-6", "2.0E-6", "4.0E-6", "8.0E-6", "1.6E-5", "3.2E-5", "6.4E-5", "1.28E-4", "2.56E-4",
                "5.12E-4", "0.001024", "0.002048", "0.004096", "0.008192", "0.016384", "0.032768", "0.065536", "0.131072",
                "0.262144", "0.524288", "1.048576", "2.097152", "4.194304", "8.388608", "16.777216", "33.554432", "67.108864",
                "134.217728", "268.435456", "536.870912", "1073.741824", "+Inf"), le);
        for (int k = 0; k <= 30; k++) {
            assertEquals(LatencyHistogram.upperBoundSeconds(k), Double.parseDouble(le.get(k)), "exact value, k=" + k);
            assertEquals(1L << k, Math.round(LatencyHistogram.upperBoundSeconds(k) * 1e6), "2^k µs, k=" + k);
        }
    }

    @Test
    void metricsAreCumulativeHistogramsAndPassPromtool(@TempDir Path dir) throws Exception {
        String text = text(new LatencyMetrics.Snapshot(totals(List.of(WORK, IDLE), Map.of(0, hist(0, 3_000_000_000L, 12, 2, 15, 1, 31, 1))),
                new LatencyStats(5, 4, 3, 2, 1, 0, 0, 0, 0, 2, 1, 7), 2, 1, 3));
        String w = "binary=\"/usr/bin/app \\\"x\\\"\",function=\"main.work\"";
        assertTrue(text.contains("loupe_function_duration_seconds_bucket{" + w + ",le=\"0.002048\"} 0\n"), text);
        assertTrue(text.contains("loupe_function_duration_seconds_bucket{" + w + ",le=\"0.004096\"} 2\n"), text);
        assertTrue(text.contains("loupe_function_duration_seconds_bucket{" + w + ",le=\"0.032768\"} 3\n"), text);
        assertTrue(text.contains("loupe_function_duration_seconds_bucket{" + w + ",le=\"1073.741824\"} 3\n"), text);
        assertTrue(text.contains("loupe_function_duration_seconds_bucket{" + w + ",le=\"+Inf\"} 4\n"), text);
        assertTrue(text.contains("loupe_function_duration_seconds_sum{" + w + "} 3.0\n"), text);
        assertTrue(text.contains("loupe_function_duration_seconds_count{" + w + "} 4\n"), text);
        String idle = "binary=\"/usr/bin/app \\\"x\\\"\",function=\"main.idle\"";
        assertTrue(text.contains("loupe_function_duration_seconds_bucket{" + idle + ",le=\"+Inf\"} 0\n"), "present at 0: " + text);
        assertTrue(text.contains("loupe_function_duration_seconds_count{" + idle + "} 0\n"), text);
        assertTrue(text.contains("loupe_probe_thread_migrations_total 3.0\n"), text);
        assertTrue(text.contains("loupe_probe_aged_out_total 7.0\n"), text);
        assertTrue(text.contains("loupe_probe_groups_full_total 5.0\n"), "kernel 2 + profile 3: " + text);
        assertTrue(text.contains("loupe_probe_stacks_full_total 1.0\n"), text);
        assertTrue(text.contains("loupe_probe_problems_total 1.0\n"), text);
        assertTrue(text.contains("loupe_probe_functions_attached 2.0\n"), text);
        assertEquals(2 * (32 + 2), text.lines().filter(l -> l.startsWith("loupe_function_duration_seconds")).count());
        Path f = dir.resolve("metrics.txt");
        Files.writeString(f, text);
        Process p = new ProcessBuilder("promtool", "check", "metrics").redirectInput(f.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), "promtool: " + out);
    }

    @Test
    void profileHasOneSamplePerGroupWithLabelsAndCallerStacks(@TempDir Path dir) throws Exception {
        ProbedFunction goWork = new ProbedFunction("/usr/bin/app \"x\"", "main.work", 0x4a1000,
                ProbeSpec.go(2, Path.of("/bin/true"), -1, 0x1000, List.of(0x1010L), 152, ProbeSpec.GSource.R14));
        dev.loupe.unwinder.symbolize.MappingRef app = new dev.loupe.unwinder.symbolize.MappingRef(0x400000, 0x500000, 0,
                "/usr/bin/app", "abcd", true);
        var caller = new dev.loupe.unwinder.symbolize.Frame(0x4a2010, app, "main.caller", false);
        var top = new dev.loupe.unwinder.symbolize.Frame(0x4a3020, app, "main.main", false);
        LatencyGroups g = new LatencyGroups(3);
        assertTrue(g.add(new LatencyGroups.Key(2, 42, 7, 12, 92, List.of(caller, top), false), "app", 3, 9_000_000));
        assertTrue(g.add(new LatencyGroups.Key(2, 42, 7, 12, 92, List.of(caller, top), false), "app", 1, 3_000_000));
        assertTrue(g.add(new LatencyGroups.Key(2, 42, 8, 31, 257, List.of(caller), false), "app", 1, 5_000_000_000_000L));
        assertTrue(g.add(new LatencyGroups.Key(0, 43, 0, 15, 114, List.of(), true), "c", 2, 40_000_000));
        assertTrue(!g.add(new LatencyGroups.Key(0, 44, 0, 15, 114, List.of(), false), "c", 5, 1), "full");
        assertEquals(5, g.droppedCalls());
        Profile p = LatencyProfile.build(List.of(WORK, IDLE, goWork), g, 1_700_000_000_000_000_000L, 10_000_000_000L);
        assertEquals(List.of(), ParcaRules.violations(p));
        assertEquals(3, p.getSampleCount());
        long calls = 0;
        long nanos = 0;
        for (Sample s : p.getSampleList()) {
            calls += s.getValue(0);
            nanos += s.getValue(1);
        }
        assertEquals(7, calls);
        assertEquals(5_000_052_000_000L, nanos);
        Path f = dir.resolve("latency.pb.gz");
        Files.write(f, PprofFiles.gzip(p));
        String raw = pprof(f, "-raw");
        assertTrue(raw.contains("calls/count latency/nanoseconds"), raw);
        assertTrue(raw.contains("le_us:[4096 microseconds]") && raw.contains("le_us:[32768 microseconds]"), raw);
        // 3 ms calls: fine bucket 92 is [2883584, 3145728) ns; 20 ms calls: 114 is [18874368, 20971520); 5000 s: overflow.
        assertEquals(92, FineHistogram.bucketOf(3_000_000));
        assertEquals(3145728, FineHistogram.upperBound(92));
        assertEquals(114, FineHistogram.bucketOf(20_000_000));
        assertEquals(20971520, FineHistogram.upperBound(114));
        assertEquals(257, FineHistogram.bucketOf(5_000_000_000_000L));
        assertTrue(raw.contains("le_ns:[3145728 nanoseconds]") && raw.contains("le_ns:[20971520 nanoseconds]")
                && raw.contains("le_ns:[9223372036854775807 nanoseconds]"), raw);
        assertTrue(raw.contains("goid:[7]") && raw.contains("pid:[42]") && raw.contains("comm:[app]"), raw);
        String traces = pprof(f, "-traces", "-tagfocus=goid=7");
        assertTrue(traces.contains("main.work") && traces.contains("main.caller") && traces.contains("main.main"), traces);
        assertTrue(traces.indexOf("main.work") < traces.indexOf("main.caller") && traces.indexOf("main.caller") < traces.indexOf("main.main"),
                "leaf first: " + traces);
        assertTrue(traces.matches("(?s).*goid: +7\\n.*") && !traces.matches("(?s).*goid: +8\\n.*")
                && !traces.contains("[stack unavailable]"), traces);
        assertTrue(pprof(f, "-traces", "-tagfocus=pid=43").contains("[stack unavailable]"));
    }

    /** The kernel reports a process outside the agent's PID namespace as pid 0: labelled so, with no pid. */
    @Test
    void groupsOfProcessesOutsideThePidNamespaceAreLabelledSo() {
        LatencyGroups g = new LatencyGroups(2);
        assertTrue(g.add(new LatencyGroups.Key(0, 0, 0, 15, 114, List.of(), false), "host_app", 2, 40_000_000));
        assertTrue(g.add(new LatencyGroups.Key(0, 42, 0, 15, 114, List.of(), false), "app", 1, 20_000_000));
        Profile p = LatencyProfile.build(List.of(WORK), g, 1_700_000_000_000_000_000L, 10_000_000_000L);
        assertEquals(List.of(), ParcaRules.violations(p));
        Map<String, String> labelsByComm = new java.util.TreeMap<>();
        for (Sample s : p.getSampleList()) {
            List<String> labels = s.getLabelList().stream().map(l -> p.getStringTable((int) l.getKey()) + "="
                    + (l.getStr() != 0 ? p.getStringTable((int) l.getStr()) : Long.toString(l.getNum()))).toList();
            labelsByComm.put(labels.stream().filter(l -> l.startsWith("comm=")).findFirst().orElseThrow(), String.join(",", labels));
        }
        assertEquals(Map.of(
                "comm=app", "function=main.work,binary=/usr/bin/app \"x\",pid=42,comm=app,le_us=32768,le_ns=20971520",
                "comm=host_app", "function=main.work,binary=/usr/bin/app \"x\",pid_namespace=outside,comm=host_app,le_us=32768,"
                        + "le_ns=20971520"),
                labelsByComm);
    }

    private static String pprof(Path f, String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of(TestBinaries.GO.toString(), "tool", "pprof"));
        cmd.addAll(List.of(args));
        cmd.add(f.toString());
        Process proc = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(proc.getInputStream().readAllBytes());
        assertEquals(0, proc.waitFor(), out);
        return out;
    }

    /** What ProbeSet.totals gives: per function in order, its histogram by probe id, zeros when it has none. */
    private static Map<dev.loupe.agent.regression.FunctionKey, LatencyHistogram> totals(List<ProbedFunction> functions,
                                                                                         Map<Integer, LatencyHistogram> byId) {
        Map<dev.loupe.agent.regression.FunctionKey, LatencyHistogram> out = new java.util.LinkedHashMap<>();
        for (ProbedFunction f : functions) {
            out.put(f.key(), byId.getOrDefault(f.id(), new LatencyHistogram(f.id(), new long[LatencyHistogram.BUCKETS], 0, 0)));
        }
        return out;
    }
}
