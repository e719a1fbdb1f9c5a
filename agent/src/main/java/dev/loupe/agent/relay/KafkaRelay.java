package dev.loupe.agent.relay;

import dev.loupe.agent.ship.kafka.KafkaLogging;
import dev.loupe.agent.ship.kafka.KafkaRecords;
import dev.loupe.agent.ship.kafka.KafkaSender;
import dev.loupe.agent.ship.kafka.KafkaSenderConfig;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.loupe.agent.ship.DeliveryLoop;
import dev.loupe.agent.ship.SendResult;
import dev.loupe.pprof.parca.WriteRawRequest;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
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
 * message, written to the quarantine directory and committed past; a merged request that is rejected is
 * resent record by record so only the bad records are quarantined. A record whose id
 * ({@link KafkaRecords#HEADER_RECORD_ID}) was forwarded already — the sender resent its batch — is
 * dropped; the ids of the last {@link Config#dedupeCapacity} records are remembered (64-bit digests).
 *
 * <p>Rebalances: when partitions are revoked, their offsets forwarded so far are committed and their
 * buffered, unforwarded records dropped (the next owner reads them from the committed offset). Offsets
 * whose commit failed (brokers away) are retried without sending anything twice; if they are lost after
 * all, the ids remembered here still drop the re-read records on this instance.
 */
public final class KafkaRelay implements Runnable, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(KafkaRelay.class.getName());
    private static final Duration POLL = Duration.ofMillis(200);
    private static final Duration COMMIT_TIMEOUT = Duration.ofSeconds(10);

    /** Parca's WriteRaw; {@code ParcaClient::writeRaw} is one. */
    @FunctionalInterface
    public interface Forwarder {
        SendResult writeRaw(byte[] writeRawRequest, Duration timeout);
    }

    /**
     * @param consumerProperties passed to the Kafka consumer (TLS, SASL...); the settings the relay's
     *                           guarantees rest on cannot be set
     */
    public record Config(String bootstrapServers, String topic, String groupId, Map<String, String> consumerProperties,
                         Path quarantineDir, int maxRequestBytes, Duration sendTimeout, DeliveryLoop.Backoff backoff,
                         int dedupeCapacity) {
        public static final String DEFAULT_GROUP_ID = "loupe-relay";
        public static final int DEFAULT_MAX_REQUEST_BYTES = 4 << 20;
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
        }

        public static Config defaults(String bootstrapServers, Path quarantineDir) {
            return new Config(bootstrapServers, KafkaRecords.DEFAULT_TOPIC, DEFAULT_GROUP_ID, Map.of(), quarantineDir,
                    DEFAULT_MAX_REQUEST_BYTES, Duration.ofSeconds(10), DeliveryLoop.Backoff.DEFAULT, 200_000);
        }

        public Config withTopic(String topic) {
            return new Config(bootstrapServers, topic, groupId, consumerProperties, quarantineDir, maxRequestBytes,
                    sendTimeout, backoff, dedupeCapacity);
        }

        public Config withGroupId(String groupId) {
            return new Config(bootstrapServers, topic, groupId, consumerProperties, quarantineDir, maxRequestBytes,
                    sendTimeout, backoff, dedupeCapacity);
        }

        public Config withConsumerProperties(Map<String, String> properties) {
            return new Config(bootstrapServers, topic, groupId, properties, quarantineDir, maxRequestBytes,
                    sendTimeout, backoff, dedupeCapacity);
        }

        public Config withBackoff(DeliveryLoop.Backoff backoff, Duration sendTimeout) {
            return new Config(bootstrapServers, topic, groupId, consumerProperties, quarantineDir, maxRequestBytes,
                    sendTimeout, backoff, dedupeCapacity);
        }

        public Config withMaxRequestBytes(int maxRequestBytes) {
            return new Config(bootstrapServers, topic, groupId, consumerProperties, quarantineDir, maxRequestBytes,
                    sendTimeout, backoff, dedupeCapacity);
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
    private final Forwarder parca;
    private final RandomGenerator random;

    private final AtomicLong consumed = new AtomicLong();
    private final AtomicLong forwarded = new AtomicLong();
    private final AtomicLong forwardedBytes = new AtomicLong();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong duplicates = new AtomicLong();
    private final AtomicLong quarantined = new AtomicLong();
    private final AtomicLong failedAttempts = new AtomicLong();
    private volatile long lag;
    private volatile int assignedPartitions;
    private volatile boolean stopRequested;

    // Owned by the thread in run().
    private final Deque<ConsumerRecord<byte[], byte[]>> buffer = new ArrayDeque<>();
    private final Map<TopicPartition, OffsetAndMetadata> uncommitted = new HashMap<>();
    private final LinkedHashSet<Long> seen = new LinkedHashSet<>();
    private int failures;
    private long nextAttemptNanos;
    private long failingSinceNanos;

    KafkaRelay(Config config, Consumer<byte[], byte[]> consumer, Forwarder parca, RandomGenerator random) {
        this.config = config;
        this.consumer = consumer;
        this.parca = parca;
        this.random = random;
    }

    public static KafkaRelay create(Config config, Forwarder parca) throws IOException {
        KafkaLogging.quiet();
        Files.createDirectories(config.quarantineDir());
        Function<Map<String, Object>, Consumer<byte[], byte[]>> consumers =
                c -> new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        return new KafkaRelay(config, consumers.apply(config.consumerConfig()), parca, RandomGenerator.getDefault());
    }

    public Config config() {
        return config;
    }

    /** Relays until {@link #stop()}; commits what Parca accepted, then closes the consumer. */
    @Override
    public void run() {
        consumer.subscribe(List.of(config.topic()), new Rebalance());
        try {
            while (!stopRequested) {
                step();
            }
        } catch (WakeupException e) {
            // stop()
        } finally {
            try {
                try {
                    commit();
                } catch (WakeupException e) {
                    commit(); // the wakeup of stop() was still pending; it is used up now
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

    private void step() {
        long now = System.nanoTime();
        boolean waiting = !buffer.isEmpty() && now < nextAttemptNanos;
        Set<TopicPartition> assigned = consumer.assignment();
        if (buffer.isEmpty()) {
            consumer.resume(consumer.paused());
        } else {
            consumer.pause(assigned);
        }
        Duration poll = buffer.isEmpty() ? POLL
                : waiting ? Duration.ofNanos(Math.min(POLL.toNanos(), nextAttemptNanos - now)) : Duration.ZERO;
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(poll)) {
            buffer.add(r);
            consumed.incrementAndGet();
        }
        updateLag();
        if (!uncommitted.isEmpty()) {
            tryCommit();
        }
        if (!buffer.isEmpty() && System.nanoTime() >= nextAttemptNanos) {
            forwardOnce();
        }
    }

    private void updateLag() {
        long sum = 0;
        for (TopicPartition tp : consumer.assignment()) {
            OptionalLong l = consumer.currentLag(tp);
            if (l.isPresent()) {
                sum += l.getAsLong();
            }
        }
        lag = sum + buffer.size();
        assignedPartitions = consumer.assignment().size();
    }

    /** Forwards the head of the buffer (one merged request, or record by record after a rejection). */
    private void forwardOnce() {
        List<ConsumerRecord<byte[], byte[]>> chunk = new ArrayList<>();
        WriteRawRequest.Builder merged = null;
        long bytes = 0;
        Set<Long> chunkIds = new HashSet<>();
        // Settle the head: duplicates and records that cannot be WriteRawRequests never go to Parca.
        while (!buffer.isEmpty()) {
            ConsumerRecord<byte[], byte[]> r = buffer.peekFirst();
            Optional<Long> id = idOf(r);
            if (id.isPresent() && (seen.contains(id.get()) || chunkIds.contains(id.get()))) {
                if (chunk.isEmpty()) {
                    buffer.removeFirst();
                    duplicates.incrementAndGet();
                    markDone(r);
                    continue;
                }
                break; // settled after the chunk, in order
            }
            WriteRawRequest request;
            Optional<String> problem = contentTypeProblem(r);
            try {
                request = problem.isPresent() ? null : WriteRawRequest.parseFrom(r.value() == null ? new byte[0] : r.value());
            } catch (InvalidProtocolBufferException e) {
                request = null;
                problem = Optional.of("value is not a WriteRawRequest: " + e.getMessage());
            }
            if (request == null) {
                if (chunk.isEmpty()) {
                    buffer.removeFirst();
                    quarantine(r, "relay: " + problem.orElseThrow());
                    markDone(r);
                    continue;
                }
                break;
            }
            int size = r.value().length;
            if (merged != null && (bytes + size > config.maxRequestBytes() || merged.getNormalized() != request.getNormalized())) {
                break;
            }
            if (merged == null) {
                merged = WriteRawRequest.newBuilder().setNormalized(request.getNormalized());
            }
            merged.addAllSeries(request.getSeriesList());
            bytes += size;
            chunk.add(buffer.removeFirst());
            id.ifPresent(chunkIds::add);
        }
        if (chunk.isEmpty()) {
            commit();
            return;
        }
        SendResult result = parca.writeRaw(merged.build().toByteArray(), config.sendTimeout());
        switch (result) {
            case SendResult.Delivered d -> {
                accepted(chunk, bytes);
                commit();
            }
            case SendResult.Retryable r -> {
                putBack(chunk);
                retryLater(r.reason());
            }
            case SendResult.Rejected r -> {
                if (chunk.size() == 1) {
                    quarantine(chunk.getFirst(), r.reason());
                    markDone(chunk.getFirst());
                    succeeded();
                    commit();
                } else {
                    LOG.log(System.Logger.Level.INFO, "relay: Parca rejected a request of " + chunk.size()
                            + " records (" + r.reason() + "); sending them one by one to find the bad ones");
                    oneByOne(chunk);
                }
            }
        }
    }

    private void oneByOne(List<ConsumerRecord<byte[], byte[]>> chunk) {
        for (int i = 0; i < chunk.size(); i++) {
            ConsumerRecord<byte[], byte[]> r = chunk.get(i);
            SendResult result = parca.writeRaw(r.value(), config.sendTimeout());
            switch (result) {
                case SendResult.Delivered d -> accepted(List.of(r), r.value().length);
                case SendResult.Rejected rej -> {
                    quarantine(r, rej.reason());
                    markDone(r);
                }
                case SendResult.Retryable retry -> {
                    putBack(chunk.subList(i, chunk.size()));
                    commit();
                    retryLater(retry.reason());
                    return;
                }
            }
        }
        succeeded();
        commit();
    }

    private void accepted(List<ConsumerRecord<byte[], byte[]>> records, long bytes) {
        for (ConsumerRecord<byte[], byte[]> r : records) {
            idOf(r).ifPresent(this::remember);
            markDone(r);
        }
        forwarded.addAndGet(records.size());
        forwardedBytes.addAndGet(bytes);
        requests.incrementAndGet();
        succeeded();
    }

    private void succeeded() {
        if (failures > 0) {
            LOG.log(System.Logger.Level.INFO, "relay: Parca accepts again after " + failures + " failed attempt(s) over "
                    + TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - failingSinceNanos) + " s");
        }
        failures = 0;
        nextAttemptNanos = 0;
    }

    private void retryLater(String reason) {
        failedAttempts.incrementAndGet();
        if (failures == 0) {
            failingSinceNanos = System.nanoTime();
            LOG.log(System.Logger.Level.WARNING, "relay: Parca did not accept " + buffer.size()
                    + " buffered record(s), retrying with backoff up to " + config.backoff().cap().toSeconds() + " s: " + reason);
        }
        nextAttemptNanos = System.nanoTime() + config.backoff().delayNanos(failures, random);
        failures = Math.min(failures + 1, 62);
    }

    private void putBack(List<ConsumerRecord<byte[], byte[]>> records) {
        for (int i = records.size() - 1; i >= 0; i--) {
            buffer.addFirst(records.get(i));
        }
    }

    private void markDone(ConsumerRecord<byte[], byte[]> r) {
        uncommitted.merge(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1),
                (a, b) -> a.offset() >= b.offset() ? a : b);
    }

    private void commit() {
        if (!uncommitted.isEmpty()) {
            tryCommit();
        }
    }

    /** Commits what was forwarded; keeps it for the next try when the brokers do not answer. */
    private void tryCommit() {
        Map<TopicPartition, OffsetAndMetadata> offsets = Map.copyOf(uncommitted);
        try {
            consumer.commitSync(offsets, COMMIT_TIMEOUT);
            offsets.forEach((tp, o) -> uncommitted.remove(tp, o));
        } catch (WakeupException e) {
            throw e;
        } catch (org.apache.kafka.clients.consumer.CommitFailedException e) {
            // The group moved on (this member was fenced or the partitions were reassigned): the offsets of
            // partitions we no longer own are the new owner's to commit.
            uncommitted.keySet().retainAll(consumer.assignment());
            LOG.log(System.Logger.Level.WARNING, "relay: offset commit refused by the group, will retry for the "
                    + "partitions still assigned: " + e.getMessage());
        } catch (KafkaException e) {
            LOG.log(System.Logger.Level.DEBUG, "relay: offset commit failed, will retry: " + e);
        }
    }

    private Optional<Long> idOf(ConsumerRecord<byte[], byte[]> r) {
        return KafkaRecords.header(r.headers(), KafkaRecords.HEADER_RECORD_ID).map(KafkaRelay::digest);
    }

    private static Optional<String> contentTypeProblem(ConsumerRecord<byte[], byte[]> r) {
        Optional<String> type = KafkaRecords.header(r.headers(), KafkaRecords.HEADER_CONTENT_TYPE);
        if (type.isPresent() && !type.get().equals(KafkaRecords.CONTENT_TYPE)) {
            return Optional.of("unknown content-type \"" + type.get() + "\"");
        }
        return r.value() == null ? Optional.of("record has no value") : Optional.empty();
    }

    private void remember(long id) {
        if (seen.add(id) && seen.size() > config.dedupeCapacity()) {
            seen.removeFirst();
        }
    }

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

    /** Writes the record's value and the reason beside it; a failure to write is logged, not retried. */
    private void quarantine(ConsumerRecord<byte[], byte[]> r, String reason) {
        quarantined.incrementAndGet();
        String name = r.topic() + "-" + r.partition() + "-" + r.offset();
        LOG.log(System.Logger.Level.WARNING, "relay: record " + name + " rejected for good, quarantined in "
                + config.quarantineDir() + ": " + reason);
        try {
            Path value = config.quarantineDir().resolve(name + ".writeraw");
            Path tmp = config.quarantineDir().resolve(name + ".tmp");
            Files.write(tmp, r.value() == null ? new byte[0] : r.value());
            Files.move(tmp, value, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            StringBuilder why = new StringBuilder(reason).append('\n');
            if (r.key() != null) {
                why.append("key: ").append(new String(r.key(), StandardCharsets.UTF_8)).append('\n');
            }
            for (var h : r.headers()) {
                why.append(h.key()).append(": ").append(h.value() == null ? "" : new String(h.value(), StandardCharsets.UTF_8)).append('\n');
            }
            Files.writeString(config.quarantineDir().resolve(name + ".reason"), why);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "relay: cannot write quarantined record " + name + ": " + e);
        }
    }

    public Stats stats() {
        return new Stats(consumed.get(), forwarded.get(), forwardedBytes.get(), requests.get(), duplicates.get(),
                quarantined.get(), failedAttempts.get(), lag, assignedPartitions);
    }

    /** Runs inside poll(), on the relay's thread. */
    private final class Rebalance implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            // Everything forwarded is in uncommitted: commit it while the partitions are still ours.
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
            forget(partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            forget(partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}

        private void forget(Collection<TopicPartition> partitions) {
            Set<TopicPartition> gone = new HashSet<>(partitions);
            buffer.removeIf(r -> gone.contains(new TopicPartition(r.topic(), r.partition())));
            uncommitted.keySet().removeAll(gone);
        }
    }
}
