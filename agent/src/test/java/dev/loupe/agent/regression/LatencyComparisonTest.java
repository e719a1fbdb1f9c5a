package dev.loupe.agent.regression;

import org.junit.jupiter.api.Test;

import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The verdict on synthetic histograms from fixed seeds (so the figures are deterministic): a lognormal call
 * latency, median 200 µs and log-space sigma 0.5 (p99 ≈ 640 µs), on both sides or shifted in the current window.
 */
class LatencyComparisonTest {
    private static final double MEDIAN = 200_000;
    private static final double SIGMA = 0.5;
    private final LatencyComparison comparison = LatencyComparison.defaults();

    private RegressionVerdict verdict(long seed, int calls, double shift) {
        FineHistogram baseline = Samples.histogram(Samples.lognormal(seed, calls, MEDIAN, SIGMA, 1));
        FineHistogram current = Samples.histogram(Samples.lognormal(seed + 1_000_000, calls, MEDIAN, SIGMA, shift));
        return comparison.compare(baseline, current);
    }

    private double flaggedRate(int seeds, int calls, double shift) {
        int flagged = 0;
        for (long seed = 1; seed <= seeds; seed++) {
            if (verdict(seed, calls, shift).regressed()) {
                flagged++;
            }
        }
        return (double) flagged / seeds;
    }

    @Test
    void findsAOnePointThreeTimesSlowdown() {
        double power = flaggedRate(200, 2_000, 1.3);
        double powerAtMinimum = flaggedRate(200, 200, 1.3);
        System.out.printf(Locale.ROOT, "verdict power, 1.3x shift, 2000 calls per side: %.1f %% of 200 seeds%n", 100 * power);
        System.out.printf(Locale.ROOT, "verdict power, 1.3x shift, 200 calls per side: %.1f %% of 200 seeds%n", 100 * powerAtMinimum);
        assertTrue(power >= 0.95, "power " + power);
        // Fewer calls find fewer, but still most: the rank test keeps its power, the p50/p90 ratios get noisier.
        assertTrue(powerAtMinimum >= 0.5 && powerAtMinimum <= power, "power at 200 calls " + powerAtMinimum);
    }

    @Test
    void steadyWindowsAreRarelyFlagged() {
        double falsePositives = flaggedRate(1_000, 2_000, 1.0);
        double falsePositivesAtMinimum = flaggedRate(1_000, 200, 1.0);
        System.out.printf(Locale.ROOT, "verdict false positives, same distribution, 2000 calls per side: %.1f %% of 1000 seeds%n",
                100 * falsePositives);
        System.out.printf(Locale.ROOT, "verdict false positives, same distribution, 200 calls per side: %.1f %% of 1000 seeds%n",
                100 * falsePositivesAtMinimum);
        assertTrue(falsePositives <= 0.01, "false positives " + falsePositives);
        assertTrue(falsePositivesAtMinimum <= 0.01, "false positives at 200 calls " + falsePositivesAtMinimum);
    }

    @Test
    void rankTestPValuesAreCalibrated() {
        // On steady windows a p-value is uniform: p < a in a fraction a of them. Too many would mean a wrong
        // variance (e.g. ties ignored), too few a test that never fires.
        int below5 = 0;
        int below01 = 0;
        for (long seed = 1; seed <= 1_000; seed++) {
            FineHistogram baseline = Samples.histogram(Samples.lognormal(seed, 2_000, MEDIAN, SIGMA, 1));
            FineHistogram current = Samples.histogram(Samples.lognormal(seed + 1_000_000, 2_000, MEDIAN, SIGMA, 1));
            double p = RankTest.pValueGreater(baseline, current);
            below5 += p < 0.05 ? 1 : 0;
            below01 += p < 0.001 ? 1 : 0;
        }
        System.out.printf(Locale.ROOT, "rank test on steady windows, 2000 calls per side: p < 0.05 in %.1f %%, p < 0.001 in %.1f %% of 1000 seeds%n",
                below5 / 10.0, below01 / 10.0);
        assertTrue(below5 >= 30 && below5 <= 70, below5 + " of 1000 below 0.05");
        assertTrue(below01 <= 5, below01 + " of 1000 below 0.001");
    }

    @Test
    void aSmallSlowdownIsSignificantButNotARegression() {
        RegressionVerdict v = verdict(42, 20_000, 1.1);
        assertTrue(v.pValue() < LatencyComparison.DEFAULT_ALPHA, "p = " + v.pValue());
        assertEquals(RegressionVerdict.Outcome.NOT_REGRESSED, v.outcome(), v.reason());
        assertEquals(1.1, v.ratioP50(), 0.03);
        assertTrue(v.reason().startsWith("slower but by less than ×1.20 at p50 and p90: "), v.reason());
    }

    @Test
    void aRegressionCarriesItsFigures() {
        RegressionVerdict v = verdict(43, 2_000, 1.5);
        assertEquals(RegressionVerdict.Outcome.REGRESSED, v.outcome(), v.reason());
        assertEquals(2_000, v.baselineCalls());
        assertEquals(2_000, v.currentCalls());
        assertEquals(1.5, v.ratioP50(), 0.1);
        assertEquals(1.5, v.ratioP90(), 0.1);
        assertTrue(v.pValue() < 1e-12, "p = " + v.pValue());
        assertTrue(v.reason().startsWith("slower: p50 ×1."), v.reason());
    }

    @Test
    void aFasterWindowIsNotARegression() {
        RegressionVerdict v = verdict(44, 2_000, 0.7);
        assertEquals(RegressionVerdict.Outcome.NOT_REGRESSED, v.outcome(), v.reason());
        assertTrue(v.pValue() > 0.999, "p = " + v.pValue());
        assertTrue(v.reason().startsWith("not significantly slower (p ≥ 0.001): "), v.reason());
    }

    @Test
    void tooFewCallsOnEitherSideGivesNoVerdict() {
        FineHistogram enough = Samples.histogram(Samples.lognormal(45, 2_000, MEDIAN, SIGMA, 1));
        FineHistogram few = Samples.histogram(Samples.lognormal(46, 199, MEDIAN, SIGMA, 3));
        RegressionVerdict v = comparison.compare(enough, few);
        assertEquals(RegressionVerdict.Outcome.TOO_FEW_CALLS, v.outcome());
        assertEquals("too few calls: 2000 in the baseline, 199 in the current window, 200 needed on each side", v.reason());
        assertTrue(Double.isNaN(v.pValue()));
        assertTrue(v.ratioP50() > 2, "ratios are still reported: " + v.ratioP50());
        assertEquals(RegressionVerdict.Outcome.TOO_FEW_CALLS, comparison.compare(few, enough).outcome());
        RegressionVerdict empty = comparison.compare(new FineHistogram(), enough);
        assertEquals(RegressionVerdict.Outcome.TOO_FEW_CALLS, empty.outcome());
        assertEquals(0, empty.baselineCalls());
        assertTrue(Double.isNaN(empty.ratioP50()));
        // At exactly the minimum a verdict is given.
        FineHistogram exactly = Samples.histogram(Samples.lognormal(47, 200, MEDIAN, SIGMA, 3));
        assertEquals(RegressionVerdict.Outcome.REGRESSED, comparison.compare(enough, exactly).outcome());
    }

    @Test
    void rejectsMeaninglessSettings() {
        assertThrows(IllegalArgumentException.class, () -> new LatencyComparison(1, 1.2, 0.001));
        assertThrows(IllegalArgumentException.class, () -> new LatencyComparison(200, 0.9, 0.001));
        assertThrows(IllegalArgumentException.class, () -> new LatencyComparison(200, 1.2, 0));
        assertThrows(IllegalArgumentException.class, () -> new LatencyComparison(200, 1.2, Double.NaN));
    }
}
