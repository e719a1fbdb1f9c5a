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
    void bucketBoundariesAreLinearEighthsOfEachPowerOfTwo() {
        assertEquals(258, FineHistogram.BUCKETS);
        assertEquals(0, FineHistogram.bucketOf(-5));
        assertEquals(0, FineHistogram.bucketOf(1023));
        assertEquals(1, FineHistogram.bucketOf(1024));
        assertEquals(1, FineHistogram.bucketOf(1151)); // 1024 + 128 - 1
        assertEquals(2, FineHistogram.bucketOf(1152));
        assertEquals(1152, FineHistogram.lowerBound(2));
        assertEquals(8, FineHistogram.bucketOf(2047));
        assertEquals(1920, FineHistogram.lowerBound(8)); // 15 · 2^7
        assertEquals(9, FineHistogram.bucketOf(2048));
        assertEquals(2048, FineHistogram.upperBound(8));
        assertEquals(256, FineHistogram.bucketOf((1L << 42) - 1));
        assertEquals(15L << 38, FineHistogram.lowerBound(256)); // 15 · 2^(41-3)
        assertEquals(257, FineHistogram.bucketOf(1L << 42));
        assertEquals(257, FineHistogram.bucketOf(Long.MAX_VALUE));
        assertEquals(0, FineHistogram.lowerBound(0));
        assertEquals(1024, FineHistogram.upperBound(0));
        assertEquals(1L << 42, FineHistogram.lowerBound(257));
        assertEquals(Long.MAX_VALUE, FineHistogram.upperBound(257));
        assertThrows(IndexOutOfBoundsException.class, () -> FineHistogram.lowerBound(258));
        assertThrows(IndexOutOfBoundsException.class, () -> FineHistogram.upperBound(-1));
        // Every bucket is (8 + s) · 2^(p-3) to (9 + s) · 2^(p-3), and holds exactly the values between, at every edge.
        for (int i = 1; i < FineHistogram.BUCKETS - 1; i++) {
            int p = 10 + (i - 1) / 8;
            int s = (i - 1) % 8;
            long lo = FineHistogram.lowerBound(i);
            long hi = FineHistogram.upperBound(i);
            assertEquals((8L + s) << (p - 3), lo, "lower bound of " + i);
            assertEquals(1L << (p - 3), hi - lo, "width of " + i);
            assertEquals(i - 1, FineHistogram.bucketOf(lo - 1), "below the lower bound of " + i);
            assertEquals(i, FineHistogram.bucketOf(lo), "lower bound of " + i);
            assertEquals(i, FineHistogram.bucketOf(hi - 1), "upper bound of " + i);
            assertEquals(i + 1, FineHistogram.bucketOf(hi), "the upper bound of " + i + " is the next one's lower");
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
        assertEquals(4, FineHistogram.bucketOf(1500)); // [1408, 1536): 1024 + 3 · 128
        assertEquals(5, h.count(4));
        assertEquals(3, h.count(0));
        assertEquals(2, h.count(257));
        assertThrows(IllegalArgumentException.class, () -> h.add(1500, -1));
    }

    @Test
    void quantilesAreWithinTenPercentOfTheTrueOnes() {
        long[][] smooth = {
                Samples.lognormal(1, 50_000, 200_000, 1.0, 1),
                Samples.lognormal(2, 5_000, 3_000_000, 0.5, 1),
                Samples.lognormal(3, 300, 20_000, 2.0, 1),
                Samples.uniform(4, 50_000, 10_000, 1_000_000),
                Samples.bimodal(6, 50_000),
        };
        double worst = 0;
        for (long[] values : smooth) {
            worst = Math.max(worst, worstError(values));
        }
        // A range that ends inside a bucket: 1.0-1.1 ms fills [1.048576, 1.179648) ms only to 40 %, so an even
        // spread over the bucket overestimates its p90 and p99 (by 5.9 % and 7.1 %); counts cannot tell.
        double edged = worstError(Samples.uniform(5, 2_000, 1_000_000, 1_100_000));
        System.out.printf(Locale.ROOT, "FineHistogram: worst quantile error %.2f %% over 5 smooth distributions, %.2f %% for"
                + " a uniform range ending inside a bucket%n", 100 * worst, 100 * edged);
        // Buckets are at most 12.5 % wide; where the density is smooth across them, interpolation does far better.
        assertTrue(worst < 0.045, "worst error " + worst);
    }

    /** The largest relative error of p50, p90 and p99, each asserted within ±10 % of the values' own. */
    private static double worstError(long[] values) {
        FineHistogram h = Samples.histogram(values);
        assertEquals(values.length, h.totalCount());
        double worst = 0;
        for (double q : QUANTILES) {
            double truth = Samples.trueQuantile(values, q);
            double error = Math.abs(h.quantile(q) / truth - 1);
            assertTrue(error <= 0.10, String.format(Locale.ROOT, "q%s: %.0f vs true %.0f", q, h.quantile(q), truth));
            worst = Math.max(worst, error);
        }
        return worst;
    }

    /** The j-th of a bucket's c calls is read at (j − ½)/c of its width: its centre when it is alone. */
    @Test
    void quantileInsideABucketIsLinearAndCentred() {
        FineHistogram h = new FineHistogram();
        h.add(2048, 100); // bucket [2048, 2304), 256 wide: call j at 2048 + (j - 0.5) · 2.56
        assertEquals(2049.28, h.quantile(0), 1e-9); // the first call
        assertEquals(2110.72, h.quantile(0.25), 1e-9); // the 25th
        assertEquals(2174.72, h.quantile(0.5), 1e-9); // the 50th
        assertEquals(2302.72, h.quantile(1), 1e-9); // the 100th
        FineHistogram alone = new FineHistogram();
        alone.add(3000); // bucket [2816, 3072)
        assertEquals(2944, alone.quantile(0.01), 0);
        assertEquals(2944, alone.quantile(0.99), 0);
        FineHistogram two = new FineHistogram();
        two.add(500); // underflow [0, 1024)
        two.add(3000);
        assertEquals(512, two.quantile(0.5), 0); // the 1st of 2
        assertEquals(2944, two.quantile(0.51), 0); // the 2nd
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
        // version 2, 2 buckets, (gap 0, count 3), (gap 4, count 200 = 0xC8 0x01)
        assertArrayEquals(new byte[] {2, 2, 0, 3, 4, (byte) 0xC8, 1}, h.toBytes());
        assertArrayEquals(new byte[] {2, 0}, new FineHistogram().toBytes());

        FineHistogram big = Samples.histogram(Samples.bimodal(9, 100_000));
        big.add(1L << 60, 1L << 40);
        FineHistogram back = FineHistogram.fromBytes(big.toBytes());
        assertEquals(big, back);
        assertEquals(big.totalCount(), back.totalCount());

        // Version 1 (the log-spaced layout) is refused: its indexes mean other bounds.
        IllegalArgumentException v1 = assertThrows(IllegalArgumentException.class, () -> FineHistogram.fromBytes(new byte[] {1, 0}));
        assertEquals("unknown histogram format version 1", v1.getMessage());
        assertThrows(IllegalArgumentException.class, () -> FineHistogram.fromBytes(new byte[] {3, 0}));
        assertThrows(IllegalArgumentException.class, () -> FineHistogram.fromBytes(new byte[] {2, 2, 0, 3}));
        assertThrows(IllegalArgumentException.class, () -> FineHistogram.fromBytes(new byte[] {2, 1, (byte) 0x82, 2, 1}));
        assertThrows(IllegalArgumentException.class, () -> FineHistogram.fromBytes(new byte[] {2, 0, 7}));
    }
}
