package dev.loupe.agent.regression;

/**
 * A {@link FineHistogram} as bytes that name each bucket by the largest value it holds (its upper bound minus
 * one), not by its index: read back, each count goes to the bucket of that value ({@link FineHistogram#bucketOf}),
 * so a persisted baseline still reads after an upgrade that changes the bucket layout (counts of a finer old
 * bucket land in the new bucket that holds its upper end). Form: the number of non-empty buckets, then per bucket
 * the gap from the previous bucket's value and the count, all unsigned varints.
 */
final class HistogramBytes {
    private HistogramBytes() {
    }

    static byte[] encode(FineHistogram h) {
        BinaryOut out = new BinaryOut();
        write(out, h);
        return out.toByteArray();
    }

    static FineHistogram decode(byte[] bytes) {
        BinaryIn in = new BinaryIn(bytes);
        FineHistogram h = read(in);
        if (in.hasRemaining()) {
            throw new IllegalArgumentException(in.remaining() + " trailing bytes after a histogram");
        }
        return h;
    }

    static void write(BinaryOut out, FineHistogram h) {
        int nonEmpty = 0;
        for (int i = 0; i < FineHistogram.BUCKETS; i++) {
            if (h.count(i) != 0) {
                nonEmpty++;
            }
        }
        out.varint(nonEmpty);
        long previous = 0;
        for (int i = 0; i < FineHistogram.BUCKETS; i++) {
            long c = h.count(i);
            if (c != 0) {
                long value = FineHistogram.upperBound(i) - 1;
                out.varint(value - previous).varint(c);
                previous = value;
            }
        }
    }

    static FineHistogram read(BinaryIn in) {
        int n = in.count();
        FineHistogram h = new FineHistogram();
        long value = 0;
        for (int k = 0; k < n; k++) {
            long gap = in.varint();
            value += gap;
            if (gap < 0 || value < 0) {
                throw new IllegalArgumentException("bucket value out of range");
            }
            h.addToBucket(FineHistogram.bucketOf(value), in.nonNegative());
        }
        return h;
    }
}
