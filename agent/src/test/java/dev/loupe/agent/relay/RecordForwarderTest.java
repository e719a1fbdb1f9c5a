package dev.loupe.agent.relay;

import dev.loupe.agent.ship.DeliveryLoop;
import dev.loupe.agent.ship.QuarantineStore;
import dev.loupe.agent.ship.SendResult;
import dev.loupe.agent.ship.kafka.KafkaRecords;
import dev.loupe.agent.ship.kafka.KafkaTestBatches;
import dev.loupe.pprof.parca.RawProfileSeries;
import dev.loupe.pprof.parca.WriteRawRequest;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.random.RandomGenerator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The relay's parts without a broker: a MockConsumer for the group offsets, a scripted Parca. */
class RecordForwarderTest {
    private static final String TOPIC = "loupe.profiles";
    private static final TopicPartition P0 = new TopicPartition(TOPIC, 0);
    private static final TopicPartition P1 = new TopicPartition(TOPIC, 1);
    private static final DeliveryLoop.Backoff BACKOFF = new DeliveryLoop.Backoff(Duration.ofSeconds(1), Duration.ofSeconds(8));

    @TempDir
    Path dir;

    /** Commits fail while {@code brokersAway}, as when the group coordinator cannot be reached. */
    static final class Group extends MockConsumer<byte[], byte[]> {
        boolean brokersAway;
        int commits;

        Group() {
            super("earliest");
            assign(List.of(P0, P1)); // MockConsumer reports committed offsets of assigned partitions only
        }

        @Override
        public synchronized void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
            commits++;
            if (brokersAway) {
                throw new TimeoutException("coordinator away");
            }
            super.commitSync(offsets);
        }

        long committed(TopicPartition tp) {
            OffsetAndMetadata o = committed(Set.of(tp)).get(tp);
            return o == null ? 0 : o.offset();
        }
    }

    /** Answers from a script (then Delivered); keeps every request it was sent. */
    static final class ScriptedParca implements KafkaRelay.Forwarder {
        final Deque<SendResult> script = new ArrayDeque<>();
        final List<WriteRawRequest> received = new ArrayList<>();

        @Override
        public SendResult writeRaw(byte[] request, Duration timeout) {
            try {
                received.add(WriteRawRequest.parseFrom(request));
            } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                throw new AssertionError(e);
            }
            return script.isEmpty() ? SendResult.DELIVERED : script.removeFirst();
        }

        /** The seq label of each series of each request, request by request. */
        List<List<String>> seqs() {
            return received.stream().map(r -> r.getSeriesList().stream().map(s -> label(s, "seq")).toList()).toList();
        }
    }

    final Group group = new Group();
    final ScriptedParca parca = new ScriptedParca();
    final AtomicLong nanos = new AtomicLong(5_000_000_000L);
    QuarantineStore store;
    OffsetTracker offsets;
    RetrySchedule retry;
    RecordForwarder forwarder;

    @BeforeEach
    void parts() throws Exception {
        store = QuarantineStore.open(dir.resolve("quarantine"), 1 << 20, RecordQuarantine.PAYLOAD_SUFFIX, "relay");
        offsets = new OffsetTracker(group);
        // The largest jitter: the wait is the backoff's ceiling, so the test knows it.
        RandomGenerator ceiling = new RandomGenerator() {
            @Override
            public long nextLong() {
                return 0;
            }

            @Override
            public long nextLong(long bound) {
                return bound - 1;
            }
        };
        retry = new RetrySchedule(BACKOFF, nanos::get, ceiling);
        forwarder = forwarder(1 << 20);
    }

    private RecordForwarder forwarder(int maxRequestBytes) {
        return new RecordForwarder(parca, maxRequestBytes, Duration.ofSeconds(1), new RecordIds(100),
                new RecordQuarantine(store), offsets, retry);
    }

    static String label(RawProfileSeries s, String name) {
        return s.getLabels().getLabelsList().stream().filter(l -> l.getName().equals(name)).findFirst().orElseThrow().getValue();
    }

    /** A record as KafkaSender writes it: one series (pid 1, seq {@code seq}), id "n/seq". */
    private static ConsumerRecord<byte[], byte[]> record(TopicPartition tp, long offset, long seq) {
        return record(tp, offset, "n/" + seq, KafkaTestBatches.request(seq, List.of(1)).toByteArray(), KafkaRecords.CONTENT_TYPE);
    }

    private static ConsumerRecord<byte[], byte[]> record(TopicPartition tp, long offset, String id, byte[] value, String type) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(new RecordHeader(KafkaRecords.HEADER_CONTENT_TYPE, type.getBytes(StandardCharsets.UTF_8)));
        headers.add(new RecordHeader(KafkaRecords.HEADER_RECORD_ID, id.getBytes(StandardCharsets.UTF_8)));
        return new ConsumerRecord<>(tp.topic(), tp.partition(), offset, 0L, TimestampType.CREATE_TIME, 0, value.length,
                "n/1/cpu".getBytes(StandardCharsets.UTF_8), value, headers, Optional.empty());
    }

    @Test
    void mergesUpToTheRequestCapInOrderAndCommitsOnlyWhatParcaAccepted() {
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            records.add(record(P0, 10 + i, i));
        }
        int largest = records.stream().mapToInt(r -> r.value().length).max().orElseThrow();
        int smallest = records.stream().mapToInt(r -> r.value().length).min().orElseThrow();
        assertTrue(3 * smallest > 2 * largest, "test premise: any two records fit in the cap, no three");
        forwarder = forwarder(2 * largest);
        records.forEach(forwarder::add);
        parca.script.add(new SendResult.Retryable("Parca away"));
        forwarder.forwardOnce();
        assertEquals(0, group.committed(P0), "nothing accepted, nothing committed");
        assertEquals(5, forwarder.pending(), "the records wait at the head");

        nanos.addAndGet(BACKOFF.ceilingNanos(0));
        while (forwarder.pending() > 0) {
            forwarder.forwardOnce();
        }
        assertEquals(List.of(List.of("0", "1"), List.of("0", "1"), List.of("2", "3"), List.of("4")), parca.seqs());
        assertTrue(parca.received.stream().allMatch(WriteRawRequest::getNormalized));
        assertEquals(15, group.committed(P0));
        assertEquals(5, forwarder.forwarded());
        assertEquals(3, forwarder.requests());
        assertEquals(records.stream().mapToLong(r -> r.value().length).sum(), forwarder.forwardedBytes());
        assertEquals(1, retry.failedAttempts());
    }

    @Test
    void aRetryableFailureWaitsTheBackoffThenTheNextGrowsUntilParcaAccepts() {
        forwarder.add(record(P0, 0, 0));
        parca.script.add(new SendResult.Retryable("unavailable"));
        parca.script.add(new SendResult.Retryable("unavailable"));
        forwarder.forwardOnce();
        assertFalse(retry.due());
        assertEquals(BACKOFF.ceilingNanos(0), retry.nanosToWait());
        nanos.addAndGet(BACKOFF.ceilingNanos(0) - 1);
        assertFalse(retry.due(), "one nanosecond early");
        nanos.addAndGet(1);
        assertTrue(retry.due());
        forwarder.forwardOnce();
        assertEquals(BACKOFF.ceilingNanos(1), retry.nanosToWait(), "the second wait is twice the first");
        nanos.addAndGet(BACKOFF.ceilingNanos(1));
        forwarder.forwardOnce();
        assertTrue(retry.due(), "Parca accepted: no more waiting");
        assertEquals(2, retry.failedAttempts());
        assertEquals(3, parca.received.size());
        assertEquals(1, group.committed(P0));
    }

    @Test
    void aRejectedMergedRequestIsResentOneByOneAndOnlyTheBadRecordQuarantined() throws Exception {
        for (int i = 0; i < 3; i++) {
            forwarder.add(record(P0, i, i));
        }
        parca.script.add(new SendResult.Rejected("seq 1 is invalid"));
        parca.script.add(SendResult.DELIVERED);
        parca.script.add(new SendResult.Rejected("seq 1 is invalid"));
        parca.script.add(SendResult.DELIVERED);
        forwarder.forwardOnce();
        assertEquals(List.of(List.of("0", "1", "2"), List.of("0"), List.of("1"), List.of("2")), parca.seqs());
        assertEquals(3, group.committed(P0), "committed past the quarantined record");
        assertEquals(2, forwarder.forwarded());
        assertEquals(0, forwarder.pending());

        Path q = dir.resolve("quarantine");
        assertArrayEquals(record(P0, 1, 1).value(), Files.readAllBytes(q.resolve("loupe.profiles-0-1.writeraw")));
        assertEquals("seq 1 is invalid\nkey: n/1/cpu\ncontent-type: " + KafkaRecords.CONTENT_TYPE + "\nloupe-record-id: n/1\n",
                Files.readString(q.resolve("loupe.profiles-0-1.reason")));
        assertEquals(new QuarantineStore.Stats(1, store.stats().bytes(), 1, 0, 0), store.stats());
    }

    @Test
    void aRetryableFailureWhileResendingOneByOneKeepsTheRestAndCommitsWhatWasSettled() {
        for (int i = 0; i < 3; i++) {
            forwarder.add(record(P0, i, i));
        }
        parca.script.add(new SendResult.Rejected("bad"));
        parca.script.add(SendResult.DELIVERED);
        parca.script.add(new SendResult.Retryable("away"));
        forwarder.forwardOnce();
        assertEquals(1, group.committed(P0), "the first record was accepted");
        assertEquals(2, forwarder.pending());
        assertFalse(retry.due());
        nanos.addAndGet(BACKOFF.ceilingNanos(0));
        forwarder.forwardOnce();
        assertEquals(List.of("1", "2"), parca.seqs().getLast(), "merged again");
        assertEquals(3, group.committed(P0));
        assertEquals(3, forwarder.forwarded());
    }

    @Test
    void aRecordParcaAcceptedIsDroppedWhenReadAgainAndCommittedPast() {
        forwarder.add(record(P0, 0, 0));
        forwarder.add(record(P0, 1, 1));
        forwarder.forwardOnce();
        // The sender resent its batch: the same ids at later offsets, and one id twice in a row.
        forwarder.add(record(P0, 2, 0));
        forwarder.add(record(P0, 3, 2));
        forwarder.add(record(P0, 4, 2));
        forwarder.add(record(P0, 5, 1));
        while (forwarder.pending() > 0) {
            forwarder.forwardOnce();
        }
        assertEquals(List.of(List.of("0", "1"), List.of("2")), parca.seqs());
        assertEquals(3, forwarder.duplicates());
        assertEquals(3, forwarder.forwarded());
        assertEquals(6, group.committed(P0));
    }

    @Test
    void recordsThatAreNotWriteRawRequestsAreQuarantinedWithoutSending() throws Exception {
        forwarder.add(record(P0, 0, "n/x", new byte[] {(byte) 0xff, 1}, KafkaRecords.CONTENT_TYPE));
        forwarder.add(record(P0, 1, "n/y", new byte[] {1}, "text/plain"));
        forwarder.add(record(P0, 2, 7));
        forwarder.forwardOnce();
        assertEquals(List.of(List.of("7")), parca.seqs());
        assertEquals(3, group.committed(P0));
        Path q = dir.resolve("quarantine");
        assertTrue(Files.readString(q.resolve("loupe.profiles-0-0.reason")).startsWith("relay: value is not a WriteRawRequest"));
        assertTrue(Files.readString(q.resolve("loupe.profiles-0-1.reason")).startsWith("relay: unknown content-type \"text/plain\""));
        assertEquals(2, store.stats().added());
    }

    @Test
    void offsetsWhoseCommitFailedAreCommittedAtTheNextTry() {
        forwarder.add(record(P0, 0, 0));
        forwarder.add(record(P1, 0, 1));
        group.brokersAway = true;
        forwarder.forwardOnce();
        assertEquals(2, forwarder.forwarded());
        assertEquals(0, group.committed(P0));
        group.brokersAway = false;
        offsets.commit();
        assertEquals(1, group.committed(P0));
        assertEquals(1, group.committed(P1));
        int commits = group.commits;
        offsets.commit();
        assertEquals(commits, group.commits, "nothing owed: no commit");
    }

    @Test
    void revokedPartitionsCommitWhatWasSettledAndDropTheirPendingRecords() {
        RebalanceListener rebalance = new RebalanceListener(offsets, forwarder);
        group.brokersAway = true;
        forwarder.add(record(P0, 0, 0));
        forwarder.forwardOnce(); // accepted, its commit failed
        group.brokersAway = false;
        forwarder.add(record(P0, 1, 1));
        forwarder.add(record(P1, 0, 2));
        rebalance.onPartitionsRevoked(List.of(P0));
        assertEquals(1, group.committed(P0), "committed while P0 was still ours");
        assertEquals(1, forwarder.pending(), "P0's pending record is its next owner's");
        forwarder.forwardOnce();
        assertEquals(List.of(List.of("0"), List.of("2")), parca.seqs());
        assertEquals(1, group.committed(P0));
        assertEquals(1, group.committed(P1));
    }

    @Test
    void recordIdsRememberTheLastCapacityIds() {
        RecordIds ids = new RecordIds(2);
        ids.remember(RecordIds.digest("a"));
        ids.remember(RecordIds.digest("b"));
        ids.remember(RecordIds.digest("b"));
        assertEquals(2, ids.size());
        ids.remember(RecordIds.digest("c"));
        assertFalse(ids.forwarded(RecordIds.digest("a")), "the oldest is forgotten");
        assertTrue(ids.forwarded(RecordIds.digest("b")));
        assertTrue(ids.forwarded(RecordIds.digest("c")));
        assertEquals(Optional.of(RecordIds.digest("n/3")), RecordIds.of(record(P0, 0, 3)));
    }
}
