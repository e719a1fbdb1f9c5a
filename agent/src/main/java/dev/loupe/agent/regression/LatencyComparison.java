package dev.loupe.agent.regression;

import java.util.Locale;

/**
 * Compares a current window's latencies with a baseline's. Regressed means all of: at least {@code minCalls}
 * calls on each side; the current calls are significantly slower by a one-sided Mann–Whitney rank test
 * (p &lt; {@code alpha}); and the p50 or the p90 ratio (current / baseline) is at least {@code threshold}.
 * <p>
 * The threshold applies to p50 and p90, not p99: at the 200-call minimum the p99 rests on two calls, and a
 * verdict on it would flip with noise; a slowdown of the typical call (p50) or of the slow tenth (p90) is what
 * the rank test measures too. The p99 ratio is reported for people to read.
 * <p>
 * alpha defaults to 0.001 because the verdict runs for every probed function in every window, all day: at
 * 0.01, 100 steady functions checked once a minute would raise a significant-but-false result every second
 * minute; 0.001 with the effect threshold keeps false alarms rare, and a real 1.3× slowdown over a few hundred
 * calls still gives p-values far below it.
 */
public final class LatencyComparison {
    public static final long DEFAULT_MIN_CALLS = 200;
    public static final double DEFAULT_THRESHOLD = 1.2;
    public static final double DEFAULT_ALPHA = 0.001;

    private final long minCalls;
    private final double threshold;
    private final double alpha;

    public LatencyComparison(long minCalls, double threshold, double alpha) {
        if (minCalls < 2) {
            throw new IllegalArgumentException("minCalls " + minCalls + " < 2");
        }
        if (!(threshold >= 1)) {
            throw new IllegalArgumentException("threshold " + threshold + " < 1");
        }
        if (!(alpha > 0 && alpha < 1)) {
            throw new IllegalArgumentException("alpha " + alpha + " is not in (0, 1)");
        }
        this.minCalls = minCalls;
        this.threshold = threshold;
        this.alpha = alpha;
    }

    public static LatencyComparison defaults() {
        return new LatencyComparison(DEFAULT_MIN_CALLS, DEFAULT_THRESHOLD, DEFAULT_ALPHA);
    }

    public RegressionVerdict compare(FineHistogram baseline, FineHistogram current) {
        long nb = baseline.totalCount();
        long nc = current.totalCount();
        double r50 = ratio(baseline, current, 0.5);
        double r90 = ratio(baseline, current, 0.9);
        double r99 = ratio(baseline, current, 0.99);
        if (nb < minCalls || nc < minCalls) {
            return new RegressionVerdict(RegressionVerdict.Outcome.TOO_FEW_CALLS, r50, r90, r99, Double.NaN, nb, nc,
                    String.format(Locale.ROOT, "too few calls: %d in the baseline, %d in the current window, %d needed on each side",
                            nb, nc, minCalls));
        }
        double p = RankTest.pValueGreater(baseline, current);
        boolean significant = p < alpha;
        boolean largeEnough = r50 >= threshold || r90 >= threshold;
        String figures = String.format(Locale.ROOT, "p50 ×%.2f, p90 ×%.2f, p99 ×%.2f, rank test p=%.2g over %d/%d calls",
                r50, r90, r99, p, nb, nc);
        if (significant && largeEnough) {
            return new RegressionVerdict(RegressionVerdict.Outcome.REGRESSED, r50, r90, r99, p, nb, nc,
                    "slower: " + figures);
        }
        String why = !significant
                ? "not significantly slower (p ≥ " + alpha + ")"
                : String.format(Locale.ROOT, "slower but by less than ×%.2f at p50 and p90", threshold);
        return new RegressionVerdict(RegressionVerdict.Outcome.NOT_REGRESSED, r50, r90, r99, p, nb, nc,
                why + ": " + figures);
    }

    private static double ratio(FineHistogram baseline, FineHistogram current, double q) {
        return current.quantile(q) / baseline.quantile(q);
    }
}
