package dev.loupe.agent.relay;

import dev.loupe.agent.ship.QuarantineStore;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * Keeps the records Parca rejects for good (or that are not WriteRaw requests) in a {@link QuarantineStore}:
 * {@code <topic>-<partition>-<offset>.writeraw} holds the value, {@code .reason} the reason, the key and the
 * headers. Logs each; a failure to write is logged, not retried (the record is committed past anyway).
 */
final class RecordQuarantine {
    private static final System.Logger LOG = System.getLogger(KafkaRelay.class.getName());
    static final String PAYLOAD_SUFFIX = ".writeraw";

    private final QuarantineStore store;

    RecordQuarantine(QuarantineStore store) {
        this.store = store;
    }

    void put(ConsumerRecord<byte[], byte[]> r, String reason) {
        String name = r.topic() + "-" + r.partition() + "-" + r.offset();
        LOG.log(System.Logger.Level.WARNING, "relay: record " + name + " rejected for good, quarantined in "
                + store.directory() + ": " + reason);
        StringBuilder why = new StringBuilder(reason);
        if (r.key() != null) {
            why.append("\nkey: ").append(new String(r.key(), StandardCharsets.UTF_8));
        }
        for (Header h : r.headers()) {
            why.append('\n').append(h.key()).append(": ")
                    .append(h.value() == null ? "" : new String(h.value(), StandardCharsets.UTF_8));
        }
        try {
            store.write(name, r.value() == null ? new byte[0] : r.value(), why.toString());
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "relay: cannot write quarantined record " + name + ": " + e);
        }
    }

    /** Records quarantined since start (also those the store could not write or does not keep). */
    long count() {
        return store.stats().added();
    }
}
