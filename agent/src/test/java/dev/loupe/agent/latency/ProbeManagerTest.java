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
            // The mean covers both processes' calls, so the truth does too: the waiting process ran at another moment
            // (on this 2-core machine, maybe beside other load), and its sleeps may have overrun differently.
            truthSum += Long.parseLong(find(new String(waiting.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8), "sum_ns (\\d+)"));
            long[] first = totals(m.interval(1_000_000_000L, 1_000_000_000L).orElseThrow());
            assertEquals(16, first[0], "10 calls plus the waiting process's 6");
            String after = metrics(m);
            assertEquals(16, value(after, "loupe_function_duration_seconds_count{binary=\"" + c + "\",function=\"work\"}"), after);
            double mean = first[1] / 16.0;
            assertTrue(Math.abs(mean / (truthSum / 16.0) - 1) < 0.05, "mean " + mean + " vs the targets' " + truthSum / 16.0);
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

    /**
     * pid, comm and goid labels and caller stacks against a Go target with 1,000 goroutines: every goroutine's
     * calls under its own goid, exactly the goids the goroutines printed for themselves (main's is 1), the stack of the main goroutine's calls through main.main, the others'
     * through the goroutine's closure; checked in the profile and by go tool pprof -tagfocus=goid=N.
     */
    @Test
    void goroutineLabelsAndCallerStacks(@TempDir Path dir) throws Exception {
        Path go = TestBinaries.buildGoMany(dir);
        ProbeManager m = ProbeManager.start(List.of(ProbeConfig.ofBinary(go, List.of("main.work"), true)),
                ProbeManager.Options.defaults(1000)).orElseThrow();
        Process p = new ProcessBuilder(go.toString(), "1000", "3").redirectErrorStream(true).start();
        try {
            java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream()));
            String calls = out.readLine();
            String goroutines = out.readLine();
            String goidLine = out.readLine();
            assertEquals("calls 3003", calls);
            assertEquals("goroutines 1001", goroutines);
            assertTrue(goidLine.startsWith("goids 1 "), "the main goroutine is 1: " + goidLine);
            List<Long> printed = java.util.Arrays.stream(goidLine.substring("goids ".length()).split(" ")).map(Long::valueOf).toList();
            assertEquals(1001, java.util.Set.copyOf(printed).size(), "one goid per goroutine: " + goidLine);
            Profile prof = m.interval(1_000_000_000L, 1_000_000_000L).orElseThrow();
            assertEquals(List.of(), ParcaRules.violations(prof));
            java.util.Map<Long, Long> perGoid = new java.util.HashMap<>();
            long total = 0;
            long mainGoid = -1;
            for (Sample s : prof.getSampleList()) {
                total += s.getValue(0);
                assertEquals(p.pid(), num(prof, s, "pid"));
                assertEquals("go-many", str(prof, s, "comm"));
                assertEquals("main.work", str(prof, s, "function"));
                long goid = num(prof, s, "goid");
                perGoid.merge(goid, s.getValue(0), Long::sum);
                List<String> names = names(prof, s);
                assertEquals(List.of("main.work", "main.caller"), names.subList(0, 2), names.toString());
                List<String> rest = names.subList(2, names.size());
                if (rest.get(0).equals("main.main")) {
                    assertEquals(List.of("main.main", "runtime.main"), rest.subList(0, 2), names.toString());
                    mainGoid = goid;
                } else {
                    assertTrue(rest.get(0).startsWith("main.main.func"), names.toString());
                }
                assertTrue(rest.get(rest.size() - 1).startsWith("runtime.goexit"), names.toString());
            }
            assertEquals(3003, total);
            assertEquals(1001, perGoid.size(), "one goid per goroutine");
            assertEquals(java.util.Set.copyOf(printed), perGoid.keySet(),
                    "the goids the goroutines printed for themselves (the runtime's numbering, not another field of g)");
            assertTrue(perGoid.values().stream().allMatch(n -> n == 3), "each goroutine called work() 3 times: " + perGoid);
            assertEquals(1, mainGoid, "the main goroutine's calls came through main.main, under its goid");
            assertEquals(3003, value(metrics(m), "loupe_function_duration_seconds_count{binary=\"" + go + "\",function=\"main.work\"}"));
            assertEquals(0, value(metrics(m), "loupe_probe_groups_full_total"));

            Path f = dir.resolve("latency.pb.gz");
            java.nio.file.Files.write(f, dev.loupe.pprof.PprofFiles.gzip(prof));
            String traces = TestBinaries.run(dir, List.of(TestBinaries.GO.toString(), "tool", "pprof", "-traces",
                    "-tagfocus=goid=" + mainGoid, f.toString()), List.of());
            assertTrue(traces.matches("(?s).*goid: +" + mainGoid + "\\n.*") && traces.matches("(?s).*pid: +" + p.pid() + "\\n.*")
                    && traces.matches("(?s).*comm: +go-many\\n.*"), traces);
            assertTrue(traces.contains("main.main") && !traces.contains("main.main.func"), "only the main goroutine: " + traces);
            String tags = TestBinaries.run(dir, List.of(TestBinaries.GO.toString(), "tool", "pprof", "-tags", "-sample_index=calls",
                    "-tagfocus=goid=" + mainGoid, f.toString()), List.of());
            assertTrue(tags.matches("(?s).*goid: Total 3(\\.0)?\\n +3(\\.0)? \\( *100%\\): " + mainGoid + "\\n.*"), "3 calls of that goroutine: " + tags);
        } finally {
            p.destroyForcibly();
            m.close();
        }
    }

    @Test
    void nativeCallerStacksWithFramePointers(@TempDir Path dir) throws Exception {
        Path c = TestBinaries.buildCWithFramePointers(dir);
        ProbeManager m = ProbeManager.start(List.of(ProbeConfig.ofBinary(c, List.of("work"), true)),
                ProbeManager.Options.defaults(1000)).orElseThrow();
        Process p = new ProcessBuilder(c.toString(), "6", "0", "30").redirectErrorStream(true).start();
        try {
            java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream()));
            assertEquals("calls 6", out.readLine());
            Profile prof = m.interval(1, 1).orElseThrow();
            assertEquals(6, totals(prof)[0]);
            for (Sample s : prof.getSampleList()) {
                assertEquals(p.pid(), num(prof, s, "pid"));
                assertEquals("c-fp", str(prof, s, "comm"));
                assertTrue(s.getLabelList().stream().noneMatch(l -> prof.getStringTable((int) l.getKey()).equals("goid")));
                List<String> names = names(prof, s);
                assertEquals(List.of("work", "main"), names.subList(0, 2), names.toString());
            }
        } finally {
            p.destroyForcibly();
            m.close();
        }
    }

    static long num(Profile p, Sample s, String key) {
        return s.getLabelList().stream().filter(l -> p.getStringTable((int) l.getKey()).equals(key)).findFirst()
                .orElseThrow(() -> new AssertionError("no label " + key)).getNum();
    }

    static String str(Profile p, Sample s, String key) {
        return p.getStringTable((int) s.getLabelList().stream().filter(l -> p.getStringTable((int) l.getKey()).equals(key))
                .findFirst().orElseThrow(() -> new AssertionError("no label " + key)).getStr());
    }

    /** Function names of a sample's locations, leaf first ("?" for a location without a function). */
    static List<String> names(Profile p, Sample s) {
        java.util.Map<Long, String> fn = new java.util.HashMap<>();
        p.getFunctionList().forEach(f -> fn.put(f.getId(), p.getStringTable((int) f.getName())));
        java.util.Map<Long, String> loc = new java.util.HashMap<>();
        p.getLocationList().forEach(l -> loc.put(l.getId(), l.getLineCount() == 0 ? "?" : fn.get(l.getLine(0).getFunctionId())));
        return s.getLocationIdList().stream().map(loc::get).toList();
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

    /** /metrics as served: the manager's registered metrics in the text format. */
    static String metrics(ProbeManager m) throws java.io.IOException {
        io.prometheus.metrics.model.registry.PrometheusRegistry r = new io.prometheus.metrics.model.registry.PrometheusRegistry();
        m.registerMetrics(r);
        return new String(dev.loupe.agent.http.DebugHttpServer.metricsText(r), java.nio.charset.StandardCharsets.UTF_8);
    }

    /** A series' value, which must be a whole number (counts are; the format may write 16 as 16.0). */
    static long value(String metrics, String series) {
        double v = Double.parseDouble(find(metrics, "(?m)^" + Pattern.quote(series) + " (\\S+)$"));
        assertEquals(Math.rint(v), v, series + " is not a whole number: " + v);
        return (long) v;
    }

    static String find(String text, String regex) {
        Matcher m = Pattern.compile(regex).matcher(text);
        assertTrue(m.find(), regex + " not in:\n" + text);
        return m.group(1);
    }
}
