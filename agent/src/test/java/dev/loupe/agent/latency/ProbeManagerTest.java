package dev.loupe.agent.latency;

import dev.loupe.config.ProbeConfig;
import dev.loupe.pprof.ParcaRules;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** ProbeManager with the real latency programs in the kernel (root; fails, never skips, without BPF). */
class ProbeManagerTest {
    @Test
    void measuresLaterProcessesReportsDeltasAndDetachesExitedPids(@TempDir Path dir) throws Exception {
        Path c = TestBinaries.buildC(dir);
        Process waiting = new ProcessBuilder(c.toString(), "6", "1").redirectErrorStream(true).start();
        ProbeManager m = ProbeManager.start(List.of(
                ProbeConfig.ofBinary(c, List.of("work", "nomatch*"), false),
                ProbeConfig.ofPid((int) waiting.pid(), List.of("tail"), false)), ProbeManager.Options.defaults(1000)).orElseThrow();
        try {
            assertEquals(List.of(c + " work", c + " tail"), m.attachedFunctions());
            String atStart = metrics(m);
            assertEquals(0, value(atStart, "loupe_function_duration_seconds_count{binary=\"" + c + "\",function=\"work\"}"), atStart);
            assertEquals(2, value(atStart, "loupe_probe_functions_attached"));
            assertEquals(1, value(atStart, "loupe_probe_problems_total"), "the glob matching nothing");

            // Started after the probes: a binary path covers new processes.
            String out = TestBinaries.run(dir, List.of(c.toString(), "10"), List.of());
            long truthSum = Long.parseLong(find(out, "sum_ns (\\d+)"));
            assertTrue(waiting.waitFor() == 0);
            long[] first = totals(m.interval(1_000_000_000L, 1_000_000_000L).orElseThrow());
            assertEquals(16, first[0], "10 calls plus the waiting process's 6");
            String after = metrics(m);
            assertEquals(16, value(after, "loupe_function_duration_seconds_count{binary=\"" + c + "\",function=\"work\"}"), after);
            double mean = first[1] / 16.0;
            assertTrue(Math.abs(mean / (truthSum / 10.0) - 1) < 0.05, "mean " + mean + " vs the target's " + truthSum / 10.0);
            assertEquals(1, value(after, "loupe_probe_functions_attached"), "the exited pid's probe is detached: " + after);

            long[] second = totals(m.interval(2_000_000_000L, 1_000_000_000L).orElseThrow());
            assertEquals(0, second[0], "deltas: no calls since the last interval");
            assertEquals(16, value(metrics(m), "loupe_function_duration_seconds_count{binary=\"" + c + "\",function=\"work\"}"),
                    "/metrics stays cumulative");

            Profile live = m.capture(Duration.ofMillis(1));
            assertEquals(List.of(), ParcaRules.violations(live));
        } finally {
            m.close();
            waiting.destroyForcibly();
        }
        String closed = metrics(m);
        assertEquals(0, value(closed, "loupe_probe_functions_attached"));
        assertEquals(16, value(closed, "loupe_function_duration_seconds_count{binary=\"" + c + "\",function=\"work\"}"));
        assertTrue(m.interval(3, 1).isEmpty());
    }

    @Test
    void aBinaryPathThatAppearsLaterIsProbedFromTheNextInterval(@TempDir Path dir) throws Exception {
        Path c = TestBinaries.buildC(dir);
        Path later = dir.resolve("installed-later");
        ProbeManager m = ProbeManager.start(List.of(ProbeConfig.ofBinary(later, List.of("work"), false)),
                ProbeManager.Options.defaults(1000)).orElseThrow();
        try {
            assertEquals(List.of(), m.attachedFunctions());
            assertEquals(1, value(metrics(m), "loupe_probe_problems_total"), "said once that the file is missing");
            assertEquals(0, totals(m.interval(1, 1).orElseThrow())[0]);
            java.nio.file.Files.copy(c, later, java.nio.file.StandardCopyOption.COPY_ATTRIBUTES);
            assertEquals(0, totals(m.interval(2, 1).orElseThrow())[0], "attached in this interval's maintenance");
            assertEquals(List.of(later + " work"), m.attachedFunctions());
            TestBinaries.run(dir, List.of(later.toString(), "4"), List.of());
            assertEquals(4, totals(m.interval(3, 1).orElseThrow())[0]);
            assertEquals(4, value(metrics(m), "loupe_function_duration_seconds_count{binary=\"" + later + "\",function=\"work\"}"));
        } finally {
            m.close();
        }
    }

    static long[] totals(Profile p) {
        assertEquals(List.of(), ParcaRules.violations(p));
        long[] t = new long[2];
        for (Sample s : p.getSampleList()) {
            t[0] += s.getValue(0);
            t[1] += s.getValue(1);
        }
        return t;
    }

    static String metrics(ProbeManager m) {
        StringBuilder b = new StringBuilder();
        m.appendMetrics(b);
        return b.toString();
    }

    static long value(String metrics, String series) {
        return Long.parseLong(find(metrics, "(?m)^" + Pattern.quote(series) + " (\\d+)$"));
    }

    static String find(String text, String regex) {
        Matcher m = Pattern.compile(regex).matcher(text);
        assertTrue(m.find(), regex + " not in:\n" + text);
        return m.group(1);
    }
}
