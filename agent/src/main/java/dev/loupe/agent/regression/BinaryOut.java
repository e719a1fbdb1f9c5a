package dev.loupe.agent.regression;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** Unsigned LEB128 varints, zigzag signed varints and length-prefixed UTF-8, into a growing byte array. */
final class BinaryOut {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream(256);

    BinaryOut varint(long value) {
        long v = value;
        while ((v & ~0x7FL) != 0) {
            out.write((int) ((v & 0x7F) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
        return this;
    }

    /** A signed value (times can be negative in tests, gaps in either direction), zigzag-encoded. */
    BinaryOut signed(long value) {
        return varint((value << 1) ^ (value >> 63));
    }

    BinaryOut bytes(byte[] b) {
        varint(b.length);
        out.writeBytes(b);
        return this;
    }

    BinaryOut string(String s) {
        return bytes(s.getBytes(StandardCharsets.UTF_8));
    }

    BinaryOut raw(byte[] b) {
        out.writeBytes(b);
        return this;
    }

    int size() {
        return out.size();
    }

    byte[] toByteArray() {
        return out.toByteArray();
    }
}
