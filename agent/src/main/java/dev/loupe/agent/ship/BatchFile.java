package dev.loupe.agent.ship;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * The on-disk form of a spooled batch: magic "LOUPESP1", attribute count (u32), each attribute as
 * key (u16 length + UTF-8) and value (u32 length + UTF-8), payload (u32 length + bytes), then a
 * CRC-32C of everything before it. Big-endian. The checksum catches truncated and damaged files.
 */
final class BatchFile {
    static final byte[] MAGIC = "LOUPESP1".getBytes(StandardCharsets.US_ASCII);
    /** Magic, attribute count, payload length, CRC. */
    static final int MIN_SIZE = MAGIC.length + 4 + 4 + 4;

    private BatchFile() {}

    /** A damaged or foreign file; the message says what is wrong with it. */
    static final class CorruptBatchException extends IOException {
        CorruptBatchException(String message) {
            super(message);
        }
    }

    /** The header (everything before the payload) and the trailer (the CRC), to write around the payload. */
    record Encoded(ByteBuffer header, byte[] payload, ByteBuffer trailer) {
        long size() {
            return header.remaining() + (long) payload.length + trailer.remaining();
        }
    }

    static Encoded encode(Map<String, String> attributes, byte[] payload) {
        int size = MAGIC.length + 4 + 4;
        for (Map.Entry<String, String> e : attributes.entrySet()) {
            size += 2 + utf8(e.getKey()).length + 4 + utf8(e.getValue()).length;
        }
        ByteBuffer header = ByteBuffer.allocate(size).order(ByteOrder.BIG_ENDIAN);
        header.put(MAGIC).putInt(attributes.size());
        for (Map.Entry<String, String> e : attributes.entrySet()) {
            byte[] k = utf8(e.getKey());
            byte[] v = utf8(e.getValue());
            if (k.length > 0xffff) {
                throw new IllegalArgumentException("attribute name over 65535 bytes");
            }
            header.putShort((short) k.length).put(k).putInt(v.length).put(v);
        }
        header.putInt(payload.length);
        header.flip();
        CRC32C crc = new CRC32C();
        crc.update(header.duplicate());
        crc.update(payload);
        ByteBuffer trailer = ByteBuffer.allocate(4).putInt((int) crc.getValue()).flip();
        return new Encoded(header, payload, trailer);
    }

    static SpooledBatch decode(long sequence, byte[] file) throws CorruptBatchException {
        if (file.length < MIN_SIZE) {
            throw new CorruptBatchException("truncated: " + file.length + " bytes, a batch file has at least " + MIN_SIZE);
        }
        ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.BIG_ENDIAN);
        byte[] magic = new byte[MAGIC.length];
        b.get(magic);
        if (!java.util.Arrays.equals(magic, MAGIC)) {
            throw new CorruptBatchException("not a spool batch file (bad magic)");
        }
        CRC32C crc = new CRC32C();
        crc.update(file, 0, file.length - 4);
        int stored = ByteBuffer.wrap(file, file.length - 4, 4).order(ByteOrder.BIG_ENDIAN).getInt();
        if ((int) crc.getValue() != stored) {
            throw new CorruptBatchException("checksum mismatch (damaged or truncated file of " + file.length + " bytes)");
        }
        int end = file.length - 4;
        try {
            int count = b.getInt();
            if (count < 0 || count > end) {
                throw new CorruptBatchException("bad attribute count " + count);
            }
            Map<String, String> attributes = new LinkedHashMap<>();
            for (int i = 0; i < count; i++) {
                String k = string(b, Short.toUnsignedInt(b.getShort()), end);
                String v = string(b, b.getInt(), end);
                attributes.put(k, v);
            }
            int length = b.getInt();
            if (length < 0 || length != end - b.position()) {
                throw new CorruptBatchException("payload length " + length + " does not match the file ("
                        + (end - b.position()) + " bytes left)");
            }
            byte[] payload = new byte[length];
            b.get(payload);
            return new SpooledBatch(sequence, attributes, payload);
        } catch (java.nio.BufferUnderflowException e) {
            throw new CorruptBatchException("truncated header");
        }
    }

    private static String string(ByteBuffer b, int length, int end) throws CorruptBatchException {
        if (length < 0 || length > end - b.position()) {
            throw new CorruptBatchException("attribute length " + length + " past the end of the file");
        }
        byte[] s = new byte[length];
        b.get(s);
        return new String(s, StandardCharsets.UTF_8);
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
