package dev.loupe.agent.latency;

import dev.loupe.agent.regression.FineHistogram;
import dev.loupe.bpf.BpfAvailability;
import dev.loupe.bpf.LatencyGroup;
import dev.loupe.bpf.LatencyHistogram;
import dev.loupe.bpf.LatencyProbes;
import dev.loupe.config.ProbeConfig;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Fine histograms end to end, in the real kernel (root; fails, never skips, without BPF), against a target
 * whose spin() measures its own calls ({@link TestBinaries#SPIN_SOURCE}: known durations near 50 µs, 300 µs
 * and 2 ms): the kernel's per-probe fine histogram gives the target's own p50, p90 and p99 within ±10 %, its
 * index is {@link FineHistogram#bucketOf}, and {@code le_ns} in the latency profile names the fine buckets.
 */
class FineLatencyTest {
    static final int CALLS = 2000;
    static final double[] QUANTILES = {0.5, 0.9, 0.99};

    @Test
    void kernelFineHistogramGivesTheTargetsOwnQuantilesWithinTenPercent(@TempDir Path dir) throws Exception {
        BpfAvailability.unavailabilityReason().ifPresent(r -> fail("BPF must be available here (tests run as root): " + r));
        assertEquals(FineHistogram.BUCKETS, LatencyProbes.FINE_BUCKETS);
        Path spin = TestBinaries.buildSpin(dir);
        ProbedFunction f = spinFunction(spin);
        long[] fine;
        List<LatencyGroup> groups;
        LatencyHistogram coarse;
        long[] truth;
        try (LatencyProbes probes = LatencyProbes.open()) {
            probes.attach(f.spec());
            truth = durations(TestBinaries.run(dir, List.of(spin.toString(), Integer.toString(CALLS)), List.of()));
            fine = probes.readFineHistograms().get(f.id());
            groups = probes.drainGroups().stream().filter(g -> g.probe() == f.id()).toList();
            coarse = probes.readHistograms().get(f.id());
            assertEquals(0, probes.stats().groupsFull());
        }
        FineHistogram kernel = FineHistogram.ofCounts(fine);
        String report = "kernel fine " + nonEmpty(fine) + "; target's own " + nonEmpty(ownBuckets(truth));
        assertEquals(CALLS, truth.length, report);
        assertEquals(CALLS, kernel.totalCount(), "every call counted once: " + report);
        assertEquals(coarse.count(), kernel.totalCount(), report);
        StringBuilder errors = new StringBuilder();
        for (double q : QUANTILES) {
            double own = ownQuantile(truth, q);
            double measured = kernel.quantile(q);
            errors.append(String.format(Locale.ROOT, " p%.0f %.0f vs %.0f ns (%+.2f %%)", 100 * q, measured, own, 100 * (measured / own - 1)));
            assertEquals(1.0, measured / own, 0.10, "p" + 100 * q + ": " + errors + "; " + report);
        }
        System.out.println("kernel fine histogram against spin()'s own quantiles:" + errors);

        // The kernel's index is FineHistogram's: the mean of each group's calls lies in its fine bucket (and in
        // its coarse one), which holds for every group only if each call went into the bucket that holds it.
        long[] byFineBucket = new long[FineHistogram.BUCKETS];
        for (LatencyGroup g : groups) {
            long mean = g.sumNanos() / g.count();
            assertEquals(g.fineBucket(), FineHistogram.bucketOf(mean), "group " + g + " of mean " + mean + " ns");
            assertEquals(g.bucket(), LatencyHistogram.bucketOf(mean), "group " + g + " of mean " + mean + " ns");
            byFineBucket[g.fineBucket()] += g.count();
        }
        assertArrayEquals(fine, byFineBucket, "the groups split the fine histogram by bucket: " + report);
        // Every cluster is there: 45-55 µs, 270-330 µs and 1.8-2.2 ms, at least, in the kernel's buckets.
        assertTrue(kernel.count(FineHistogram.bucketOf(50_000)) > 0 && kernel.count(FineHistogram.bucketOf(300_000)) > 0
                && kernel.count(FineHistogram.bucketOf(2_000_000)) > 0, report);
        assertEquals(0, kernel.count(0) + kernel.count(FineHistogram.BUCKETS - 1), report);
    }

    /**
     * le_ns, through ProbeManager's drain and profile: each sample's is the upper bound of the fine bucket its
     * calls fell in (the bucket holding their mean); the samples, read back into a FineHistogram by le_ns as a
     * latency-diff would, hold every call and give the target's own quantiles within ±10 %.
     */
    @Test
    void leNsInTheLatencyProfileIsTheFineBucketsUpperBound(@TempDir Path dir) throws Exception {
        Path spin = TestBinaries.buildSpin(dir);
        ProbeManager m = ProbeManager.start(List.of(ProbeConfig.ofBinary(spin, List.of("spin"), false)),
                ProbeManager.Options.defaults(10)).orElseThrow();
        long[] truth;
        Profile prof;
        try {
            truth = durations(TestBinaries.run(dir, List.of(spin.toString(), Integer.toString(CALLS)), List.of()));
            prof = m.interval(1_000_000_000L, 1_000_000_000L).orElseThrow();
        } finally {
            m.close();
        }
        FineHistogram fromProfile = new FineHistogram();
        TreeMap<Long, Long> callsByLeNs = new TreeMap<>();
        for (Sample s : prof.getSampleList()) {
            long leNs = ProbeManagerTest.num(prof, s, "le_ns");
            long calls = s.getValue(0);
            long mean = s.getValue(1) / calls;
            int bucket = FineHistogram.bucketOf(mean);
            assertEquals(FineHistogram.upperBound(bucket), leNs, "calls of mean " + mean + " ns");
            assertEquals(1L << LatencyHistogram.bucketOf(mean), ProbeManagerTest.num(prof, s, "le_us"), "le_us unchanged beside it");
            assertEquals(bucket, FineHistogram.bucketOf(leNs - 1), "le_ns is exclusive: one less is in the bucket");
            callsByLeNs.merge(leNs, calls, Long::sum);
            fromProfile.addToBucket(FineHistogram.bucketOf(leNs - 1), calls);
        }
        String report = "calls by le_ns " + callsByLeNs + "; target's own " + nonEmpty(ownBuckets(truth));
        assertEquals(CALLS, ProbeManagerTest.totals(prof)[0], report);
        assertEquals(CALLS, fromProfile.totalCount(), report);
        assertTrue(callsByLeNs.containsKey(FineHistogram.upperBound(FineHistogram.bucketOf(50_000)))
                && callsByLeNs.containsKey(FineHistogram.upperBound(FineHistogram.bucketOf(300_000)))
                && callsByLeNs.containsKey(FineHistogram.upperBound(FineHistogram.bucketOf(2_000_000))), report);
        for (double q : QUANTILES) {
            assertEquals(1.0, fromProfile.quantile(q) / ownQuantile(truth, q), 0.10, "p" + 100 * q + ": " + report);
        }
    }

    private static ProbedFunction spinFunction(Path spin) {
        ProbeResolver.Plan plan = new ProbeResolver(10, Path.of("/proc"), 0)
                .plan(List.of(ProbeConfig.ofBinary(spin, List.of("spin"), false)));
        assertEquals(List.of(), plan.problems());
        assertEquals(1, plan.functions().size(), plan.toString());
        return plan.functions().get(0);
    }

    /** The durations the target measured itself, in call order ("calls N", then "ns D" per call). */
    static long[] durations(String out) {
        List<String> lines = out.lines().toList();
        assertEquals("calls " + CALLS, lines.get(0));
        long[] d = lines.subList(1, lines.size()).stream().mapToLong(l -> Long.parseLong(l.substring("ns ".length()))).toArray();
        assertEquals(CALLS, d.length);
        return d;
    }

    /** The ⌈q·n⌉-th smallest duration (FineHistogram.quantile estimates the same call). */
    static long ownQuantile(long[] durations, double q) {
        long[] sorted = durations.clone();
        Arrays.sort(sorted);
        return sorted[Math.max(0, (int) Math.ceil(q * sorted.length) - 1)];
    }

    static long[] ownBuckets(long[] durations) {
        long[] b = new long[FineHistogram.BUCKETS];
        for (long d : durations) {
            b[FineHistogram.bucketOf(d)]++;
        }
        return b;
    }

    /** "bucket: count" of the non-empty buckets, for failure messages. */
    static String nonEmpty(long[] buckets) {
        TreeMap<Integer, Long> m = new TreeMap<>();
        for (int i = 0; i < buckets.length; i++) {
            if (buckets[i] != 0) {
                m.put(i, buckets[i]);
            }
        }
        return m.toString();
    }
}
