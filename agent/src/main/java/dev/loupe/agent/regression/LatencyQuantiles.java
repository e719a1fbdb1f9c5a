package dev.loupe.agent.regression;

/**
 * The p50, p90 and p99 of one side of a comparison in nanoseconds (NaN when that side has no calls), read from
 * its fine histogram, so people see the latencies before and after and not only their ratio.
 */
public record LatencyQuantiles(double p50, double p90, double p99) {
    public static LatencyQuantiles of(FineHistogram h) {
        return new LatencyQuantiles(h.quantile(0.5), h.quantile(0.9), h.quantile(0.99));
    }

    /** p50, p90, p99: the order of the ratios in {@link RegressionVerdict}. */
    public double[] values() {
        return new double[] {p50, p90, p99};
    }
}
