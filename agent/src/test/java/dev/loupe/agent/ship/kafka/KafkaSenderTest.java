package dev.loupe.agent.ship.kafka;

import dev.loupe.agent.ship.SendResult;
import dev.loupe.agent.ship.SpooledBatch;
import dev.loupe.pprof.parca.WriteRawRequest;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** KafkaSender against a real KRaft broker (one for the class). */
class KafkaSenderTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(15);
    private static final AtomicInteger TOPICS = new AtomicInteger();
    static KafkaBroker broker;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = KafkaBroker.start(Map.of());
    }

    @AfterAll
    static void stopBroker() throws Exception {
        broker.close();
    }

    @BeforeEach
    void brokerUp() {
        broker.start();
    }

    private static String topic(int partitions, Map<String, String> configs) throws Exception {
        String name = "profiles-" + TOPICS.incrementAndGet();
        broker.createTopic(name, partitions, configs);
        return name;
    }

    private static KafkaSender sender(String topic, Map<String, String> props) {
        return KafkaSender.create(KafkaSenderConfig.of(broker.bootstrapServers(), "9.9.9-test").withTopic(topic)
                .withProducerProperties(props));
    }

    private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
        return KafkaRecords.header(r.headers(), name).orElseThrow(() -> new AssertionError("no header " + name));
    }

    @Test
    void oneRecordPerSeriesWithKeyAndHeaders() throws Exception {
        String topic = topic(1, Map.of());
        try (KafkaSender sender = sender(topic, Map.of())) {
            SpooledBatch batch = KafkaTestBatches.batch(7, 3, List.of(101, 102, 103));
            assertEquals(SendResult.DELIVERED, sender.send(batch, TIMEOUT));
            assertEquals(new KafkaSender.Stats(3, sender.stats().bytes(), 1), sender.stats());
        }
        var records = TopicReader.read(broker.bootstrapServers(), topic, 3, Duration.ofSeconds(30));
        assertEquals(3, records.size());
        WriteRawRequest original = KafkaTestBatches.request(3, List.of(101, 102, 103));
        for (int i = 0; i < 3; i++) {
            var r = records.get(i);
            int pid = 101 + i;
            assertEquals("test-node/" + pid + "/cpu", new String(r.key(), StandardCharsets.UTF_8));
            WriteRawRequest value = WriteRawRequest.parseFrom(r.value());
            assertEquals(1, value.getSeriesCount());
            assertEquals(original.getSeries(i), value.getSeries(0));
            assertTrue(value.getNormalized(), "normalized is kept");
            assertEquals(KafkaRecords.CONTENT_TYPE, header(r, KafkaRecords.HEADER_CONTENT_TYPE));
            assertEquals("cpu", header(r, KafkaRecords.HEADER_PROFILE_TYPE));
            assertEquals("9.9.9-test", header(r, KafkaRecords.HEADER_AGENT_VERSION));
            assertEquals(Long.toString(KafkaTestBatches.start(3)), header(r, KafkaRecords.HEADER_START_NANOS));
            assertEquals(Long.toString(KafkaTestBatches.start(4)), header(r, KafkaRecords.HEADER_END_NANOS));
            assertEquals("test-node/7/" + KafkaTestBatches.start(3) + "/" + i, header(r, KafkaRecords.HEADER_RECORD_ID));
        }
    }

    @Test
    void eachSeriesStaysInOnePartitionInOrder() throws Exception {
        String topic = topic(4, Map.of());
        List<Integer> pids = List.of(11, 22, 33, 44, 55, 66);
        int intervals = 15;
        try (KafkaSender sender = sender(topic, Map.of())) {
            for (int i = 0; i < intervals; i++) {
                assertEquals(SendResult.DELIVERED, sender.send(KafkaTestBatches.batch(i, i, pids), TIMEOUT));
            }
        }
        var records = TopicReader.read(broker.bootstrapServers(), topic, intervals * pids.size(), Duration.ofSeconds(30));
        assertEquals(intervals * pids.size(), records.size());
        Map<String, Integer> partitionOf = new HashMap<>();
        Map<String, List<Long>> seqs = new HashMap<>();
        records.sort(java.util.Comparator.comparingInt(ConsumerRecord<byte[], byte[]>::partition)
                .thenComparingLong(ConsumerRecord::offset));
        for (var r : records) {
            String key = new String(r.key(), StandardCharsets.UTF_8);
            Integer before = partitionOf.putIfAbsent(key, r.partition());
            assertTrue(before == null || before == r.partition(), key + " in partitions " + before + " and " + r.partition());
            var s = WriteRawRequest.parseFrom(r.value()).getSeries(0);
            assertEquals(key, "test-node/" + KafkaTestBatches.labelOf(s, "pid") + "/cpu");
            seqs.computeIfAbsent(key, k -> new ArrayList<>()).add(Long.parseLong(KafkaTestBatches.labelOf(s, "seq")));
        }
        List<Long> expected = java.util.stream.LongStream.range(0, intervals).boxed().toList();
        for (int pid : pids) {
            assertEquals(expected, seqs.get("test-node/" + pid + "/cpu"), "order of pid " + pid);
        }
        assertTrue(new java.util.HashSet<>(partitionOf.values()).size() > 1, "6 series over 4 partitions use more than one: " + partitionOf);
    }

    @Test
    void brokerAwayIsRetryableThenDelivered() throws Exception {
        String topic = topic(1, Map.of());
        try (KafkaSender sender = sender(topic, Map.of("max.block.ms", "2000", "request.timeout.ms", "2000",
                "delivery.timeout.ms", "4000"))) {
            assertEquals(SendResult.DELIVERED, sender.send(KafkaTestBatches.batch(0, 0, List.of(1)), TIMEOUT));
            broker.stop();
            SendResult away = sender.send(KafkaTestBatches.batch(1, 1, List.of(1)), Duration.ofSeconds(3));
            assertInstanceOf(SendResult.Retryable.class, away);
            assertTrue(((SendResult.Retryable) away).reason().contains("Kafka"), away.toString());
            // Past delivery.timeout.ms (4 s from the send) the producer gives up on that first attempt's record,
            // so it cannot land after the broker is back: exactly one copy of seq 1 is expected below.
            Thread.sleep(3_000);
            broker.start();
            SendResult back = SendResult.DELIVERED;
            for (int attempt = 0; attempt < 10; attempt++) {
                back = sender.send(KafkaTestBatches.batch(1, 1, List.of(1)), TIMEOUT);
                if (back instanceof SendResult.Delivered) {
                    break;
                }
            }
            assertEquals(SendResult.DELIVERED, back);
            assertEquals(2, sender.stats().records(), "acknowledged: batch 0 and batch 1 once");
            assertEquals(2, sender.stats().batches());
        }
        // Every record in the topic, in offset order: a second copy of seq 1 would show.
        assertEquals(List.of("0/1", "1/1"), seqAndPid(TopicReader.read(broker.bootstrapServers(), topic, 2, Duration.ofSeconds(30))));
    }

    /** "seq/pid" of each record, in the order read. */
    private static List<String> seqAndPid(List<ConsumerRecord<byte[], byte[]>> records) throws Exception {
        List<String> out = new ArrayList<>();
        for (var r : records) {
            var s = WriteRawRequest.parseFrom(r.value()).getSeries(0);
            out.add(KafkaTestBatches.labelOf(s, "seq") + "/" + KafkaTestBatches.labelOf(s, "pid"));
        }
        return out;
    }

    /** Random bytes do not compress: the record is as large as the raw profile. */
    private static SpooledBatch batchWithRawProfile(long seq, int rawBytes) {
        byte[] raw = new byte[rawBytes];
        new Random(seq).nextBytes(raw);
        WriteRawRequest r = WriteRawRequest.newBuilder()
                .addSeries(KafkaTestBatches.series(seq, 500, raw))
                .addSeries(KafkaTestBatches.series(seq, 501, new byte[] {1, 2, 3}))
                .build();
        return new SpooledBatch(seq, KafkaTestBatches.attributes(seq), r.toByteArray());
    }

    @Test
    void seriesAboveMaxRequestSizeIsRejectedBeforeAnythingIsSent() throws Exception {
        String topic = topic(1, Map.of());
        try (KafkaSender sender = sender(topic, Map.of("max.request.size", "200000"))) {
            SendResult r = sender.send(batchWithRawProfile(0, 300_000), TIMEOUT);
            var rejected = assertInstanceOf(SendResult.Rejected.class, r);
            assertTrue(rejected.reason().contains("max.request.size of 200000 bytes"), rejected.reason());
            assertTrue(rejected.reason().contains("test-node/500/cpu"), rejected.reason());
            assertTrue(rejected.reason().matches(".*up to 300\\d{3} bytes.*"), rejected.reason());
            assertEquals(SendResult.DELIVERED, sender.send(batchWithRawProfile(1, 1000), TIMEOUT));
        }
        // Only the second batch's two records: nothing of the rejected one.
        var records = TopicReader.read(broker.bootstrapServers(), topic, 2, Duration.ofSeconds(30));
        assertEquals(2, records.size());
        for (var rec : records) {
            assertEquals("1", KafkaTestBatches.labelOf(WriteRawRequest.parseFrom(rec.value()).getSeries(0), "seq"));
        }
    }

    @Test
    void recordAboveTheTopicLimitIsRejectedNamingIt() throws Exception {
        String topic = topic(1, Map.of("max.message.bytes", "100000"));
        try (KafkaSender sender = sender(topic, Map.of())) {
            SendResult r = sender.send(batchWithRawProfile(0, 150_000), TIMEOUT);
            var rejected = assertInstanceOf(SendResult.Rejected.class, r);
            assertTrue(rejected.reason().contains("broker refused its record of 150"), rejected.reason());
            assertTrue(rejected.reason().contains("test-node/500/cpu"), rejected.reason());
            assertEquals(SendResult.DELIVERED, sender.send(batchWithRawProfile(1, 1000), TIMEOUT));
        }
    }

    @Test
    void malformedBatchesAreRejected() {
        try (KafkaSender sender = sender("never-created", Map.of())) {
            var noType = new SpooledBatch(1, Map.of("start_nanos", "1", "end_nanos", "2"),
                    KafkaTestBatches.request(0, List.of(1)).toByteArray());
            assertTrue(assertInstanceOf(SendResult.Rejected.class, sender.send(noType, TIMEOUT)).reason()
                    .contains("lacks the attribute profile_type"));
            var garbage = new SpooledBatch(2, KafkaTestBatches.attributes(0), new byte[] {(byte) 0xff, 1, 2});
            assertTrue(assertInstanceOf(SendResult.Rejected.class, sender.send(garbage, TIMEOUT)).reason()
                    .contains("not a WriteRawRequest"));
        }
    }

    @Test
    void safetySettingsCannotBeOverridden() {
        var base = KafkaSenderConfig.of("127.0.0.1:9092", "v");
        var acks = assertThrows(IllegalArgumentException.class, () -> base.withProducerProperties(Map.of("acks", "1")));
        assertTrue(acks.getMessage().contains("acks=1 cannot be set: delivery needs acks=all"), acks.getMessage());
        assertThrows(IllegalArgumentException.class, () -> base.withProducerProperties(Map.of("enable.idempotence", "false")));
        assertThrows(IllegalArgumentException.class, () -> base.withProducerProperties(Map.of("transactional.id", "x")));
        base.withProducerProperties(Map.of("acks", "all", "security.protocol", "SASL_SSL", "compression.type", "zstd"));
        var servers = assertThrows(IllegalArgumentException.class, () -> KafkaSenderConfig.of("host-without-port", "v"));
        assertTrue(servers.getMessage().contains("expected HOST:PORT"), servers.getMessage());
        assertThrows(IllegalArgumentException.class, () -> base.withTopic("bad topic"));
    }

    @Test
    void transactionalBatchesAreVisibleToReadCommittedAndAnAbortedOneIsNot() throws Exception {
        String topic = topic(1, Map.of("max.message.bytes", "100000"));
        byte[] tooLarge = new byte[150_000];
        new Random(1).nextBytes(tooLarge);
        // Batch 1: its first record is written, then the broker refuses the second as too large, so the
        // transaction fails; the next producer (a failure makes a new one) aborts it.
        var failing = new SpooledBatch(1, KafkaTestBatches.attributes(1), WriteRawRequest.newBuilder()
                .addSeries(KafkaTestBatches.series(1, 501, new byte[] {1, 2, 3}))
                .addSeries(KafkaTestBatches.series(1, 500, tooLarge))
                .build().toByteArray());
        try (KafkaSender sender = KafkaSender.create(KafkaSenderConfig.of(broker.bootstrapServers(), "v")
                .withTopic(topic).withTransactional(true))) {
            assertEquals(SendResult.DELIVERED, sender.send(KafkaTestBatches.batch(0, 0, List.of(1, 2)), TIMEOUT));
            var rejected = assertInstanceOf(SendResult.Rejected.class, sender.send(failing, TIMEOUT));
            assertTrue(rejected.reason().contains("test-node/500/cpu"), rejected.reason());
            assertEquals(SendResult.DELIVERED, sender.send(KafkaTestBatches.batch(2, 2, List.of(1, 2)), TIMEOUT));
        }
        // The aborted record is in the log (a read_uncommitted consumer sees it), hidden from read_committed.
        assertEquals(List.of("0/1", "0/2", "1/501", "2/1", "2/2"), seqAndPid(TopicReader.read(broker.bootstrapServers(),
                topic, 5, Duration.ofSeconds(30), IsolationLevel.READ_UNCOMMITTED)));
        assertEquals(List.of("0/1", "0/2", "2/1", "2/2"), seqAndPid(TopicReader.read(broker.bootstrapServers(),
                topic, 4, Duration.ofSeconds(30))));
    }
}
