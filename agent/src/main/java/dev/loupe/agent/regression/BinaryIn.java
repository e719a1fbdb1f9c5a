package dev.loupe.agent.regression;

import com.google.protobuf.CodedInputStream;

import java.io.IOException;

/**
 * Reads {@link BinaryOut}'s forms. Every malformation (truncation, an overlong varint, a count larger than the
 * bytes left could hold) is an {@link IllegalArgumentException}, so a damaged file never allocates without bound.
 */
final class BinaryIn {
    private final CodedInputStream in;
    private final int length;

    BinaryIn(byte[] bytes) {
        this.in = CodedInputStream.newInstance(bytes);
        this.length = bytes.length;
    }

    long varint() {
        return read(in::readRawVarint64);
    }

    long signed() {
        return read(in::readSInt64);
    }

    /** A count of items that take at least one byte each: never more than the bytes left. */
    int count() {
        long n = varint();
        if (n < 0 || n > remaining()) {
            throw new IllegalArgumentException("count " + n + " with " + remaining() + " bytes left");
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

    String string() {
        int n = count();
        return new String(read(() -> in.readRawBytes(n)), java.nio.charset.StandardCharsets.UTF_8);
    }

    boolean hasRemaining() {
        return remaining() > 0;
    }

    int remaining() {
        return length - in.getTotalBytesRead();
    }

    private interface Read<T> {
        T run() throws IOException;
    }

    private static <T> T read(Read<T> r) {
        try {
            return r.run();
        } catch (IOException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }
}
