package dev.loupe.agent.regression;

import java.util.Arrays;
import java.util.SplittableRandom;

/** Synthetic latencies (nanoseconds) from fixed seeds, and their true quantiles. */
final class Samples {
    private Samples() {
    }

    /** Lognormal with the given median and log-space standard deviation, times {@code scale}. */
    static long[] lognormal(long seed, int n, double medianNanos, double sigma, double scale) {
        SplittableRandom random = new SplittableRandom(seed);
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            out[i] = Math.round(scale * medianNanos * Math.exp(sigma * gaussian(random)));
        }
        return out;
    }

    static long[] uniform(long seed, int n, long fromNanos, long toNanos) {
        SplittableRandom random = new SplittableRandom(seed);
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            out[i] = random.nextLong(fromNanos, toNanos);
        }
        return out;
    }

    /** 70 % of calls near 50 µs (a cache hit), 30 % near 5 ms (a miss), each lognormal with sigma 0.2. */
    static long[] bimodal(long seed, int n) {
        SplittableRandom random = new SplittableRandom(seed);
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            double median = random.nextDouble() < 0.7 ? 50_000 : 5_000_000;
            out[i] = Math.round(median * Math.exp(0.2 * gaussian(random)));
        }
        return out;
    }

    private static double gaussian(SplittableRandom random) {
        // Box–Muller: SplittableRandom has no nextGaussian of its own that is stable across JDKs.
        double u = 1 - random.nextDouble();
        double v = random.nextDouble();
        return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    }

    static FineHistogram histogram(long[] values) {
        FineHistogram h = new FineHistogram();
        for (long v : values) {
            h.add(v);
        }
        return h;
    }

    /** The q-quantile of the raw values: the smallest value with at least q·n values at or below it. */
    static long trueQuantile(long[] values, double q) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        int index = Math.max(0, (int) Math.ceil(q * sorted.length) - 1);
        return sorted[index];
    }
}
