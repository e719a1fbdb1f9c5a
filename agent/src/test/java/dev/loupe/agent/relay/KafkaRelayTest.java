package dev.loupe.agent.relay;

import dev.loupe.agent.ship.DeliveryLoop;
import dev.loupe.agent.ship.ParcaClient;
import dev.loupe.agent.ship.ParcaClientConfig;
import dev.loupe.agent.ship.ParcaStandIn;
import dev.loupe.agent.ship.SendResult;
import dev.loupe.agent.ship.Spool;
import dev.loupe.agent.ship.kafka.KafkaBroker;
import dev.loupe.agent.ship.kafka.KafkaRecords;
import dev.loupe.agent.ship.kafka.KafkaSender;
import dev.loupe.agent.ship.kafka.KafkaSenderConfig;
import dev.loupe.agent.ship.kafka.KafkaTestBatches;
import dev.loupe.agent.ship.kafka.TopicReader;
import dev.loupe.pprof.parca.RawProfileSeries;
import io.grpc.Status;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;
import java.util.random.RandomGenerator;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Agent spool → KafkaSender → a real KRaft broker → KafkaRelay → Parca stand-in (grpc-java, Parca's
 * validation), with the broker restarted and Parca away mid-stream: every series interval reaches Parca
 * once, in order per series.
 */
class KafkaRelayTest {
    private static final DeliveryLoop.Backoff FAST = new DeliveryLoop.Backoff(Duration.ofMillis(20), Duration.ofMillis(300));
    private static final AtomicInteger NAMES = new AtomicInteger();
    /** Short client timeouts so a stopped broker is noticed in seconds, not minutes. */
    private static final Map<String, String> QUICK_PRODUCER = Map.of("max.block.ms", "2000", "request.timeout.ms", "2000",
            "delivery.timeout.ms", "5000");
    static KafkaBroker broker;

    @TempDir
    Path dir;
    final List<AutoCloseable> cleanup = new ArrayList<>();

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

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : cleanup.reversed()) {
            c.close();
        }
    }

    private static String topic(int partitions) throws Exception {
        String name = "relay-" + NAMES.incrementAndGet();
        broker.createTopic(name, partitions, Map.of());
        return name;
    }

    private ParcaStandIn standIn() throws Exception {
        ParcaStandIn s = new ParcaStandIn().start();
        cleanup.add(s);
        return s;
    }

    private KafkaRelay startRelay(String topic, String group, ParcaStandIn parca) throws Exception {
        return startRelay(topic, group, parca, c -> c);
    }

    private KafkaRelay startRelay(String topic, String group, ParcaStandIn parca, UnaryOperator<KafkaRelay.Config> more)
            throws Exception {
        ParcaClient client = ParcaClient.create(ParcaClientConfig.builder(parca.address()).insecure(true)
                .timeout(Duration.ofSeconds(2)).build());
        cleanup.add(client);
        KafkaRelay relay = KafkaRelay.create(more.apply(KafkaRelay.Config.defaults(broker.bootstrapServers(), dir.resolve("quarantine-" + group))
                .withTopic(topic).withGroupId(group).withBackoff(FAST, Duration.ofSeconds(2))
                .withMaxRequestBytes(64 << 10)
                .withConsumerProperties(Map.of("request.timeout.ms", "5000", "default.api.timeout.ms", "10000"))),
                client::writeRaw);
        Thread t = Thread.ofPlatform().name("test-relay-" + group).start(relay);
        cleanup.add(() -> {
            relay.stop();
            t.join(20_000);
            assertFalse(t.isAlive(), "relay did not stop");
        });
        return relay;
    }

    private KafkaSender sender(String topic) {
        KafkaSender s = KafkaSender.create(KafkaSenderConfig.of(broker.bootstrapServers(), "test").withTopic(topic)
                .withProducerProperties(QUICK_PRODUCER));
        cleanup.add(s);
        return s;
    }

    private static void await(String what, Duration within, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    private static String label(RawProfileSeries s, String name) {
        for (var l : s.getLabels().getLabelsList()) {
            if (l.getName().equals(name)) {
                return l.getValue();
            }
        }
        throw new AssertionError("no " + name);
    }

    /** pid → the seq labels Parca accepted for it, in arrival order. */
    private static Map<Integer, List<Long>> arrivals(ParcaStandIn parca) {
        Map<Integer, List<Long>> out = new HashMap<>();
        for (var received : parca.accepted()) {
            for (RawProfileSeries s : received.request().getSeriesList()) {
                out.computeIfAbsent(Integer.parseInt(label(s, "pid")), k -> new ArrayList<>())
                        .add(Long.parseLong(label(s, "seq")));
            }
        }
        return out;
    }

    private static int seriesCount(ParcaStandIn parca) {
        return parca.accepted().stream().mapToInt(r -> r.request().getSeriesCount()).sum();
    }

    /**
     * Exactly once each, in order: every pid got seq 0..intervals-1. Waits until the group has committed the whole
     * topic (a relay commits what Parca accepted, so none has anything left to send, and a rebalance resumes at the
     * end), then stops Parca, which waits for the calls it has begun: a duplicate is among the accepted by then.
     */
    private static void assertEveryIntervalOnceInOrder(ParcaStandIn parca, List<Integer> pids, int intervals, String topic,
                                                       String group) throws InterruptedException {
        await("every series interval at Parca", Duration.ofSeconds(60), () -> seriesCount(parca) >= pids.size() * intervals);
        await("the topic committed by " + group, Duration.ofSeconds(20), () -> committedLag(topic, group) == 0);
        parca.stop();
        List<Long> expected = IntStream.range(0, intervals).mapToObj(i -> (long) i).toList();
        Map<Integer, List<Long>> got = arrivals(parca);
        for (int pid : pids) {
            assertEquals(expected, got.get(pid), "pid " + pid + " at Parca");
        }
        assertEquals(pids.size() * intervals, seriesCount(parca), "no duplicates");
        assertTrue(parca.rejections().isEmpty(), parca.rejections().toString());
        for (var received : parca.accepted()) {
            for (RawProfileSeries s : received.request().getSeriesList()) {
                assertSourceLinesKept(dev.loupe.pprof.PprofFiles.parse(s.getSamples(0).getRawProfile().toByteArray()));
            }
        }
    }

    /** The leaf's lines as {@link KafkaTestBatches#profile} made them: inlined call, files, lines, start lines, flags. */
    private static void assertSourceLinesKept(dev.loupe.pprof.proto.Profile p) {
        var leaf = p.getLocation(0);
        List<String> lines = leaf.getLineList().stream().map(l -> {
            var f = p.getFunction((int) l.getFunctionId() - 1);
            return p.getStringTable((int) f.getName()) + " " + p.getStringTable((int) f.getFilename()) + ":" + l.getLine()
                    + " from " + f.getStartLine();
        }).toList();
        assertEquals(List.of("inlined target.h:12 from 10", "leaf target.c:30 from 25"), lines);
        var m = p.getMapping(0);
        assertTrue(m.getHasFilenames() && m.getHasLineNumbers() && m.getHasInlineFrames(), m.toString());
    }

    @Test
    void spoolToParcaAcrossABrokerRestart() throws Exception {
        String topic = topic(3);
        ParcaStandIn parca = standIn();
        KafkaRelay relay = startRelay(topic, "g-restart", parca);
        Spool spool = Spool.open(dir.resolve("spool"), "kafka", 64 << 20);
        cleanup.add(spool);
        KafkaSender sender = sender(topic);
        DeliveryLoop loop = new DeliveryLoop(spool, sender, FAST, Duration.ofSeconds(3), System::nanoTime,
                DeliveryLoop.Sleeper.SYSTEM, RandomGenerator.getDefault());
        Thread loopThread = Thread.ofPlatform().name("test-ship-kafka").start(loop);
        cleanup.add(() -> {
            loop.stop();
            loopThread.join(10_000);
        });
        List<Integer> pids = List.of(100, 200, 300, 400, 500);
        int intervals = 30;
        for (int i = 0; i < intervals; i++) {
            var b = KafkaTestBatches.batch(0, i, pids);
            spool.append(b.attributes(), b.payload());
            if (i == 10) {
                await("the first intervals at Parca", Duration.ofSeconds(30), () -> seriesCount(parca) >= pids.size() * 5);
                broker.stop();
            }
            if (i == 20) {
                assertTrue(spool.stats().batches() > 0, "batches wait in the spool while the broker is away");
                broker.start();
            }
            Thread.sleep(100);
        }
        await("spool drained", Duration.ofSeconds(30), () -> spool.stats().batches() == 0);
        assertEveryIntervalOnceInOrder(parca, pids, intervals, topic, "g-restart");
        assertEquals(intervals, loop.stats().delivered());

        // In Kafka: every record id, each series' first copies in order (resends may add copies).
        var records = TopicReader.read(broker.bootstrapServers(), topic, pids.size() * intervals, Duration.ofSeconds(30));
        Map<String, List<Long>> firstSeen = new LinkedHashMap<>();
        Set<String> ids = new HashSet<>();
        records.sort(java.util.Comparator.comparingInt((org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]> r) -> r.partition())
                .thenComparingLong(org.apache.kafka.clients.consumer.ConsumerRecord::offset));
        for (var r : records) {
            if (ids.add(KafkaRecords.header(r.headers(), KafkaRecords.HEADER_RECORD_ID).orElseThrow())) {
                var s = dev.loupe.pprof.parca.WriteRawRequest.parseFrom(r.value()).getSeries(0);
                firstSeen.computeIfAbsent(label(s, "pid"), k -> new ArrayList<>()).add(Long.parseLong(label(s, "seq")));
            }
        }
        assertEquals(pids.size() * intervals, ids.size());
        for (var e : firstSeen.values()) {
            assertEquals(IntStream.range(0, intervals).mapToObj(i -> (long) i).toList(), e);
        }
        System.out.println("broker restart: " + records.size() + " records in Kafka for " + ids.size()
                + " ids; relay " + relay.stats() + "; delivery " + loop.stats());
    }

    @Test
    void parcaAwayThenBackAndResentBatchesForwardedOnce() throws Exception {
        String topic = topic(2);
        ParcaStandIn parca = standIn();
        KafkaRelay relay = startRelay(topic, "g-outage", parca);
        KafkaSender sender = sender(topic);
        List<Integer> pids = List.of(7, 8, 9);
        int intervals = 24;
        for (int i = 0; i < intervals; i++) {
            if (i == 8) {
                await("the first intervals at Parca", Duration.ofSeconds(30), () -> seriesCount(parca) >= pids.size() * 4);
                parca.stop();
            }
            if (i == 16) {
                await("the relay retrying against the closed port", Duration.ofSeconds(10), () -> relay.stats().failedAttempts() >= 3);
                parca.start();
            }
            assertEquals(SendResult.DELIVERED, sender.send(KafkaTestBatches.batch(i, i, pids), Duration.ofSeconds(10)));
            if (i % 3 == 0) {
                // What the delivery loop does when an acknowledgement was lost: the same batch again.
                assertEquals(SendResult.DELIVERED, sender.send(KafkaTestBatches.batch(i, i, pids), Duration.ofSeconds(10)));
            }
            Thread.sleep(50);
        }
        assertEveryIntervalOnceInOrder(parca, pids, intervals, topic, "g-outage");
        KafkaRelay.Stats s = relay.stats();
        assertEquals(pids.size() * 8L, s.duplicatesDropped(), s.toString());
    }

    /** Records between the group's committed offsets and the end of the topic. */
    private static long committedLag(String topic, String group) {
        try (var admin = broker.admin()) {
            var committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (var p : admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic).partitions()) {
                latest.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest());
            }
            long lag = 0;
            for (var e : admin.listOffsets(latest).all().get(10, TimeUnit.SECONDS).entrySet()) {
                var c = committed.get(e.getKey());
                lag += e.getValue().offset() - (c == null ? 0 : c.offset());
            }
            return lag;
        } catch (Exception e) {
            return -1;
        }
    }

    @Test
    void twoRelaysShareThePartitions() throws Exception {
        String topic = topic(4);
        ParcaStandIn parca = standIn();
        KafkaRelay a = startRelay(topic, "g-shared", parca);
        KafkaRelay b = startRelay(topic, "g-shared", parca);
        await("both relays own partitions", Duration.ofSeconds(60),
                () -> a.stats().assignedPartitions() == 2 && b.stats().assignedPartitions() == 2);
        KafkaSender sender = sender(topic);
        List<Integer> pids = IntStream.range(1, 13).boxed().toList();
        int intervals = 10;
        for (int i = 0; i < intervals; i++) {
            assertEquals(SendResult.DELIVERED, sender.send(KafkaTestBatches.batch(i, i, pids), Duration.ofSeconds(10)));
        }
        assertEveryIntervalOnceInOrder(parca, pids, intervals, topic, "g-shared");
        assertTrue(a.stats().forwarded() > 0 && b.stats().forwarded() > 0, a.stats() + " / " + b.stats());
        assertEquals(pids.size() * intervals, a.stats().forwarded() + b.stats().forwarded());
    }

    @Test
    void recordsParcaRejectsAreQuarantinedAndCommittedPast() throws Exception {
        String topic = topic(1);
        ParcaStandIn parca = standIn();
        parca.answer((request, headers) -> request.getSeriesList().stream().anyMatch(s -> label(s, "seq").equals("3"))
                ? new ParcaStandIn.Answer(Status.INVALID_ARGUMENT.withDescription("seq 3 is not welcome"), true)
                : ParcaStandIn.Answer.OK);
        KafkaRelay relay = startRelay(topic, "g-reject", parca);
        KafkaSender sender = sender(topic);
        List<Integer> pids = List.of(1, 2);
        for (int i = 0; i < 6; i++) {
            assertEquals(SendResult.DELIVERED, sender.send(KafkaTestBatches.batch(i, i, pids), Duration.ofSeconds(10)));
        }
        await("five intervals accepted", Duration.ofSeconds(30), () -> seriesCount(parca) >= 10);
        await("offsets committed past the rejected records", Duration.ofSeconds(20), () -> committedLag(topic, "g-reject") == 0);
        Map<Integer, List<Long>> got = arrivals(parca);
        assertEquals(List.of(0L, 1L, 2L, 4L, 5L), got.get(1));
        assertEquals(List.of(0L, 1L, 2L, 4L, 5L), got.get(2));
        assertEquals(2, relay.stats().quarantined());
        Path q = dir.resolve("quarantine-g-reject");
        try (var files = Files.list(q)) {
            List<String> names = files.map(p -> p.getFileName().toString()).sorted().toList();
            assertEquals(4, names.size(), names.toString());
            String reason = Files.readString(q.resolve(names.stream().filter(n -> n.endsWith(".reason")).findFirst().orElseThrow()));
            assertTrue(reason.contains("seq 3 is not welcome"), reason);
            var value = dev.loupe.pprof.parca.WriteRawRequest.parseFrom(
                    Files.readAllBytes(q.resolve(names.stream().filter(n -> n.endsWith(".writeraw")).findFirst().orElseThrow())));
            assertEquals("3", label(value.getSeries(0), "seq"));
        }
    }

    @Test
    void theQuarantineKeepsToItsCapNewestFirst() throws Exception {
        String topic = topic(1);
        ParcaStandIn parca = standIn();
        parca.answer((request, headers) -> request.getSeriesList().stream().anyMatch(s -> Long.parseLong(label(s, "seq")) >= 3)
                ? new ParcaStandIn.Answer(Status.INVALID_ARGUMENT.withDescription("late"), true)
                : ParcaStandIn.Answer.OK);
        // A cap of one byte keeps only the record quarantined last (the newest is never deleted).
        KafkaRelay relay = startRelay(topic, "g-cap", parca, c -> c.withQuarantineMaxBytes(1));
        KafkaSender sender = sender(topic);
        List<Integer> pids = List.of(1, 2);
        for (int i = 0; i < 5; i++) {
            assertEquals(SendResult.DELIVERED, sender.send(KafkaTestBatches.batch(i, i, pids), Duration.ofSeconds(10)));
        }
        await("offsets committed past the rejected records", Duration.ofSeconds(30), () -> committedLag(topic, "g-cap") == 0);
        assertEquals(4, relay.stats().quarantined());
        assertEquals(6, seriesCount(parca));
        try (var files = Files.list(dir.resolve("quarantine-g-cap"))) {
            // Two records per interval: seq 4 of pid 2 is offset 9.
            assertEquals(List.of(topic + "-0-9.reason", topic + "-0-9.writeraw"),
                    files.map(p -> p.getFileName().toString()).sorted().toList());
        }
    }
}
