package dev.loupe.agent.regression;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RankTestTest {
    @Test
    void normalTailMatchesKnownValues() {
        assertEquals(0.5, RankTest.upperTail(0), 1e-7);
        assertEquals(0.025, RankTest.upperTail(1.959963984540054), 1e-8);
        assertEquals(0.001, RankTest.upperTail(3.090232306167813), 1e-9);
        assertEquals(0.975, RankTest.upperTail(-1.959963984540054), 1e-8);
    }

    @Test
    void tiedBucketsUseMidranksAndTheTieCorrectedVariance() {
        // baseline: 2 in bucket 1, 1 in bucket 2; current: 1 in bucket 2, 2 in bucket 3.
        // U = 1·(2 + ½·1) + 2·3 = 8.5, mean 4.5, variance 9/12·(7 − 18/30) = 4.8, z = (8.5 − 4.5 − ½)/√4.8.
        FineHistogram baseline = new FineHistogram();
        baseline.add(FineHistogram.lowerBound(1), 2);
        baseline.add(FineHistogram.lowerBound(2), 1);
        FineHistogram current = new FineHistogram();
        current.add(FineHistogram.lowerBound(2), 1);
        current.add(FineHistogram.lowerBound(3), 2);
        assertEquals(0.05507446209297349, RankTest.pValueGreater(baseline, current), 1e-8);
        // The other way round the current is faster: U = 0.5, z = (0.5 − 4.5 − ½)/√4.8.
        assertEquals(0.9800101985268715, RankTest.pValueGreater(current, baseline), 1e-8);
    }

    @Test
    void identicalOrSingleBucketSamplesAreNotSignificant() {
        FineHistogram h = Samples.histogram(Samples.lognormal(11, 1_000, 100_000, 1, 1));
        double p = RankTest.pValueGreater(h, h.copy());
        assertTrue(p > 0.5 && p < 0.52, "p = " + p);
        FineHistogram one = new FineHistogram();
        one.add(5_000, 500);
        assertEquals(1.0, RankTest.pValueGreater(one, one.copy()), 0);
    }
}
