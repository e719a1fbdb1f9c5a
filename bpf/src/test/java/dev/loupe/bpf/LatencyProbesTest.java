package dev.loupe.bpf;

import dev.loupe.bpf.LatencyTargets.FunctionOffsets;
import dev.loupe.bpf.LatencyTargets.GroundTruth;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Latency probes in the real kernel against targets built here that measure themselves. Never skipped:
 * CI runs as root with BPF.
 */
class LatencyProbesTest {
    static final int GOROUTINES = 1200;
    static final int CALLS_EACH = 10;

    @TempDir
    static Path dir;
    static LatencyProbes probes;
    static Path goSrc;

    @BeforeAll
    static void open() throws Exception {
        BpfAvailability.unavailabilityReason().ifPresent(r -> fail("BPF must be available here (CI runs as root): " + r));
        probes = LatencyProbes.open();
        goSrc = dir.resolve("gosrc");
        Files.createDirectories(goSrc);
        Files.copy(Path.of("src/test/go/latency_target/main.go"), goSrc.resolve("main.go"));
    }

    @AfterAll
    static void close() {
        if (probes != null) {
            probes.close();
        }
    }

    @Test
    void goNormalBuild() throws Exception {
        Path bin = LatencyTargets.buildGo(goSrc, dir.resolve("go-exe"));
        FunctionOffsets f = LatencyTargets.offsets(bin, "main.work");
        measureGo(1, bin, f, ProbeSpec.GSource.R14);
    }

    @Test
    void goPieBuild() throws Exception {
        Path bin = LatencyTargets.buildGo(goSrc, dir.resolve("go-pie"), "-buildmode=pie");
        FunctionOffsets f = LatencyTargets.offsets(bin, "main.work");
        measureGo(2, bin, f, ProbeSpec.GSource.R14);
    }

    @Test
    void goStrippedPieBuild() throws Exception {
        Path full = LatencyTargets.buildGo(goSrc, dir.resolve("go-pie-full"), "-buildmode=pie");
        Path stripped = LatencyTargets.buildGo(goSrc, dir.resolve("go-pie-stripped"), "-buildmode=pie", "-ldflags=-s -w");
        assertThrows(IllegalStateException.class, () -> LatencyTargets.offsets(stripped, "main.work"), "really stripped");
        // Same source, same text: offsets found in the unstripped build serve the stripped one. Checked bytewise.
        FunctionOffsets f = LatencyTargets.offsets(full, "main.work");
        assertArrayEquals(LatencyTargets.bytesAt(full, f.entry(), 64), LatencyTargets.bytesAt(stripped, f.entry(), 64));
        for (long r : f.rets()) {
            assertArrayEquals(LatencyTargets.bytesAt(full, r - 15, 16), LatencyTargets.bytesAt(stripped, r - 15, 16));
        }
        measureGo(3, stripped, f, ProbeSpec.GSource.R14);
    }

    /** g from thread-local storage (fs_base - 8), the pre-1.17 way, which Go 1.19 keeps up to date too. */
    @Test
    void goWithGFromTls() throws Exception {
        Path bin = LatencyTargets.buildGo(goSrc, dir.resolve("go-tls"));
        measureGo(4, bin, LatencyTargets.offsets(bin, "main.work"), ProbeSpec.GSource.TLS);
    }

    private void measureGo(int id, Path bin, FunctionOffsets f, ProbeSpec.GSource g) throws Exception {
        assertTrue(f.rets().size() >= 2, "work() has two return paths: " + f);
        LatencyStats before = probes.stats();
        probes.attach(ProbeSpec.go(id, bin, -1, f.entry(), f.rets(), LatencyTargets.GOID_OFFSET_GO_1_19, g));
        GroundTruth truth;
        int pid;
        try {
            // Started after attach: a probe on a path covers processes that start later.
            ProcessBuilder pb = new ProcessBuilder(bin.toString(), "work", Integer.toString(GOROUTINES), Integer.toString(CALLS_EACH));
            pb.environment().put("GODEBUG", "adaptivestackstart=0"); // every goroutine starts small and grows in work()
            LatencyTargets.Ran ran = LatencyTargets.runWithPid(pb, 300);
            pid = ran.pid();
            truth = GroundTruth.parse(ran.output());
        } finally {
            assertTrue(probes.detach(id));
        }
        String out = truth.output();
        assertFalse(out.contains("fatal error") || out.contains("panic") || out.contains("unexpected return pc"), out);
        LatencyHistogram h = probes.readHistograms().get(id);
        LatencyStats s = delta(before, probes.stats());
        String report = bin.getFileName() + " g=" + g + ": loupe count " + h.count() + " mean " + h.meanNanos()
                + " buckets " + Arrays.toString(h.buckets()) + "; target " + truth + "; " + s;
        System.out.println(report);

        assertEquals((long) GOROUTINES * CALLS_EACH, truth.calls(), report);
        assertEquals(truth.calls(), h.count(), report);
        assertEquals(truth.calls(), Arrays.stream(h.buckets()).sum(), report);
        assertEquals(0, s.unmatchedExits() + s.inFlightFull() + s.gReadErrors() + s.unconfigured(), report);
        assertEquals(h.count(), s.exits(), report);
        assertEquals(s.entries(), s.exits(), "every call entered once and returned once: " + report);
        assertEquals(1.0, h.meanNanos() / truth.meanNs(), 0.02, report);
        // Every goroutine's first call grows its 8 KiB stack for work's 32 KiB frame: the entry ran twice.
        assertTrue(s.reentries() >= GOROUTINES, report);
        // Goroutines resume on other threads after sleeping: a thread-keyed design could not pair these calls.
        assertTrue(s.threadMigrations() > 0, report);
        // The paths land in their buckets: 2.1 ms in (2048, 4096] µs, 20 ms in (16384, 32768] µs, or later ones
        // when the loaded machine wakes a sleeper late; never earlier. The target's own buckets are the oracle.
        assertEquals(12, LatencyHistogram.bucketOf(2_100_000));
        assertEquals(15, LatencyHistogram.bucketOf(20_000_000));
        assertEquals(0, h.cumulative(11), "nothing shorter than 2.048 ms: " + report);
        assertTrue(h.cumulative(14) <= truth.calls() / 2, "no 20 ms call under 16.384 ms: " + report);
        assertTrue(h.bucket(12) > 0 && h.bucket(15) > 0, report);
        assertBucketsClose(truth, h, report);

        // Groups: every call once, under the target's pid and name, per goroutine: each worker goroutine
        // called work() exactly CALLS_EACH times (the target's own per-goroutine count, by construction).
        List<LatencyGroup> groups = probes.drainGroups().stream().filter(x -> x.probe() == id).toList();
        assertEquals(truth.calls(), groups.stream().mapToLong(LatencyGroup::count).sum(), report);
        assertEquals(h.sumNanos(), groups.stream().mapToLong(LatencyGroup::sumNanos).sum(), report);
        for (int k = 0; k < LatencyHistogram.BUCKETS; k++) {
            int bucket = k;
            assertEquals(h.bucket(k), groups.stream().filter(x -> x.bucket() == bucket).mapToLong(LatencyGroup::count).sum(),
                    "bucket " + k + ": " + report);
        }
        String comm = bin.getFileName().toString();
        for (LatencyGroup x : groups) {
            assertEquals(pid, x.pid(), report);
            assertEquals(comm.substring(0, Math.min(15, comm.length())), x.comm(), report);
            assertEquals(0, x.stack().length, "stacks off");
            assertFalse(x.stackLost());
        }
        java.util.Map<Long, Long> perGoid = new java.util.HashMap<>();
        groups.forEach(x -> perGoid.merge(x.goid(), x.count(), Long::sum));
        assertEquals(GOROUTINES, perGoid.size(), "one goid per worker goroutine: " + report);
        assertEquals(printedGoids(truth.output(), GOROUTINES), perGoid.keySet(),
                "the goids the goroutines printed for themselves (the runtime's numbering, not another field of g)");
        assertTrue(perGoid.values().stream().allMatch(n -> n == CALLS_EACH), "each goroutine's own count: " + perGoid);
        assertEquals(0, s.groupsFull() + s.stacksFull(), report);
        assertEquals(List.of(), probes.drainGroups().stream().filter(x -> x.probe() == id).toList(), "drained: read and deleted");
    }

    /**
     * Caller stacks at entry for Go: recurse() is called by the worker goroutine's closure and calls itself
     * three levels deep, so the innermost level's stack reads recurse x4, the closure, runtime.goexit. The
     * first caller comes from [SP] (the callee has not pushed RBP yet), the rest from the frame-pointer chain.
     */
    @Test
    void goCallerStacks() throws Exception {
        Path bin = LatencyTargets.buildGo(goSrc, dir.resolve("go-stk"));
        FunctionOffsets f = LatencyTargets.offsets(bin, "main.recurse");
        LatencyStats before = probes.stats();
        probes.attach(ProbeSpec.go(6, bin, -1, f.entry(), f.rets(), LatencyTargets.GOID_OFFSET_GO_1_19, ProbeSpec.GSource.R14)
                .withStacks(true));
        LatencyTargets.Ran ran;
        try {
            ProcessBuilder pb = new ProcessBuilder(bin.toString(), "rec", "100", "2");
            pb.environment().put("GODEBUG", "adaptivestackstart=0");
            ran = LatencyTargets.runWithPid(pb, 300);
        } finally {
            probes.detach(6);
        }
        GroundTruth truth = GroundTruth.parse(ran.output());
        List<LatencyGroup> groups = probes.drainGroups().stream().filter(x -> x.probe() == 6).toList();
        LatencyStats s = delta(before, probes.stats());
        var sym = LatencyTargets.symbols(bin);
        java.util.Map<Integer, Long> byDepth = new java.util.TreeMap<>();
        java.util.Set<Long> goids = new java.util.HashSet<>();
        for (LatencyGroup x : groups) {
            assertFalse(x.stackLost(), x.toString());
            assertEquals(ran.pid(), x.pid());
            goids.add(x.goid());
            List<String> names = LatencyTargets.names(sym, x.stack());
            int level = (int) names.stream().takeWhile(n -> n.equals("main.recurse")).count();
            assertTrue(level >= 1 && level <= 4, names.toString());
            List<String> rest = names.subList(level, names.size());
            assertTrue(rest.size() == 2 && rest.get(0).startsWith("main.main.func") && rest.get(1).startsWith("runtime.goexit"),
                    "recurse x" + level + ", then the goroutine's closure and runtime.goexit: " + names);
            byDepth.merge(level, x.count(), Long::sum);
        }
        String report = "go stacks: calls per nesting level " + byDepth + ", " + goids.size() + " goroutines; " + s;
        System.out.println(report);
        assertEquals(truth.calls(), groups.stream().mapToLong(LatencyGroup::count).sum(), report);
        assertEquals(java.util.Map.of(1, 200L, 2, 200L, 3, 200L, 4, 200L), byDepth, report);
        assertEquals(100, goids.size(), report);
        assertEquals(printedGoids(ran.output(), 100), goids, "the goids the goroutines printed for themselves: " + report);
        assertEquals(0, s.stacksFull() + s.groupsFull() + s.unmatchedExits(), report);
    }

    /** Caller stacks at entry for C built with frame pointers: rec() x4 then main, in order. */
    @Test
    void nativeCallerStacks() throws Exception {
        Path bin = LatencyTargets.buildCWithFramePointers(Path.of("src/test/c/latency_target.c"), dir.resolve("c-stk"));
        FunctionOffsets rec = LatencyTargets.offsets(bin, "rec");
        FunctionOffsets work = LatencyTargets.offsets(bin, "work");
        probes.attach(ProbeSpec.nativeFunction(14, bin, -1, rec.entry()).withStacks(true));
        probes.attach(ProbeSpec.nativeFunction(15, bin, -1, work.entry()).withStacks(true));
        LatencyTargets.Ran r1;
        LatencyTargets.Ran r2;
        try {
            r1 = LatencyTargets.runWithPid(new ProcessBuilder(bin.toString(), "rec", "5"), 300);
            r2 = LatencyTargets.runWithPid(new ProcessBuilder(bin.toString(), "flat", "4", "10"), 300);
        } finally {
            probes.detach(14);
            probes.detach(15);
        }
        var sym = LatencyTargets.symbols(bin);
        List<LatencyGroup> groups = probes.drainGroups();
        java.util.Map<Integer, Long> byDepth = new java.util.TreeMap<>();
        for (LatencyGroup x : groups.stream().filter(x -> x.probe() == 14).toList()) {
            assertEquals(r1.pid(), x.pid());
            assertEquals("c-stk", x.comm());
            assertEquals(0, x.goid());
            List<String> names = LatencyTargets.names(sym, x.stack());
            int level = (int) names.stream().takeWhile(n -> n.equals("rec")).count();
            assertTrue(level >= 1 && level <= 4 && names.size() > level && names.get(level).equals("main"), names.toString());
            byDepth.merge(level, x.count(), Long::sum);
        }
        assertEquals(java.util.Map.of(1, 5L, 2, 5L, 3, 5L, 4, 5L), byDepth);
        List<LatencyGroup> flat = groups.stream().filter(x -> x.probe() == 15).toList();
        assertEquals(40, flat.stream().mapToLong(LatencyGroup::count).sum());
        for (LatencyGroup x : flat) {
            assertEquals(r2.pid(), x.pid());
            List<String> names = LatencyTargets.names(sym, x.stack());
            assertEquals(List.of("work", "flat"), names.subList(0, 2), "the thread function called work(): " + names);
        }
    }

    /**
     * Go recursion and stack growth together: recurse() nests 4 levels (about 1.2, 5, 20 and 70 ms), each
     * level's 6 KiB frame growing the stack. Re-entries are collapsed at the same depth while nested calls
     * stay apart: the levels land in the target's own buckets only if every RET is paired with its entry.
     */
    @Test
    void goRecursionWithStackGrowth() throws Exception {
        Path bin = LatencyTargets.buildGo(goSrc, dir.resolve("go-rec"));
        FunctionOffsets f = LatencyTargets.offsets(bin, "main.recurse");
        LatencyStats before = probes.stats();
        probes.attach(ProbeSpec.go(5, bin, -1, f.entry(), f.rets(), LatencyTargets.GOID_OFFSET_GO_1_19, ProbeSpec.GSource.R14));
        GroundTruth truth;
        try {
            ProcessBuilder pb = new ProcessBuilder(bin.toString(), "rec", "200", "2");
            pb.environment().put("GODEBUG", "adaptivestackstart=0");
            truth = GroundTruth.parse(LatencyTargets.run(pb, 300));
        } finally {
            probes.detach(5);
        }
        LatencyHistogram h = probes.readHistograms().get(5);
        LatencyStats s = delta(before, probes.stats());
        String report = "go rec: loupe count " + h.count() + " mean " + h.meanNanos() + " buckets " + Arrays.toString(h.buckets())
                + "; target " + truth + "; " + s;
        System.out.println(report);
        assertEquals(1600, truth.calls(), report);
        assertEquals(truth.calls(), h.count(), report);
        assertEquals(0, s.unmatchedExits() + s.inFlightFull() + s.gReadErrors(), report);
        assertTrue(s.reentries() >= 200, "stack grown on the way down, per goroutine: " + report);
        assertEquals(1.0, h.meanNanos() / truth.meanNs(), 0.02, report);
        assertTrue(h.cumulative(16) <= 1200, "the outermost level never under 65.5 ms: " + report);
        assertBucketsClose(truth, h, report);
    }

    @Test
    void nativeFunctionByUretprobe() throws Exception {
        Path bin = LatencyTargets.buildC(Path.of("src/test/c/latency_target.c"), dir.resolve("c-target"));
        FunctionOffsets f = LatencyTargets.offsets(bin, "work");
        LatencyStats before = probes.stats();
        probes.attach(ProbeSpec.nativeFunction(10, bin, -1, f.entry()));
        GroundTruth truth;
        long[] fine;
        List<LatencyGroup> groups;
        try {
            truth = GroundTruth.parse(LatencyTargets.run(new ProcessBuilder(bin.toString(), "flat", "16", "100"), 300));
            fine = probes.readFineHistograms().get(10);
            groups = probes.drainGroups().stream().filter(x -> x.probe() == 10).toList();
        } finally {
            probes.detach(10);
        }
        assertArrayEquals(fine, probes.readFineHistograms().get(10), "a detached probe's final fine counts, until readHistograms");
        LatencyHistogram h = probes.readHistograms().get(10);
        assertFalse(probes.readFineHistograms().containsKey(10), "forgotten once readHistograms gave its final counts");
        LatencyStats s = delta(before, probes.stats());
        String report = "C flat: loupe count " + h.count() + " mean " + h.meanNanos() + " buckets " + Arrays.toString(h.buckets())
                + "; target " + truth + "; " + s;
        System.out.println(report);
        assertEquals(1600, truth.calls());
        assertEquals(truth.calls(), h.count(), report);
        assertEquals(0, s.unmatchedExits() + s.inFlightFull() + s.staleReplaced() + s.threadMigrations(), report);
        assertEquals(1.0, h.meanNanos() / truth.meanNs(), 0.02, report);
        assertEquals(0, h.cumulative(10), "nothing under 1.024 ms: " + report);
        assertTrue(h.cumulative(12) <= 800, "no 5 ms call under 4.096 ms: " + report);
        assertBucketsClose(truth, h, report);

        // The fine histogram counts every call, and the groups (none lost) split them by fine bucket exactly.
        String fineReport = "fine " + Arrays.toString(fine) + "; " + report;
        assertEquals(LatencyProbes.FINE_BUCKETS, fine.length);
        assertEquals(truth.calls(), Arrays.stream(fine).sum(), fineReport);
        assertEquals(0, s.groupsFull(), fineReport);
        long[] byFineBucket = new long[LatencyProbes.FINE_BUCKETS];
        for (LatencyGroup g : groups) {
            byFineBucket[g.fineBucket()] += g.count();
        }
        assertArrayEquals(fine, byFineBucket, fineReport);
        // Sleeps of 1.1 and 5 ms: nothing below 2^20 ns (bucket 1 + 8 · 10 = 81 starts there), and no 5 ms call
        // below 2^22 ns (bucket 97); a late wake-up only moves calls up.
        assertEquals(0, Arrays.stream(fine, 0, 81).sum(), fineReport);
        assertTrue(Arrays.stream(fine, 0, 97).sum() <= 800, fineReport);
    }

    /** Attaching an id again starts its fine histogram from zero, as its histogram. */
    @Test
    void fineHistogramStartsFromZeroAtEachAttach() throws Exception {
        Path bin = LatencyTargets.buildC(Path.of("src/test/c/latency_target.c"), dir.resolve("c-fine"));
        ProbeSpec work = ProbeSpec.nativeFunction(16, bin, -1, LatencyTargets.offsets(bin, "work").entry());
        for (int attach = 1; attach <= 2; attach++) {
            probes.attach(work);
            try {
                assertArrayEquals(new long[LatencyProbes.FINE_BUCKETS], probes.readFineHistograms().get(16), "attach " + attach);
                LatencyTargets.run(new ProcessBuilder(bin.toString(), "flat", "1", "4"), 300);
                assertEquals(4, Arrays.stream(probes.readFineHistograms().get(16)).sum(), "attach " + attach);
            } finally {
                probes.detach(16);
            }
        }
        probes.drainGroups();
    }

    /**
     * Recursion keyed by thread and SP: the four nested levels of each call (about 1.2, 5, 20 and 70 ms)
     * land in four distinct buckets only if every exit is paired with its own entry.
     */
    @Test
    void nativeRecursionPairsEachLevel() throws Exception {
        Path bin = LatencyTargets.buildC(Path.of("src/test/c/latency_target.c"), dir.resolve("c-rec"));
        FunctionOffsets f = LatencyTargets.offsets(bin, "rec");
        probes.attach(ProbeSpec.nativeFunction(11, bin, -1, f.entry()));
        GroundTruth truth;
        try {
            truth = GroundTruth.parse(LatencyTargets.run(new ProcessBuilder(bin.toString(), "rec", "20"), 300));
        } finally {
            probes.detach(11);
        }
        LatencyHistogram h = probes.readHistograms().get(11);
        String report = "C rec: loupe " + Arrays.toString(h.buckets()) + " mean " + h.meanNanos() + "; target " + truth;
        System.out.println(report);
        assertEquals(80, truth.calls());
        assertEquals(80, h.count(), report);
        assertBucketsClose(truth, h, 1, report); // a wrong pairing of nested calls would move 20 calls
        assertEquals(1.0, h.meanNanos() / truth.meanNs(), 0.02, report);
    }

    /**
     * A native call left by longjmp never fires its uretprobe; the next call at the same thread and SP finds
     * its entry, counts it stale and measures from its own start (1.1 ms, not the 2.2 ms since the stale one).
     */
    @Test
    void nativeLongjmpReplacesTheStaleEntry() throws Exception {
        Path bin = LatencyTargets.buildC(Path.of("src/test/c/latency_target.c"), dir.resolve("c-jmp"));
        FunctionOffsets f = LatencyTargets.offsets(bin, "jumpy");
        LatencyStats before = probes.stats();
        probes.attach(ProbeSpec.nativeFunction(13, bin, -1, f.entry()));
        GroundTruth truth;
        try {
            truth = GroundTruth.parse(LatencyTargets.run(new ProcessBuilder(bin.toString(), "jmp", "100"), 300));
        } finally {
            probes.detach(13);
        }
        LatencyHistogram h = probes.readHistograms().get(13);
        LatencyStats s = delta(before, probes.stats());
        String report = "C jmp: loupe count " + h.count() + " mean " + h.meanNanos() + "; target " + truth + "; " + s;
        System.out.println(report);
        assertEquals(50, truth.calls(), report);
        assertEquals(50, h.count(), report);
        assertEquals(100, s.entries(), report);
        assertEquals(50, s.staleReplaced(), report);
        assertEquals(0, s.unmatchedExits(), report);
        assertEquals(1.0, h.meanNanos() / truth.meanNs(), 0.02, report);
    }

    @Test
    void callsThatNeverReturnAreAgedOutAndCounted() throws Exception {
        Path bin = LatencyTargets.buildC(Path.of("src/test/c/latency_target.c"), dir.resolve("c-age"));
        FunctionOffsets f = LatencyTargets.offsets(bin, "rec");
        long entriesBefore = probes.stats().entries();
        probes.attach(ProbeSpec.nativeFunction(12, bin, -1, f.entry()));
        Process p = new ProcessBuilder(bin.toString(), "rec", "1000").start();
        try {
            // Inside rec(0) once the probe has seen its entry (rec(0) alone takes 50 ms, then the deeper levels).
            long end = System.nanoTime() + 10_000_000_000L;
            while (probes.stats().entries() == entriesBefore) {
                assertTrue(System.nanoTime() < end && p.isAlive(), "no entry of rec within 10 s");
                Thread.sleep(5);
            }
            p.destroyForcibly().waitFor(); // killed mid-call: its entries never see an exit
            long agedBefore = probes.stats().agedOut();
            int aged = probes.ageOut(Duration.ZERO);
            assertTrue(aged >= 1 && aged <= 4, "one call of up to 4 levels was in flight: " + aged);
            assertEquals(agedBefore + aged, probes.stats().agedOut());
            assertEquals(0, probes.ageOut(Duration.ZERO));
        } finally {
            probes.detach(12);
        }
    }

    @Test
    void badSpecsFailWithOneLineReasons() throws Exception {
        Path bin = LatencyTargets.buildC(Path.of("src/test/c/latency_target.c"), dir.resolve("c-bad"));
        long size = Files.size(bin);
        BpfException missing = assertThrows(BpfException.class,
                () -> probes.attach(ProbeSpec.nativeFunction(20, dir.resolve("nope"), -1, 0x1000)));
        assertTrue(missing.getMessage().contains("is not a regular file"), missing.getMessage());
        BpfException beyond = assertThrows(BpfException.class,
                () -> probes.attach(ProbeSpec.nativeFunction(20, bin, -1, size + 16)));
        assertTrue(beyond.getMessage().contains("beyond the end"), beyond.getMessage());
        IllegalArgumentException noRet = assertThrows(IllegalArgumentException.class,
                () -> ProbeSpec.go(20, bin, -1, 0x1000, List.of(), 152, ProbeSpec.GSource.R14));
        assertTrue(noRet.getMessage().contains("no RET"), noRet.getMessage());
        assertThrows(IllegalArgumentException.class, () -> probes.attach(ProbeSpec.nativeFunction(1 << 20, bin, -1, 0x1000)));
        BpfException noPid = assertThrows(BpfException.class,
                () -> probes.attach(ProbeSpec.nativeFunction(20, bin, 999_999_999, LatencyTargets.offsets(bin, "work").entry())));
        assertTrue(noPid.getMessage().contains("no process"), noPid.getMessage());
        for (BpfException e : List.of(missing, beyond, noPid)) {
            assertEquals(1, e.getMessage().lines().count(), e.getMessage());
        }
        probes.attach(ProbeSpec.nativeFunction(20, bin, -1, LatencyTargets.offsets(bin, "work").entry()));
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
                () -> probes.attach(ProbeSpec.nativeFunction(20, bin, -1, 0x1000)));
        assertTrue(twice.getMessage().contains("already attached"), twice.getMessage());
        assertTrue(probes.detach(20));
        assertFalse(probes.detach(20));
        assertFalse(probes.attachedProbes().contains(20));
    }

    /** The goids a Go target's calling goroutines printed for themselves ("goids 18 19 ..."): {@code n} distinct ones. */
    static java.util.Set<Long> printedGoids(String output, int n) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^goids ([0-9 ]+)$").matcher(output);
        assertTrue(m.find(), "the target printed no goids: " + output);
        List<Long> goids = Arrays.stream(m.group(1).split(" ")).map(Long::valueOf).toList();
        assertEquals(n, goids.size(), m.group());
        java.util.Set<Long> distinct = new java.util.HashSet<>(goids);
        assertEquals(n, distinct.size(), "one goid per goroutine: " + m.group());
        return distinct;
    }

    /** Java's bucket rule is the kernel's: boundaries at exactly 2^k µs. */
    @Test
    void bucketBoundaries() {
        assertEquals(0, LatencyHistogram.bucketOf(0));
        assertEquals(0, LatencyHistogram.bucketOf(1000));
        assertEquals(1, LatencyHistogram.bucketOf(1001));
        assertEquals(11, LatencyHistogram.bucketOf(2_048_000));
        assertEquals(12, LatencyHistogram.bucketOf(2_048_001));
        assertEquals(30, LatencyHistogram.bucketOf((1L << 30) * 1000));
        assertEquals(31, LatencyHistogram.bucketOf((1L << 30) * 1000 + 1));
        assertEquals(1e-6, LatencyHistogram.upperBoundSeconds(0));
        assertEquals(1073.741824, LatencyHistogram.upperBoundSeconds(30));
        assertEquals(Double.POSITIVE_INFINITY, LatencyHistogram.upperBoundSeconds(31));
    }

    /** The target measures around the call, Loupe from entry to return: a call near a boundary may differ. */
    private static void assertBucketsClose(GroundTruth truth, LatencyHistogram h, String report) {
        assertBucketsClose(truth, h, 2 + truth.calls() / 200, report);
    }

    private static void assertBucketsClose(GroundTruth truth, LatencyHistogram h, long tolerance, String report) {
        for (int k = 0; k < LatencyHistogram.BUCKETS; k++) {
            assertTrue(Math.abs(truth.buckets()[k] - h.bucket(k)) <= tolerance, "bucket " + k + ": " + report);
        }
    }

    static LatencyStats delta(LatencyStats a, LatencyStats b) {
        return new LatencyStats(b.entries() - a.entries(), b.exits() - a.exits(), b.threadMigrations() - a.threadMigrations(),
                b.reentries() - a.reentries(), b.staleReplaced() - a.staleReplaced(), b.unmatchedExits() - a.unmatchedExits(),
                b.inFlightFull() - a.inFlightFull(), b.gReadErrors() - a.gReadErrors(), b.unconfigured() - a.unconfigured(),
                b.groupsFull() - a.groupsFull(), b.stacksFull() - a.stacksFull(), b.agedOut() - a.agedOut());
    }
}
