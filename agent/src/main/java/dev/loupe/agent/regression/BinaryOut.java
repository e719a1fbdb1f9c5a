package dev.loupe.agent.regression;

import com.google.protobuf.CodedOutputStream;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Unsigned varints, zigzag signed varints and length-prefixed bytes and UTF-8 (protobuf's encodings, through its
 * {@link CodedOutputStream}), into a growing byte array.
 */
final class BinaryOut {
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    private final CodedOutputStream out = CodedOutputStream.newInstance(bytes);

    BinaryOut varint(long value) {
        return write(() -> out.writeUInt64NoTag(value));
    }

    /** A signed value (a time, which tests may put before the epoch), zigzag-encoded. */
    BinaryOut signed(long value) {
        return write(() -> out.writeSInt64NoTag(value));
    }

    BinaryOut string(String s) {
        return write(() -> out.writeStringNoTag(s));
    }

    BinaryOut raw(byte[] b) {
        return write(() -> out.writeRawBytes(b));
    }

    byte[] toByteArray() {
        write(out::flush);
        return bytes.toByteArray();
    }

    private interface Write {
        void run() throws IOException;
    }

    private BinaryOut write(Write w) {
        try {
            w.run();
        } catch (IOException e) {
            throw new UncheckedIOException("writing to memory", e); // a ByteArrayOutputStream does not fail
        }
        return this;
    }
}
