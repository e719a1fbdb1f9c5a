package dev.loupe.agent.regression;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Reads {@link BinaryOut}'s forms. Every malformation (truncation, an overlong varint, a count larger than the
 * bytes left could hold) is an {@link IllegalArgumentException}, so a damaged file never allocates without bound.
 */
final class BinaryIn {
    private final ByteBuffer in;

    BinaryIn(byte[] bytes) {
        this.in = ByteBuffer.wrap(bytes);
    }

    long varint() {
        try {
            long value = 0;
            for (int shift = 0; shift < 64; shift += 7) {
                byte b = in.get();
                value |= (long) (b & 0x7F) << shift;
                if ((b & 0x80) == 0) {
                    return value;
                }
            }
        } catch (BufferUnderflowException e) {
            throw new IllegalArgumentException("truncated", e);
        }
        throw new IllegalArgumentException("varint longer than 64 bits");
    }

    long signed() {
        long v = varint();
        return (v >>> 1) ^ -(v & 1);
    }

    /** A count of items that take at least one byte each: never more than the bytes left. */
    int count() {
        long n = varint();
        if (n < 0 || n > in.remaining()) {
            throw new IllegalArgumentException("count " + n + " with " + in.remaining() + " bytes left");
        }
        return (int) n;
    }

    /** A value that must be non-negative (a call count, a sum of nanoseconds). */
    long nonNegative() {
        long v = varint();
        if (v < 0) {
            throw new IllegalArgumentException("value " + Long.toUnsignedString(v) + " out of range");
        }
        return v;
    }

    byte[] bytes() {
        byte[] b = new byte[count()];
        in.get(b);
        return b;
    }

    String string() {
        return new String(bytes(), StandardCharsets.UTF_8);
    }

    byte[] raw(int n) {
        if (n > in.remaining()) {
            throw new IllegalArgumentException("truncated");
        }
        byte[] b = new byte[n];
        in.get(b);
        return b;
    }

    boolean hasRemaining() {
        return in.hasRemaining();
    }

    int remaining() {
        return in.remaining();
    }
}
