package dev.loupe.agent.latencydiff;

import dev.loupe.agent.regression.FineHistogram;
import dev.loupe.pprof.Label;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.ProfileBuilder;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * Latency profiles shaped as Loupe writes them (sample types calls/count and latency/nanoseconds; labels function,
 * binary, pid, comm, le_us and le_ns), built from known latencies so that tests can work out the true quantiles
 * themselves. Each function's calls are spread over two processes, so a reader must sum over pids.
 */
public final class SyntheticLatencyProfiles {
    /** The latencies of one function's calls, in nanoseconds. */
    public record Calls(String binary, String function, long[] nanos) {
        /** The exact q-quantile of these latencies (nearest rank), for checking what a histogram gives. */
        public double trueQuantile(double q) {
            long[] sorted = nanos.clone();
            Arrays.sort(sorted);
            int rank = (int) Math.ceil(q * sorted.length);
            return sorted[Math.max(0, rank - 1)];
        }
    }

    private static final List<ProfileBuilder.SampleType> LATENCY_TYPES = List.of(
            new ProfileBuilder.SampleType("calls", "count"), new ProfileBuilder.SampleType("latency", "nanoseconds"));

    private SyntheticLatencyProfiles() {}

    /** {@code n} latencies around {@code median} ns, log-normal with this sigma (0.25: p99 ≈ 1.8 × p50). */
    public static long[] logNormal(long seed, int n, double median, double sigma) {
        Random r = new Random(seed);
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            out[i] = Math.round(median * Math.exp(sigma * r.nextGaussian()));
        }
        return out;
    }

    /** Each latency times {@code factor}. */
    public static long[] scaled(long[] nanos, double factor) {
        return Arrays.stream(nanos).map(v -> Math.round(v * factor)).toArray();
    }

    /** A gzipped latency profile with le_ns labels, as a current Loupe writes it. */
    public static byte[] latencyProfile(List<Calls> functions) {
        return build(functions, true);
    }

    /** A gzipped latency profile with only le_us labels, as a Loupe without le_ns writes it. */
    public static byte[] withoutLeNs(List<Calls> functions) {
        return build(functions, false);
    }

    /** A gzipped CPU profile (samples/count, cpu/nanoseconds) with one sample. */
    public static byte[] cpuProfile() {
        ProfileBuilder b = new ProfileBuilder(52_631_578L, 1_700_000_000_000_000_000L);
        long mapping = b.mapping(0x400000, 0x500000, 0, "/srv/app", null, true);
        b.addSample(new long[] {b.location(mapping, 0x401000, "main.work", null)}, 7,
                List.of(Label.num("pid", 42), Label.str("comm", "app")));
        return PprofFiles.gzip(b.build(1_700_000_010_000_000_000L));
    }

    private static byte[] build(List<Calls> functions, boolean leNs) {
        ProfileBuilder b = new ProfileBuilder(1_700_000_000_000_000_000L, LATENCY_TYPES, 0, 1);
        long address = 0x401000;
        for (Calls f : functions) {
            long mapping = b.mapping(0, 0x10000000, 0, f.binary(), null, true);
            long location = b.location(mapping, address += 0x100, f.function(), null);
            for (int pid : new int[] {101, 202}) {
                // calls and summed nanoseconds per fine bucket, of every other call (the process's half)
                Map<Integer, long[]> byBucket = new TreeMap<>();
                for (int i = pid == 101 ? 0 : 1; i < f.nanos().length; i += 2) {
                    long[] sums = byBucket.computeIfAbsent(FineHistogram.bucketOf(f.nanos()[i]), k -> new long[2]);
                    sums[0]++;
                    sums[1] += f.nanos()[i];
                }
                for (var e : byBucket.entrySet()) {
                    List<Label> labels = new ArrayList<>(List.of(Label.str("function", f.function()),
                            Label.str("binary", f.binary()), Label.num("pid", pid), Label.str("comm", "app"),
                            Label.num("le_us", leUs(e.getValue()[1] / e.getValue()[0]), "microseconds")));
                    if (leNs) {
                        labels.add(Label.num("le_ns", FineHistogram.upperBound(e.getKey()), "nanoseconds"));
                    }
                    b.addSample(new long[] {location}, e.getValue(), labels);
                }
            }
        }
        return PprofFiles.gzip(b.build(1_700_000_010_000_000_000L));
    }

    /** The 2^k µs bucket bound an older Loupe gives a call of about this many ns. */
    private static long leUs(long nanos) {
        return Long.highestOneBit(Math.max(1, nanos / 1000)) << 1;
    }
}
