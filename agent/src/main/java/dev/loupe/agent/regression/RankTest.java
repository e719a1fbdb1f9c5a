package dev.loupe.agent.regression;

/**
 * One-sided Mann–Whitney U test on two binned samples: is the current sample stochastically greater than the
 * baseline? Calls in the same bucket are ties (their order is unknown), ranked by midrank, with the
 * tie-corrected variance; the p-value is the normal approximation's, which is accurate at the ≥ 200 calls per
 * side the verdict requires.
 */
final class RankTest {
    private RankTest() {
    }

    /** P(U ≥ observed) under "both from one distribution", where U counts current-above-baseline pairs. */
    static double pValueGreater(FineHistogram baseline, FineHistogram current) {
        double n1 = baseline.totalCount();
        double n2 = current.totalCount();
        double n = n1 + n2;
        // U = Σ over current calls of (baseline calls below) + ½ (baseline calls tied), bucket by bucket.
        double u = 0;
        double baselineBelow = 0;
        double tieTerm = 0; // Σ (t³ - t) over buckets, t = calls of both sides in the bucket
        for (int i = 0; i < FineHistogram.BUCKETS; i++) {
            double b = baseline.count(i);
            double c = current.count(i);
            u += c * (baselineBelow + 0.5 * b);
            baselineBelow += b;
            double t = b + c;
            tieTerm += t * t * t - t;
        }
        double mean = n1 * n2 / 2;
        double variance = n1 * n2 / 12 * ((n + 1) - tieTerm / (n * (n - 1)));
        if (!(variance > 0)) {
            return 1.0; // every call in one bucket: nothing tells the sides apart
        }
        // Continuity correction of ½ towards the mean keeps the approximation conservative.
        double z = (u - mean - 0.5) / Math.sqrt(variance);
        return upperTail(z);
    }

    /** P(Z ≥ z) for a standard normal Z. */
    static double upperTail(double z) {
        return 0.5 * erfc(z / Math.sqrt(2));
    }

    /**
     * Complementary error function, by the Chebyshev-fitted rational approximation in Numerical Recipes
     * (relative error below 1.2e-7 everywhere), ample for p-values compared with 0.001.
     */
    static double erfc(double x) {
        double z = Math.abs(x);
        double t = 1 / (1 + 0.5 * z);
        double poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
                + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
        double r = t * Math.exp(-z * z + poly);
        return x >= 0 ? r : 2 - r;
    }
}
