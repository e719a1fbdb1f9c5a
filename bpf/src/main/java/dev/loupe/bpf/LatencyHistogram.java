package dev.loupe.bpf;

/**
 * One probe's calls since it was attached, summed over CPUs. {@code buckets[k]} counts calls that took
 * more than 2^(k-1) and at most 2^k microseconds (k = 0..30; bucket 0 holds everything up to 1 µs), and
 * {@code buckets[31]} calls longer than 2^30 µs (+Inf). Counts only grow while the probe stays attached.
 */
public record LatencyHistogram(int probeId, long[] buckets, long sumNanos, long count) {
    public static final int FINITE_BUCKETS = LatencyAbi.FINITE_BUCKETS;
    public static final int BUCKETS = LatencyAbi.BUCKETS;

    public LatencyHistogram {
        if (buckets.length != BUCKETS) {
            throw new IllegalArgumentException(buckets.length + " buckets, expected " + BUCKETS);
        }
        buckets = buckets.clone();
    }

    @Override
    public long[] buckets() {
        return buckets.clone();
    }

    /** Calls in bucket {@code k} alone. */
    public long bucket(int k) {
        return buckets[k];
    }

    /** Calls of at most {@link #upperBoundSeconds(int) upperBoundSeconds(k)} (Prometheus' cumulative {@code le}). */
    public long cumulative(int k) {
        long n = 0;
        for (int i = 0; i <= k; i++) {
            n += buckets[i];
        }
        return n;
    }

    /** The bucket's upper bound: 2^k µs in seconds, +Inf for the last. */
    public static double upperBoundSeconds(int k) {
        return k >= FINITE_BUCKETS ? Double.POSITIVE_INFINITY : (1L << k) / 1e6;
    }

    /** The bucket the kernel puts a call of {@code nanos} in (the same rule as latency.bpf.c). */
    public static int bucketOf(long nanos) {
        long us = (nanos + 999) / 1000;
        if (us <= 1) {
            return 0;
        }
        int k = 64 - Long.numberOfLeadingZeros(us - 1);
        return Math.min(k, FINITE_BUCKETS);
    }

    public double meanNanos() {
        return count == 0 ? 0 : (double) sumNanos / count;
    }
}
