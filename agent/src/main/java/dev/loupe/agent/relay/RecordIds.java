package dev.loupe.agent.relay;

import dev.loupe.agent.ship.kafka.KafkaRecords;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.LinkedHashSet;
import java.util.Optional;

/**
 * The ids ({@link KafkaRecords#HEADER_RECORD_ID}) of the last {@code capacity} records Parca accepted, as
 * 64-bit digests, so a record the sender wrote twice (it resent its batch) is forwarded once. Owned by the
 * relay's thread.
 */
final class RecordIds {
    private final int capacity;
    /** Oldest first. */
    private final LinkedHashSet<Long> forwarded = new LinkedHashSet<>();

    RecordIds(int capacity) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity must be positive");
        }
        this.capacity = capacity;
    }

    /** The digest of the record's id; empty for a record without one (never dropped as a duplicate). */
    static Optional<Long> of(ConsumerRecord<byte[], byte[]> r) {
        return KafkaRecords.header(r.headers(), KafkaRecords.HEADER_RECORD_ID).map(RecordIds::digest);
    }

    boolean forwarded(long id) {
        return forwarded.contains(id);
    }

    /** Parca accepted the record: remembers its id, forgetting the oldest past the capacity. */
    void remember(long id) {
        if (forwarded.add(id) && forwarded.size() > capacity) {
            forwarded.removeFirst();
        }
    }

    int size() {
        return forwarded.size();
    }

    /** The first 8 bytes of the id's SHA-256: a collision among 200,000 ids is about 1e-9 likely. */
    static long digest(String id) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(id.getBytes(StandardCharsets.UTF_8));
            long v = 0;
            for (int i = 0; i < 8; i++) {
                v = (v << 8) | (d[i] & 0xff);
            }
            return v;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
