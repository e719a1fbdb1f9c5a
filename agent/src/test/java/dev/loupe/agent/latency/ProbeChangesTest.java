package dev.loupe.agent.latency;

import dev.loupe.agent.regression.BaselineKind;
import dev.loupe.agent.regression.FunctionStatus;
import dev.loupe.agent.regression.RegressionTracker;
import dev.loupe.bpf.LatencyProbes;
import dev.loupe.config.ProbeConfig;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import dev.loupe.unwinder.elf.ElfFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static dev.loupe.agent.latency.ProbeManagerTest.metrics;
import static dev.loupe.agent.latency.ProbeManagerTest.totals;
import static dev.loupe.agent.latency.ProbeManagerTest.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Probes changed while the agent runs: a reload's new list, and a new build deployed at a probed path (real BPF). */
class ProbeChangesTest {
    private static ProbeManager.Options shortDrain() {
        return new ProbeManager.Options(1000, LatencyProbes.DEFAULT_MAX_IN_FLIGHT, Duration.ofMinutes(30),
                LatencyProbes.DEFAULT_MAX_GROUPS, Duration.ofSeconds(1), 65536, Duration.ofMillis(300), 256);
    }

    @Test
    void aReloadAttachesAndDetachesOnlyWhatChangedAndCountsStayCumulative(@TempDir Path dir) throws Exception {
        Path c = TestBinaries.buildC(dir);
        String work = "loupe_function_duration_seconds_count{binary=\"" + c + "\",function=\"work\"}";
        String tail = "loupe_function_duration_seconds_count{binary=\"" + c + "\",function=\"tail\"}";
        ProbeManager m = ProbeManager.start(List.of(ProbeConfig.ofBinary(c, List.of("work"), false)), shortDrain()).orElseThrow();
        try {
            TestBinaries.run(dir, List.of(c.toString(), "3"), List.of());
            assertEquals(3, totals(m.interval(1, 1).orElseThrow())[0]);

            assertEquals("probes: 1 attached, 1 detached, 1 now", m.reconfigure(List.of(ProbeConfig.ofBinary(c, List.of("tail"), false))));
            assertEquals(List.of(c + " tail"), m.attachedFunctions());
            TestBinaries.run(dir, List.of(c.toString(), "2"), List.of());
            String s = metrics(m);
            assertEquals(3, value(s, work), "work was detached: its count stays, no new calls: " + s);
            assertEquals(0, value(s, tail), "tail is never called by this target: " + s);
            assertEquals(1, value(s, "loupe_probe_functions_attached"));

            assertEquals("probes: 1 attached, 0 detached, 2 now", m.reconfigure(List.of(ProbeConfig.ofBinary(c, List.of("tail", "work"), false))));
            assertEquals("probes: 0 attached, 0 detached, 2 now", m.reconfigure(List.of(ProbeConfig.ofBinary(c, List.of("tail", "work"), false))),
                    "the same list again changes nothing");
            TestBinaries.run(dir, List.of(c.toString(), "4"), List.of());
            assertEquals(7, value(metrics(m), work), "one series, cumulative over both attachments: 3 + 4");

            assertEquals("probes: 0 attached, 2 detached, 0 now", m.reconfigure(List.of()));
            assertEquals(List.of(), m.attachedFunctions());
            assertEquals(7, value(metrics(m), work));
        } finally {
            m.close();
        }
    }

    /**
     * A new build renamed over the probed path: it is attached within a second, its calls carry its build id,
     * the old build's still-running process is measured until it stops calling, and the regression baselines see
     * a deploy (the old build is the new one's previous_build baseline).
     */
    @Test
    void aNewBuildAtTheSamePathIsProbedWhileTheOldBuildDrains(@TempDir Path dir) throws Exception {
        Path oldBuild = TestBinaries.buildC(dir);
        Path newBuild = TestBinaries.buildCWithFramePointers(dir);
        String oldId = ElfFile.buildIdOf(oldBuild).orElseThrow();
        String newId = ElfFile.buildIdOf(newBuild).orElseThrow();
        assertNotEquals(oldId, newId);
        Path app = dir.resolve("app");
        Files.copy(oldBuild, app);
        RegressionTracker tracker = RegressionTracker.open(dir.resolve("baselines"),
                new RegressionTracker.Settings(Duration.ofMinutes(10), 2, 1.2, Duration.ZERO), System::currentTimeMillis);
        // The manager's monotonic clock: real time plus what the test skips (a deploy's drain, instead of sleeping it).
        java.util.concurrent.atomic.AtomicLong skipped = new java.util.concurrent.atomic.AtomicLong();
        ProbeManager m = ProbeManager.start(List.of(ProbeConfig.ofBinary(app, List.of("work"), false)), shortDrain(),
                () -> { throw new AssertionError("no stacks"); }, tracker, () -> System.nanoTime() + skipped.get()).orElseThrow();
        String count = "loupe_function_duration_seconds_count{binary=\"" + app + "\",function=\"work\"}";
        Process old = null;
        try {
            TestBinaries.run(dir, List.of(app.toString(), "4"), List.of());
            assertEquals(Map.of(oldId, 4L), callsByBuild(m.interval(1, 1).orElseThrow()));
            // An old process that calls after the deploy: waits 2 s, then 3 calls.
            old = new ProcessBuilder(app.toString(), "3", "2").redirectErrorStream(true).start();
            Path staged = dir.resolve("app.new");
            Files.copy(newBuild, staged);
            Files.move(staged, app, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            // The manager checks the path each second: the new build's probe and the old one's, draining.
            awaitAttached(m, 2);
            assertEquals(List.of(app + " work"), m.attachedFunctions());
            TestBinaries.run(dir, List.of(app.toString(), "5"), List.of());
            assertEquals(0, old.waitFor());
            assertEquals(Map.of(oldId, 3L, newId, 5L), callsByBuild(m.interval(2, 1).orElseThrow()));
            // interval(2) read the old build's last calls; the next interval detaches its probe once drainIdle has
            // passed since then without another call, by the manager's clock: moved past it rather than slept.
            assertEquals(12, value(metrics(m), count), "one series over both builds");
            assertEquals(2, value(metrics(m), "loupe_probe_functions_attached"), "the old build's probe still drains");
            skipped.addAndGet(shortDrain().drainIdle().toNanos() + 1);
            assertEquals(0, totals(m.interval(3, 1).orElseThrow())[0]);
            String s = metrics(m);
            assertEquals(1, value(s, "loupe_probe_functions_attached"), "the old build's probe detached: " + s);
            assertEquals(12, value(s, count));

            List<FunctionStatus> verdicts = tracker.evaluate();
            FunctionStatus previous = verdicts.stream().filter(v -> v.kind() == BaselineKind.PREVIOUS_BUILD).findFirst().orElseThrow();
            assertEquals(newId, previous.buildId());
            assertEquals(oldId, previous.baselineBuildId());
            assertEquals(5, previous.verdict().currentCalls());
            assertEquals(7, previous.verdict().baselineCalls(), "the old build's 4 calls before and 3 after the deploy");
            Profile baseline = m.stored("baseline", "previous_build").orElseThrow();
            assertEquals(Map.of(oldId, 7L), callsByBuild(baseline));
            assertEquals(Map.of(newId, 5L), callsByBuild(m.stored("window", "current").orElseThrow()));
            assertTrue(metrics(m).contains("loupe_function_latency_baseline_info{baseline=\"previous_build\",baseline_build_id=\""
                    + oldId + "\",binary=\"" + app + "\",build_id=\"" + newId + "\",function=\"work\"} 1"), metrics(m));
        } finally {
            m.close();
            if (old != null) {
                old.destroyForcibly();
            }
        }
    }

    /**
     * A deploy of more functions than the spare probe ids (by default min(probes-max-functions, 256); 4 here):
     * the previous build's probes make room, but their ids stay taken until the interval's groups are drained, so
     * part of the new build waits; at the interval's end it is planned again and all of the new build is probed.
     */
    @Test
    void aDeployOfMoreFunctionsThanTheSpareIdsIsProbedWhollyAfterOneInterval(@TempDir Path dir) throws Exception {
        int functions = 6;
        int spare = 4; // at the deploy 4 attach, 2 wait for the interval
        Path v1 = TestBinaries.buildManyFunctions(dir, "many-v1", functions, 1);
        Path v2 = TestBinaries.buildManyFunctions(dir, "many-v2", functions, 2);
        String id1 = ElfFile.buildIdOf(v1).orElseThrow();
        String id2 = ElfFile.buildIdOf(v2).orElseThrow();
        assertNotEquals(id1, id2);
        Path app = dir.resolve("app");
        Files.copy(v1, app);
        ProbeManager.Options options = new ProbeManager.Options(functions, LatencyProbes.DEFAULT_MAX_IN_FLIGHT,
                Duration.ofMinutes(30), LatencyProbes.DEFAULT_MAX_GROUPS, Duration.ofSeconds(1), 65536, Duration.ofMinutes(1), spare);
        ProbeManager m = ProbeManager.start(List.of(ProbeConfig.ofBinary(app, List.of("many_*"), false)), options).orElseThrow();
        try {
            TestBinaries.run(dir, List.of(app.toString(), "1"), List.of());
            assertEquals(Map.of(id1, (long) functions), callsByBuild(m.interval(1, 1).orElseThrow()));

            Path staged = dir.resolve("app.new");
            Files.copy(v2, staged);
            Files.move(staged, app, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            // The manager checks the path each second; then the old build's 6 probes drain, 4 new ones attach and
            // 2 old ones are detached early for the 2 that wait: 4 + 4.
            awaitAttached(m, 2 * spare);
            TestBinaries.run(dir, List.of(app.toString(), "1"), List.of());
            assertEquals(Map.of(id2, (long) spare), callsByBuild(m.interval(2, 1).orElseThrow()),
                    "at the deploy, as many as there are spare ids");

            // After the interval that freed the previous build's ids (once the kernel has removed their links, which
            // takes ~0.1 s a link, in the background): all of them.
            Map<String, Long> calls = Map.of();
            for (int i = 3; i < 8 && !calls.equals(Map.of(id2, (long) functions)); i++) {
                Thread.sleep(1000);
                TestBinaries.run(dir, List.of(app.toString(), "1"), List.of());
                calls = callsByBuild(m.interval(i, 1).orElseThrow());
            }
            assertEquals(Map.of(id2, (long) functions), calls, "all of the new build within 5 intervals after the deploy's");
        } finally {
            m.close();
        }
    }

    /** Waits up to 10 s for {@code loupe_probe_functions_attached} (attached and draining) to reach {@code n}. */
    private static void awaitAttached(ProbeManager m, int n) throws Exception {
        long deadline = System.nanoTime() + 10_000_000_000L;
        double now;
        while ((now = value(metrics(m), "loupe_probe_functions_attached")) != n && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertEquals(n, now, "loupe_probe_functions_attached");
    }

    /** Calls per build_id label. */
    static Map<String, Long> callsByBuild(Profile p) {
        Map<String, Long> out = new TreeMap<>();
        for (Sample s : p.getSampleList()) {
            String build = "";
            for (var l : s.getLabelList()) {
                if (p.getStringTable((int) l.getKey()).equals("build_id")) {
                    build = p.getStringTable((int) l.getStr());
                }
            }
            out.merge(build, s.getValue(0), Long::sum);
        }
        return out;
    }
}
