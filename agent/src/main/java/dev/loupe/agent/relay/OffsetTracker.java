package dev.loupe.agent.relay;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;

/**
 * The group offsets the relay owes: a partition's offset moves past a record once the record is settled
 * (Parca accepted it, it was a duplicate, or it was quarantined) and every record before it was. Offsets
 * whose commit failed (brokers away) are kept and committed at the next try, so nothing is sent twice for
 * it. Owned by the relay's thread (rebalance callbacks run there too, inside poll).
 */
final class OffsetTracker {
    private static final System.Logger LOG = System.getLogger(KafkaRelay.class.getName());
    private static final Duration COMMIT_TIMEOUT = Duration.ofSeconds(10);

    private final Consumer<byte[], byte[]> consumer;
    private final Map<TopicPartition, OffsetAndMetadata> uncommitted = new HashMap<>();

    OffsetTracker(Consumer<byte[], byte[]> consumer) {
        this.consumer = consumer;
    }

    /** The record needs nothing more: the group may move past it. Records are settled in partition order. */
    void settled(ConsumerRecord<byte[], byte[]> r) {
        uncommitted.merge(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1),
                (a, b) -> a.offset() >= b.offset() ? a : b);
    }

    /**
     * Commits the settled offsets; keeps them for the next try when the brokers do not answer.
     *
     * @throws WakeupException when {@code consumer.wakeup()} interrupted the commit (the relay is stopping)
     */
    void commit() {
        if (uncommitted.isEmpty()) {
            return;
        }
        Map<TopicPartition, OffsetAndMetadata> offsets = Map.copyOf(uncommitted);
        try {
            consumer.commitSync(offsets, COMMIT_TIMEOUT);
            offsets.forEach((tp, o) -> uncommitted.remove(tp, o));
        } catch (WakeupException e) {
            throw e;
        } catch (CommitFailedException e) {
            // The group moved on (this member was fenced or the partitions were reassigned): the offsets of
            // partitions we no longer own are the new owner's to commit.
            uncommitted.keySet().retainAll(consumer.assignment());
            LOG.log(System.Logger.Level.WARNING, "relay: offset commit refused by the group, will retry for the "
                    + "partitions still assigned: " + e.getMessage());
        } catch (KafkaException e) {
            LOG.log(System.Logger.Level.DEBUG, "relay: offset commit failed, will retry: " + e);
        }
    }

    /** The partitions are being revoked: commits what was settled in them while they are still ours. */
    void commitRevoked(Collection<TopicPartition> partitions) {
        Map<TopicPartition, OffsetAndMetadata> mine = new HashMap<>();
        for (TopicPartition tp : partitions) {
            OffsetAndMetadata o = uncommitted.get(tp);
            if (o != null) {
                mine.put(tp, o);
            }
        }
        if (!mine.isEmpty()) {
            try {
                consumer.commitSync(mine, COMMIT_TIMEOUT);
            } catch (KafkaException e) {
                LOG.log(System.Logger.Level.WARNING, "relay: could not commit revoked partitions " + mine.keySet()
                        + " (their next owner forwards some records again): " + e.getMessage());
            }
        }
    }

    /** The partitions are no longer ours: their offsets are the next owner's to commit. */
    void forget(Collection<TopicPartition> partitions) {
        uncommitted.keySet().removeAll(partitions);
    }
}
