package dev.loupe.agent.regression;

import java.io.ByteArrayOutputStream;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;

/**
 * Latency counts in nanoseconds, in linear sub-buckets as HdrHistogram lays them out: each power of two
 * [2^p, 2^(p+1)) ns for p = 10..41 (1.024 µs to 2^42 ns, about 73 minutes) is cut into 8 equal buckets of
 * 2^(p-3) ns, so a bucket is 1/8 to 1/15 of its lower bound wide (12.5 % to 6.7 %) and a quantile read from it
 * is within a few per cent of the true one (the /metrics 2^k µs buckets, 100 % wide, cannot give ±10 %).
 * Below 2^10 ns is one underflow bucket, from 2^42 ns one overflow bucket. The kernel computes the same index
 * with shifts alone ({@code latency.bpf.c}), so its counts are this histogram's ({@link #ofCounts}).
 * Not thread-safe: one owner adds, others receive copies.
 */
public final class FineHistogram {
    static final int SUB_BUCKETS = 8;
    /** log2(SUB_BUCKETS): the bits below a value's leading one that pick its sub-bucket. */
    private static final int SUB_BITS = 3;
    static final int MIN_POWER = 10;
    static final int MAX_POWER = 42;
    /** Finite linear sub-buckets between 2^MIN_POWER and 2^MAX_POWER. */
    static final int LINEAR_BUCKETS = (MAX_POWER - MIN_POWER) * SUB_BUCKETS;
    /** Index 0 is underflow, 1..LINEAR_BUCKETS the linear sub-buckets, LINEAR_BUCKETS + 1 overflow. */
    public static final int BUCKETS = LINEAR_BUCKETS + 2;
    private static final int OVERFLOW = BUCKETS - 1;
    /** 1 was the log-spaced layout (bounds 2^(k + j/8)): its bucket indexes mean other values. */
    private static final byte FORMAT_VERSION = 2;

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

    /**
     * The bucket holding {@code nanos}; negative values count as underflow. With p the position of the leading
     * one bit, the sub-bucket is the 3 bits below it: exact integer arithmetic, no rounding at any edge.
     */
    public static int bucketOf(long nanos) {
        if (nanos < 1L << MIN_POWER) {
            return 0;
        }
        if (nanos >= 1L << MAX_POWER) {
            return OVERFLOW;
        }
        int power = 63 - Long.numberOfLeadingZeros(nanos);
        int sub = (int) (nanos >>> (power - SUB_BITS)) & (SUB_BUCKETS - 1);
        return 1 + (power - MIN_POWER) * SUB_BUCKETS + sub;
    }

    /** Smallest value of bucket {@code index}: (8 + s) · 2^(p-3) for sub-bucket s of power p; 0 for underflow. */
    public static long lowerBound(int index) {
        Objects.checkIndex(index, BUCKETS);
        if (index == 0) {
            return 0;
        }
        int power = MIN_POWER + (index - 1) / SUB_BUCKETS;
        int sub = (index - 1) % SUB_BUCKETS;
        return (long) (SUB_BUCKETS + sub) << (power - SUB_BITS); // overflow: power 42, sub 0, i.e. 2^42
    }

    /** One past the largest value of bucket {@code index}; {@code Long.MAX_VALUE} for overflow, which has none. */
    public static long upperBound(int index) {
        Objects.checkIndex(index, BUCKETS);
        return index == OVERFLOW ? Long.MAX_VALUE : lowerBound(index + 1);
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
     * The q-quantile in nanoseconds, NaN when empty: an estimate of the value of the ⌈q·n⌉-th smallest call
     * (at least the first). Inside its bucket the c calls are taken as spread evenly, the j-th at the centre of
     * its 1/c share, (j − ½)/c of the way up: linear, since the buckets are of equal width within a power of
     * two and at most 12.5 % wide, across which a smooth latency density is nearly flat (geometric
     * interpolation would assume a density falling as 1/x, which linear buckets give no reason for); and
     * centred, so that a bucket holding a single call (a sparse tail, p99 of a few hundred calls) gives its
     * midpoint, at most half a bucket from the truth, where placing calls at the share's top would put it at
     * the bucket's upper edge. With many calls it is plain linear interpolation. In overflow it is the
     * overflow's lower bound, as nothing above it is known.
     */
    public double quantile(double q) {
        if (!(q >= 0 && q <= 1)) {
            throw new IllegalArgumentException("quantile " + q + " is not in [0, 1]");
        }
        if (total == 0) {
            return Double.NaN;
        }
        double rank = Math.max(1, Math.ceil(q * total));
        long before = 0;
        for (int i = 0; i < BUCKETS; i++) {
            long c = counts[i];
            if (c == 0) {
                continue;
            }
            if (before + c >= rank) {
                if (i == OVERFLOW) {
                    return lowerBound(OVERFLOW);
                }
                double fraction = (rank - before - 0.5) / c;
                double lo = lowerBound(i);
                return lo + fraction * (upperBound(i) - lo);
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
