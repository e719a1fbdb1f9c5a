package dev.loupe.agent.relay;

import dev.loupe.agent.ship.DeliveryLoop;
import dev.loupe.agent.ship.QuarantineStore;
import dev.loupe.agent.ship.SendResult;
import dev.loupe.agent.ship.kafka.KafkaLogging;
import dev.loupe.agent.ship.kafka.KafkaRecords;
import dev.loupe.agent.ship.kafka.KafkaSender;
import dev.loupe.agent.ship.kafka.KafkaSenderConfig;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;

/**
 * Forwards the Kafka records of {@link KafkaSender} to Parca, as one member of a consumer group (run more
 * instances to share the partitions).
 *
 * <p>At-least-once with deduplication: records are read {@code read_committed}, merged in partition order
 * into WriteRaw requests up to {@link Config#maxRequestBytes}, and a partition's offset is committed only
 * after Parca accepted every record before it. Retryable failures (Parca away, overloaded, timeouts) keep
 * the same records and wait a capped jittered backoff, consuming nothing new (the partitions are paused,
 * the group membership kept alive by polling). A record Parca rejects for good is logged with Parca's
 * message, kept in the quarantine directory and committed past; a merged request that is rejected is
 * resent record by record so only the bad records are quarantined. The quarantine is the spool's kind of
 * store ({@link QuarantineStore}: fsynced, capped at {@link Config#quarantineMaxBytes}, the oldest deleted
 * and counted past it). A record whose id ({@link KafkaRecords#HEADER_RECORD_ID}) was forwarded already —
 * the sender resent its batch — is dropped; the ids of the last {@link Config#dedupeCapacity} records are
 * remembered (64-bit digests).
 *
 * <p>Rebalances: when partitions are revoked, their offsets forwarded so far are committed and their
 * buffered, unforwarded records dropped (the next owner reads them from the committed offset). Offsets
 * whose commit failed (brokers away) are retried without sending anything twice; if they are lost after
 * all, the ids remembered here still drop the re-read records on this instance.
 *
 * <p>This class runs the poll loop and composes the parts, one job each: {@link RecordForwarder} (merging,
 * sending, settling), {@link OffsetTracker} and {@link RebalanceListener} (what is committed when),
 * {@link RecordIds} (duplicates), {@link RecordQuarantine} (rejected records), {@link RetrySchedule} (backoff).
 */
public final class KafkaRelay implements Runnable, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(KafkaRelay.class.getName());
    private static final Duration POLL = Duration.ofMillis(200);

    /** Parca's WriteRaw; {@code ParcaClient::writeRaw} is one. */
    @FunctionalInterface
    public interface Forwarder {
        SendResult writeRaw(byte[] writeRawRequest, Duration timeout);
    }

    /**
     * @param consumerProperties passed to the Kafka consumer (TLS, SASL...); the settings the relay's
     *                           guarantees rest on cannot be set
     * @param quarantineMaxBytes cap on the quarantine directory; past it the oldest rejected records are
     *                           deleted (counted, logged); 0 keeps none
     */
    public record Config(String bootstrapServers, String topic, String groupId, Map<String, String> consumerProperties,
                         Path quarantineDir, int maxRequestBytes, Duration sendTimeout, DeliveryLoop.Backoff backoff,
                         int dedupeCapacity, long quarantineMaxBytes) {
        public static final String DEFAULT_GROUP_ID = "loupe-relay";
        public static final int DEFAULT_MAX_REQUEST_BYTES = 4 << 20;
        /** An eighth of the agent's default spool, as the spool's own quarantine. */
        public static final long DEFAULT_QUARANTINE_MAX_BYTES = 128L << 20;
        private static final Set<String> FIXED = Set.of(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ConsumerConfig.GROUP_ID_CONFIG,
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG);

        public Config {
            KafkaSenderConfig.validateBootstrapServers(bootstrapServers);
            Objects.requireNonNull(topic, "topic");
            Objects.requireNonNull(quarantineDir, "quarantineDir");
            if (groupId == null || groupId.isBlank()) {
                throw new IllegalArgumentException("Kafka group id is empty");
            }
            consumerProperties = Map.copyOf(consumerProperties);
            for (String k : consumerProperties.keySet()) {
                if (FIXED.contains(k)) {
                    throw new IllegalArgumentException("Kafka consumer property " + k
                            + " cannot be set: the relay sets it (offsets are committed only after Parca accepted)");
                }
            }
            if (maxRequestBytes <= 0 || dedupeCapacity <= 0) {
                throw new IllegalArgumentException("maxRequestBytes and dedupeCapacity must be positive");
            }
            if (quarantineMaxBytes < 0) {
                throw new IllegalArgumentException("quarantine max bytes must be >= 0, got " + quarantineMaxBytes);
            }
        }

        /** The quarantine capped at {@link #DEFAULT_QUARANTINE_MAX_BYTES}. */
        public Config(String bootstrapServers, String topic, String groupId, Map<String, String> consumerProperties,
                      Path quarantineDir, int maxRequestBytes, Duration sendTimeout, DeliveryLoop.Backoff backoff,
                      int dedupeCapacity) {
            this(bootstrapServers, topic, groupId, consumerProperties, quarantineDir, maxRequestBytes, sendTimeout,
                    backoff, dedupeCapacity, DEFAULT_QUARANTINE_MAX_BYTES);
        }

        public static Config defaults(String bootstrapServers, Path quarantineDir) {
            return new Config(bootstrapServers, KafkaRecords.DEFAULT_TOPIC, DEFAULT_GROUP_ID, Map.of(), quarantineDir,
                    DEFAULT_MAX_REQUEST_BYTES, Duration.ofSeconds(10), DeliveryLoop.Backoff.DEFAULT, 200_000,
                    DEFAULT_QUARANTINE_MAX_BYTES);
        }

        public Config withTopic(String topic) {
            return new Config(bootstrapServers, topic, groupId, consumerProperties, quarantineDir, maxRequestBytes,
                    sendTimeout, backoff, dedupeCapacity, quarantineMaxBytes);
        }

        public Config withGroupId(String groupId) {
            return new Config(bootstrapServers, topic, groupId, consumerProperties, quarantineDir, maxRequestBytes,
                    sendTimeout, backoff, dedupeCapacity, quarantineMaxBytes);
        }

        public Config withConsumerProperties(Map<String, String> properties) {
            return new Config(bootstrapServers, topic, groupId, properties, quarantineDir, maxRequestBytes,
                    sendTimeout, backoff, dedupeCapacity, quarantineMaxBytes);
        }

        public Config withBackoff(DeliveryLoop.Backoff backoff, Duration sendTimeout) {
            return new Config(bootstrapServers, topic, groupId, consumerProperties, quarantineDir, maxRequestBytes,
                    sendTimeout, backoff, dedupeCapacity, quarantineMaxBytes);
        }

        public Config withMaxRequestBytes(int maxRequestBytes) {
            return new Config(bootstrapServers, topic, groupId, consumerProperties, quarantineDir, maxRequestBytes,
                    sendTimeout, backoff, dedupeCapacity, quarantineMaxBytes);
        }

        public Config withQuarantineMaxBytes(long quarantineMaxBytes) {
            return new Config(bootstrapServers, topic, groupId, consumerProperties, quarantineDir, maxRequestBytes,
                    sendTimeout, backoff, dedupeCapacity, quarantineMaxBytes);
        }

        Map<String, Object> consumerConfig() {
            Map<String, Object> c = new LinkedHashMap<>();
            c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            c.put(ConsumerConfig.CLIENT_ID_CONFIG, "loupe-relay");
            c.putAll(consumerProperties);
            c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
            c.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
            c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            return c;
        }
    }

    /**
     * Counters since start. {@code consumed}: records read (a record read again after a rebalance counts
     * again); {@code forwarded}: records Parca accepted; {@code requests}: WriteRaw requests accepted;
     * {@code lag}: records behind the end of the assigned partitions at the last poll (buffered ones
     * included); {@code assignedPartitions}: partitions this member owns now.
     */
    public record Stats(long consumed, long forwarded, long forwardedBytes, long requests, long duplicatesDropped,
                        long quarantined, long failedAttempts, long lag, int assignedPartitions) {}

    private final Config config;
    private final Consumer<byte[], byte[]> consumer;
    private final OffsetTracker offsets;
    private final RetrySchedule retry;
    private final RecordQuarantine quarantine;
    private final RecordForwarder forwarder;

    private final AtomicLong consumed = new AtomicLong();
    private volatile long lag;
    private volatile int assignedPartitions;
    private volatile boolean stopRequested;

    KafkaRelay(Config config, Consumer<byte[], byte[]> consumer, Forwarder parca, QuarantineStore quarantineStore,
               LongSupplier nanoTime, RandomGenerator random) {
        this.config = config;
        this.consumer = consumer;
        this.offsets = new OffsetTracker(consumer);
        this.retry = new RetrySchedule(config.backoff(), nanoTime, random);
        this.quarantine = new RecordQuarantine(quarantineStore);
        this.forwarder = new RecordForwarder(parca, config.maxRequestBytes(), config.sendTimeout(),
                new RecordIds(config.dedupeCapacity()), quarantine, offsets, retry);
    }

    /** A relay with its own Kafka consumer; opens (creating it if needed) the quarantine directory. */
    public static KafkaRelay create(Config config, Forwarder parca) throws IOException {
        KafkaLogging.quiet();
        QuarantineStore quarantine = QuarantineStore.open(config.quarantineDir(), config.quarantineMaxBytes(),
                RecordQuarantine.PAYLOAD_SUFFIX, "relay");
        Consumer<byte[], byte[]> consumer = new KafkaConsumer<>(config.consumerConfig(), new ByteArrayDeserializer(),
                new ByteArrayDeserializer());
        return new KafkaRelay(config, consumer, parca, quarantine, System::nanoTime, RandomGenerator.getDefault());
    }

    public Config config() {
        return config;
    }

    /** Relays until {@link #stop()}; commits what Parca accepted, then closes the consumer. */
    @Override
    public void run() {
        consumer.subscribe(List.of(config.topic()), new RebalanceListener(offsets, forwarder));
        try {
            while (!stopRequested) {
                step();
            }
        } catch (WakeupException e) {
            // stop()
        } finally {
            try {
                try {
                    offsets.commit();
                } catch (WakeupException e) {
                    offsets.commit(); // the wakeup of stop() was still pending; it is used up now
                }
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "relay: last offset commit failed (records after the last "
                        + "commit will be forwarded again, then dropped as duplicates only by this instance): " + e);
            }
            consumer.close(Duration.ofSeconds(5));
        }
    }

    /** Ends {@link #run()} soon, also from another thread. */
    public void stop() {
        stopRequested = true;
        consumer.wakeup();
    }

    @Override
    public void close() {
        stop();
    }

    /**
     * One poll, then one attempt if one is due. While records wait, the partitions are paused (nothing new is
     * read) and the poll only keeps the group membership alive until the retry is due.
     */
    private void step() {
        long wait = forwarder.pending() == 0 ? 0 : retry.nanosToWait();
        if (forwarder.pending() == 0) {
            consumer.resume(consumer.paused());
        } else {
            consumer.pause(consumer.assignment());
        }
        Duration poll = forwarder.pending() == 0 ? POLL : Duration.ofNanos(Math.min(POLL.toNanos(), wait));
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(poll)) {
            forwarder.add(r);
            consumed.incrementAndGet();
        }
        updateLag();
        offsets.commit();
        if (forwarder.pending() > 0 && retry.due()) {
            forwarder.forwardOnce();
        }
    }

    private void updateLag() {
        long sum = 0;
        Set<TopicPartition> assigned = consumer.assignment();
        for (TopicPartition tp : assigned) {
            OptionalLong l = consumer.currentLag(tp);
            if (l.isPresent()) {
                sum += l.getAsLong();
            }
        }
        lag = sum + forwarder.pending();
        assignedPartitions = assigned.size();
    }

    public Stats stats() {
        return new Stats(consumed.get(), forwarder.forwarded(), forwarder.forwardedBytes(), forwarder.requests(),
                forwarder.duplicates(), quarantine.count(), retry.failedAttempts(), lag, assignedPartitions);
    }
}
