package dev.loupe.agent.regression;

import org.junit.jupiter.api.Test;

import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FineHistogramTest {
    private static final double[] QUANTILES = {0.5, 0.9, 0.99};

    @Test
    void bucketBoundariesAreTwoToTheKPlusJEighths() {
        assertEquals(258, FineHistogram.BUCKETS);
        assertEquals(0, FineHistogram.bucketOf(-5));
        assertEquals(0, FineHistogram.bucketOf(1023));
        assertEquals(1, FineHistogram.bucketOf(1024));
        assertEquals(1, FineHistogram.bucketOf(1116)); // 2^(10 + 1/8) = 1116.68
        assertEquals(2, FineHistogram.bucketOf(1117));
        assertEquals(1117, FineHistogram.lowerBound(2));
        assertEquals(8, FineHistogram.bucketOf(2047));
        assertEquals(9, FineHistogram.bucketOf(2048));
        assertEquals(256, FineHistogram.bucketOf((1L << 42) - 1));
        assertEquals(257, FineHistogram.bucketOf(1L << 42));
        assertEquals(257, FineHistogram.bucketOf(Long.MAX_VALUE));
        // Every value lands in the bucket whose bounds hold it, at every boundary.
        for (int i = 1; i < FineHistogram.BUCKETS - 1; i++) {
            long lo = FineHistogram.lowerBound(i);
            long hi = FineHistogram.upperBound(i);
            assertEquals(i, FineHistogram.bucketOf(lo), "lower bound of " + i);
            assertEquals(i, FineHistogram.bucketOf(hi - 1), "upper bound of " + i);
            double width = (double) hi / lo;
            assertTrue(width > 1.08 && width < 1.10, "bucket " + i + " is ×" + width + " wide");
        }
    }

    @Test
    void countsAreExact() {
        FineHistogram h = new FineHistogram();
        h.add(1500);
        h.add(1500, 4);
        h.add(500, 3);
        h.add(1L << 50, 2);
        assertEquals(10, h.totalCount());
        assertEquals(5, h.count(5));
        assertEquals(3, h.count(0));
        assertEquals(2, h.count(257));
        assertThrows(IllegalArgumentException.class, () -> h.add(1500, -1));
    }

    @Test
    void quantilesAreWithinTenPercentOfTheTrueOnes() {
        long[][] distributions = {
                Samples.lognormal(1, 50_000, 200_000, 1.0, 1),
                Samples.lognormal(2, 5_000, 3_000_000, 0.5, 1),
                Samples.lognormal(3, 300, 20_000, 2.0, 1),
                Samples.uniform(4, 50_000, 10_000, 1_000_000),
                Samples.uniform(5, 2_000, 1_000_000, 1_100_000),
                Samples.bimodal(6, 50_000),
        };
        double worst = 0;
        for (long[] values : distributions) {
            FineHistogram h = Samples.histogram(values);
            assertEquals(values.length, h.totalCount());
            for (double q : QUANTILES) {
                double truth = Samples.trueQuantile(values, q);
                double error = Math.abs(h.quantile(q) / truth - 1);
                assertTrue(error <= 0.10, String.format(Locale.ROOT, "q%s: %.0f vs true %.0f", q, h.quantile(q), truth));
                worst = Math.max(worst, error);
            }
        }
        System.out.printf(Locale.ROOT, "FineHistogram: worst quantile error %.2f %% over 6 distributions%n", 100 * worst);
        // Buckets are 9 % wide; interpolation inside them does better than half of that.
        assertTrue(worst < 0.045, "worst error " + worst);
    }

    @Test
    void quantileOfOneBucketInterpolatesGeometrically() {
        FineHistogram h = new FineHistogram();
        h.add(2048, 100); // bucket [2048, 2234)
        assertEquals(2048, h.quantile(0), 1e-9);
        assertEquals(2048 * Math.pow(2234.0 / 2048, 0.5), h.quantile(0.5), 1e-9);
        assertEquals(2234, h.quantile(1), 1e-9);
        assertTrue(Double.isNaN(new FineHistogram().quantile(0.5)));
        assertThrows(IllegalArgumentException.class, () -> h.quantile(1.5));
        FineHistogram over = new FineHistogram();
        over.add(1L << 50);
        assertEquals(1L << 42, over.quantile(0.99), 0);
    }

    @Test
    void mergeAndMinusAreInverse() {
        FineHistogram a = Samples.histogram(Samples.lognormal(7, 1_000, 100_000, 1, 1));
        FineHistogram b = Samples.histogram(Samples.lognormal(8, 700, 300_000, 1, 1));
        FineHistogram cumulative = a.copy();
        cumulative.merge(b);
        assertEquals(1_700, cumulative.totalCount());
        FineHistogram window = cumulative.minus(a);
        assertEquals(b, window);
        assertEquals(700, window.totalCount());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.minus(cumulative));
        assertTrue(e.getMessage().contains("not an earlier snapshot"), e.getMessage());
    }

    @Test
    void bytesAreCompactAndRoundTrip() {
        FineHistogram h = new FineHistogram();
        h.add(500, 3);
        h.add(1500, 200);
        // version 1, 2 buckets, (gap 0, count 3), (gap 5, count 200 = 0xC8 0x01)
        assertArrayEquals(new byte[] {1, 2, 0, 3, 5, (byte) 0xC8, 1}, h.toBytes());
        assertArrayEquals(new byte[] {1, 0}, new FineHistogram().toBytes());

        FineHistogram big = Samples.histogram(Samples.bimodal(9, 100_000));
        big.add(1L << 60, 1L << 40);
        FineHistogram back = FineHistogram.fromBytes(big.toBytes());
        assertEquals(big, back);
        assertEquals(big.totalCount(), back.totalCount());

        assertThrows(IllegalArgumentException.class, () -> FineHistogram.fromBytes(new byte[] {2, 0}));
        assertThrows(IllegalArgumentException.class, () -> FineHistogram.fromBytes(new byte[] {1, 2, 0, 3}));
        assertThrows(IllegalArgumentException.class, () -> FineHistogram.fromBytes(new byte[] {1, 1, (byte) 0x82, 2, 1}));
        assertThrows(IllegalArgumentException.class, () -> FineHistogram.fromBytes(new byte[] {1, 0, 7}));
    }
}
