package dev.loupe.agent.latency;

import dev.loupe.bpf.LatencyHistogram;
import dev.loupe.bpf.LatencyStats;
import dev.loupe.bpf.ProbeSpec;
import dev.loupe.pprof.ParcaRules;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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

    @Test
    void bucketBoundsArePlainDecimalsOfPowersOfTwoMicroseconds() {
        assertEquals("0.000001", LatencyMetrics.le(0));
        assertEquals("0.000512", LatencyMetrics.le(9));
        assertEquals("5.12E-4", Double.toString(LatencyHistogram.upperBoundSeconds(9)), "what Double.toString would give");
        assertEquals("0.001024", LatencyMetrics.le(10));
        assertEquals("1073.741824", LatencyMetrics.le(30));
        for (int k = 0; k <= 30; k++) {
            assertEquals(LatencyHistogram.upperBoundSeconds(k), Double.parseDouble(LatencyMetrics.le(k)), "exact value, k=" + k);
        }
        assertEquals("2.5", LatencyMetrics.seconds(2_500_000_000L));
        assertEquals("0.000000001", LatencyMetrics.seconds(1));
    }

    @Test
    void metricsAreCumulativeHistogramsAndPassPromtool(@TempDir Path dir) throws Exception {
        StringBuilder b = new StringBuilder();
        LatencyMetrics.render(b, List.of(WORK, IDLE), Map.of(0, hist(0, 3_000_000_000L, 12, 2, 15, 1, 31, 1)),
                new LatencyStats(5, 4, 3, 2, 1, 0, 0, 0, 0, 7), 2, 1);
        String text = b.toString();
        String w = "binary=\"/usr/bin/app \\\"x\\\"\",function=\"main.work\"";
        assertTrue(text.contains("loupe_function_duration_seconds_bucket{" + w + ",le=\"0.002048\"} 0\n"), text);
        assertTrue(text.contains("loupe_function_duration_seconds_bucket{" + w + ",le=\"0.004096\"} 2\n"), text);
        assertTrue(text.contains("loupe_function_duration_seconds_bucket{" + w + ",le=\"0.032768\"} 3\n"), text);
        assertTrue(text.contains("loupe_function_duration_seconds_bucket{" + w + ",le=\"1073.741824\"} 3\n"), text);
        assertTrue(text.contains("loupe_function_duration_seconds_bucket{" + w + ",le=\"+Inf\"} 4\n"), text);
        assertTrue(text.contains("loupe_function_duration_seconds_sum{" + w + "} 3\n"), text);
        assertTrue(text.contains("loupe_function_duration_seconds_count{" + w + "} 4\n"), text);
        String idle = "binary=\"/usr/bin/app \\\"x\\\"\",function=\"main.idle\"";
        assertTrue(text.contains("loupe_function_duration_seconds_bucket{" + idle + ",le=\"+Inf\"} 0\n"), "present at 0: " + text);
        assertTrue(text.contains("loupe_function_duration_seconds_count{" + idle + "} 0\n"), text);
        assertTrue(text.contains("loupe_probe_thread_migrations_total 3\n"), text);
        assertTrue(text.contains("loupe_probe_aged_out_total 7\n"), text);
        assertEquals(2 * (32 + 2), text.lines().filter(l -> l.startsWith("loupe_function_duration_seconds")).count());
        Path f = dir.resolve("metrics.txt");
        Files.writeString(f, text);
        Process p = new ProcessBuilder("promtool", "check", "metrics").redirectInput(f.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), "promtool: " + out);
    }

    @Test
    void profileHasExactTotalsPerFunctionAndCallsPerBucket(@TempDir Path dir) throws Exception {
        Map<Integer, LatencyHistogram> before = Map.of(0, hist(0, 1_000_000, 12, 1));
        Map<Integer, LatencyHistogram> now = Map.of(0, hist(0, 51_000_000, 12, 3, 15, 2), 1, hist(1, 0));
        Map<Integer, LatencyHistogram> delta = LatencyProfile.delta(now, before);
        assertEquals(4, delta.get(0).count());
        assertEquals(50_000_000, delta.get(0).sumNanos());
        Profile p = LatencyProfile.build(List.of(WORK, IDLE), delta, 1_700_000_000_000_000_000L, 10_000_000_000L);
        assertEquals(List.of(), ParcaRules.violations(p));
        assertEquals(1, p.getLocationCount(), "functions without calls are left out");
        assertEquals(3, p.getSampleCount(), "two buckets and the total");
        long calls = 0;
        long nanos = 0;
        for (Sample s : p.getSampleList()) {
            calls += s.getValue(0);
            nanos += s.getValue(1);
        }
        assertEquals(4, calls);
        assertEquals(50_000_000, nanos);
        Path f = dir.resolve("latency.pb.gz");
        Files.write(f, PprofFiles.gzip(p));
        Process proc = new ProcessBuilder(TestBinaries.GO.toString(), "tool", "pprof", "-raw", f.toString())
                .redirectErrorStream(true).start();
        String raw = new String(proc.getInputStream().readAllBytes());
        assertEquals(0, proc.waitFor(), raw);
        assertTrue(raw.contains("calls/count latency/nanoseconds"), raw);
        assertTrue(raw.contains("main.work"), raw);
        // Bucket 12 holds (2048, 4096] µs, bucket 15 (16384, 32768] µs: le_us is the upper bound.
        assertTrue(raw.contains("le_us:[4096 microseconds]") && raw.contains("le_us:[32768 microseconds]"), raw);
    }
}
