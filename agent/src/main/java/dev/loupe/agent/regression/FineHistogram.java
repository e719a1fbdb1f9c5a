package dev.loupe.agent.regression;

import java.io.ByteArrayOutputStream;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Latency counts in nanoseconds, in log buckets with 8 sub-buckets per power of two: bucket boundaries are
 * 2^(k + j/8) ns for k = 10..41 (1.024 µs to 2^42 ns, about 73 minutes), each bucket 9 % wider than the one
 * below, so a quantile read from it is within a few per cent of the true one (the /metrics 2^k µs buckets,
 * 100 % wide, cannot give ±10 %). Below 2^10 ns is one underflow bucket, from 2^42 ns one overflow bucket.
 * Not thread-safe: one owner adds, others receive copies.
 */
public final class FineHistogram {
    static final int SUB_BUCKETS = 8;
    static final int MIN_POWER = 10;
    static final int MAX_POWER = 42;
    /** Finite log buckets between 2^MIN_POWER and 2^MAX_POWER. */
    static final int LOG_BUCKETS = (MAX_POWER - MIN_POWER) * SUB_BUCKETS;
    /** Index 0 is underflow, 1..LOG_BUCKETS the log buckets, LOG_BUCKETS + 1 overflow. */
    public static final int BUCKETS = LOG_BUCKETS + 2;
    private static final int OVERFLOW = BUCKETS - 1;
    private static final byte FORMAT_VERSION = 1;

    /**
     * LOWER[i] is the smallest value (ns) in bucket i: ceil(2^(MIN_POWER + (i - 1)/8)) for the log buckets,
     * 0 for underflow. Integer bounds make the bucket of a value exact, with no floating-point rounding at edges.
     */
    private static final long[] LOWER = new long[BUCKETS];

    static {
        LOWER[0] = 0;
        for (int i = 1; i < BUCKETS; i++) {
            int step = i - 1;
            int power = MIN_POWER + step / SUB_BUCKETS;
            int sub = step % SUB_BUCKETS;
            LOWER[i] = (long) Math.ceil(Math.scalb(Math.pow(2.0, sub / (double) SUB_BUCKETS), power));
        }
    }

    private final long[] counts = new long[BUCKETS];
    private long total;

    public FineHistogram() {
    }

    private FineHistogram(long[] counts) {
        System.arraycopy(counts, 0, this.counts, 0, BUCKETS);
        long sum = 0;
        for (long c : counts) {
            sum += c;
        }
        this.total = sum;
    }

    /** The bucket holding {@code nanos}; negative values count as underflow. */
    public static int bucketOf(long nanos) {
        if (nanos < LOWER[1]) {
            return 0;
        }
        if (nanos >= LOWER[OVERFLOW]) {
            return OVERFLOW;
        }
        int power = 63 - Long.numberOfLeadingZeros(nanos);
        int first = 1 + (power - MIN_POWER) * SUB_BUCKETS; // the bucket starting at 2^power
        int i = first;
        while (i + 1 < OVERFLOW && i + 1 < first + SUB_BUCKETS && LOWER[i + 1] <= nanos) {
            i++;
        }
        return i;
    }

    /** Smallest value of bucket {@code index}. */
    public static long lowerBound(int index) {
        return LOWER[index];
    }

    /** One past the largest value of bucket {@code index}; the overflow bucket has none. */
    public static long upperBound(int index) {
        return index == OVERFLOW ? Long.MAX_VALUE : LOWER[index + 1];
    }

    public void add(long nanos) {
        add(nanos, 1);
    }

    public void add(long nanos, long count) {
        if (count < 0) {
            throw new IllegalArgumentException("negative count " + count);
        }
        counts[bucketOf(nanos)] += count;
        total += count;
    }

    /** Adds {@code count} calls to bucket {@code index} (as the kernel's fine histograms and profiles' le_ns give them). */
    public void addToBucket(int index, long count) {
        if (count < 0) {
            throw new IllegalArgumentException("negative count " + count);
        }
        counts[index] += count;
        total += count;
    }

    /** A histogram of these per-bucket counts ({@link #BUCKETS} of them, as the kernel's fine histogram). */
    public static FineHistogram ofCounts(long[] counts) {
        if (counts.length != BUCKETS) {
            throw new IllegalArgumentException(counts.length + " counts, " + BUCKETS + " buckets");
        }
        for (long c : counts) {
            if (c < 0) {
                throw new IllegalArgumentException("negative count " + c);
            }
        }
        return new FineHistogram(counts);
    }

    /** Adds every count of {@code other} into this one. */
    public void merge(FineHistogram other) {
        for (int i = 0; i < BUCKETS; i++) {
            counts[i] += other.counts[i];
        }
        total += other.total;
    }

    /**
     * This minus {@code earlier}, as a new histogram: the calls between two cumulative snapshots. Throws when
     * {@code earlier} has more in some bucket (it is not an earlier snapshot of the same counts, e.g. after a reset).
     */
    public FineHistogram minus(FineHistogram earlier) {
        long[] diff = new long[BUCKETS];
        for (int i = 0; i < BUCKETS; i++) {
            diff[i] = counts[i] - earlier.counts[i];
            if (diff[i] < 0) {
                throw new IllegalArgumentException("bucket " + i + " went from " + earlier.counts[i] + " to "
                        + counts[i] + ": not an earlier snapshot");
            }
        }
        return new FineHistogram(diff);
    }

    public FineHistogram copy() {
        return new FineHistogram(counts);
    }

    public long totalCount() {
        return total;
    }

    /** Count of bucket {@code index} (0 underflow, {@link #BUCKETS} - 1 overflow). */
    public long count(int index) {
        return counts[index];
    }

    /**
     * The q-quantile in nanoseconds, NaN when empty. Inside a log bucket the value is interpolated
     * geometrically (latencies are roughly log-uniform over so narrow a bucket), linearly in underflow; in
     * overflow it is the overflow's lower bound, as nothing above it is known.
     */
    public double quantile(double q) {
        if (!(q >= 0 && q <= 1)) {
            throw new IllegalArgumentException("quantile " + q + " is not in [0, 1]");
        }
        if (total == 0) {
            return Double.NaN;
        }
        double rank = q * total;
        long before = 0;
        for (int i = 0; i < BUCKETS; i++) {
            long c = counts[i];
            if (c == 0) {
                continue;
            }
            if (before + c >= rank) {
                double fraction = Math.clamp((rank - before) / c, 0.0, 1.0);
                if (i == OVERFLOW) {
                    return LOWER[OVERFLOW];
                }
                double lo = LOWER[i];
                double hi = LOWER[i + 1];
                return i == 0 ? lo + fraction * (hi - lo) : lo * Math.pow(hi / lo, fraction);
            }
            before += c;
        }
        throw new IllegalStateException("total " + total + " exceeds the sum of buckets");
    }

    /**
     * Compact form: a version byte, the number of non-empty buckets, then per non-empty bucket the gap from the
     * previous one's index and its count, all unsigned LEB128 varints.
     */
    public byte[] toBytes() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(FORMAT_VERSION);
        int nonEmpty = 0;
        for (long c : counts) {
            if (c != 0) {
                nonEmpty++;
            }
        }
        writeVarint(out, nonEmpty);
        int previous = 0;
        for (int i = 0; i < BUCKETS; i++) {
            if (counts[i] != 0) {
                writeVarint(out, i - previous);
                writeVarint(out, counts[i]);
                previous = i;
            }
        }
        return out.toByteArray();
    }

    /** Reads {@link #toBytes()}'s form; throws {@link IllegalArgumentException} on any other. */
    public static FineHistogram fromBytes(byte[] bytes) {
        ByteBuffer in = ByteBuffer.wrap(bytes);
        try {
            byte version = in.get();
            if (version != FORMAT_VERSION) {
                throw new IllegalArgumentException("unknown histogram format version " + version);
            }
            long nonEmpty = readVarint(in);
            long[] counts = new long[BUCKETS];
            long index = 0;
            for (long n = 0; n < nonEmpty; n++) {
                index += readVarint(in);
                if (index >= BUCKETS) {
                    throw new IllegalArgumentException("bucket index " + index + " out of range");
                }
                long count = readVarint(in);
                if (count < 0) {
                    throw new IllegalArgumentException("bucket " + index + " count overflows");
                }
                counts[(int) index] = count;
            }
            if (in.hasRemaining()) {
                throw new IllegalArgumentException(in.remaining() + " trailing bytes");
            }
            return new FineHistogram(counts);
        } catch (BufferUnderflowException e) {
            throw new IllegalArgumentException("truncated histogram", e);
        }
    }

    private static void writeVarint(ByteArrayOutputStream out, long value) {
        long v = value;
        while ((v & ~0x7FL) != 0) {
            out.write((int) ((v & 0x7F) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }

    private static long readVarint(ByteBuffer in) {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            byte b = in.get();
            value |= (long) (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                return value;
            }
        }
        throw new IllegalArgumentException("varint longer than 64 bits");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof FineHistogram other && Arrays.equals(counts, other.counts);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(counts);
    }

    @Override
    public String toString() {
        return "FineHistogram[total=" + total + "]";
    }
}
