package dev.loupe.agent.relay;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.loupe.agent.ship.SendResult;
import dev.loupe.agent.ship.kafka.KafkaRecords;
import dev.loupe.pprof.parca.WriteRawRequest;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Sends the records read to Parca, in partition order: the head of the pending records merged into one
 * WriteRaw request up to {@code maxRequestBytes}, and record by record after Parca rejected a merged request,
 * so only the bad records are quarantined. A duplicate ({@link RecordIds}) or a record that is not a
 * WriteRaw request never goes to Parca. Each record is settled with the {@link OffsetTracker} once Parca
 * accepted it, it was dropped or quarantined; a retryable failure puts the records back at the head and
 * waits for the {@link RetrySchedule}. Owned by the relay's thread; the counters are read from any.
 */
final class RecordForwarder {
    private static final System.Logger LOG = System.getLogger(KafkaRelay.class.getName());

    private final KafkaRelay.Forwarder parca;
    private final int maxRequestBytes;
    private final Duration sendTimeout;
    private final RecordIds ids;
    private final RecordQuarantine quarantine;
    private final OffsetTracker offsets;
    private final RetrySchedule retry;
    private final Deque<ConsumerRecord<byte[], byte[]>> pending = new ArrayDeque<>();

    private final AtomicLong forwarded = new AtomicLong();
    private final AtomicLong forwardedBytes = new AtomicLong();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong duplicates = new AtomicLong();

    RecordForwarder(KafkaRelay.Forwarder parca, int maxRequestBytes, Duration sendTimeout, RecordIds ids,
                    RecordQuarantine quarantine, OffsetTracker offsets, RetrySchedule retry) {
        this.parca = parca;
        this.maxRequestBytes = maxRequestBytes;
        this.sendTimeout = sendTimeout;
        this.ids = ids;
        this.quarantine = quarantine;
        this.offsets = offsets;
        this.retry = retry;
    }

    void add(ConsumerRecord<byte[], byte[]> r) {
        pending.addLast(r);
    }

    int pending() {
        return pending.size();
    }

    /** The partitions went to another member: their records are its to forward. */
    void dropPending(Set<TopicPartition> gone) {
        pending.removeIf(r -> gone.contains(new TopicPartition(r.topic(), r.partition())));
    }

    /** Records merged into one request, in order. */
    private record Chunk(List<ConsumerRecord<byte[], byte[]>> records, WriteRawRequest request, long bytes) {}

    /** Forwards the head of the pending records: one merged request, or record by record after a rejection. */
    void forwardOnce() {
        Optional<Chunk> taken = takeChunk();
        if (taken.isEmpty()) {
            offsets.commit();
            return;
        }
        Chunk chunk = taken.get();
        switch (parca.writeRaw(chunk.request().toByteArray(), sendTimeout)) {
            case SendResult.Delivered d -> {
                accepted(chunk.records(), chunk.bytes());
                offsets.commit();
            }
            case SendResult.Retryable r -> {
                putBack(chunk.records());
                retry.failed(r.reason(), pending.size());
            }
            case SendResult.Rejected r -> {
                if (chunk.records().size() == 1) {
                    quarantine(chunk.records().getFirst(), r.reason());
                    retry.succeeded();
                    offsets.commit();
                } else {
                    LOG.log(System.Logger.Level.INFO, "relay: Parca rejected a request of " + chunk.records().size()
                            + " records (" + r.reason() + "); sending them one by one to find the bad ones");
                    oneByOne(chunk.records());
                }
            }
        }
    }

    /**
     * Settles the head (duplicates and records that cannot be WriteRaw requests never go to Parca) and takes
     * the records that merge into one request; empty when nothing is left to send.
     */
    private Optional<Chunk> takeChunk() {
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        Set<Long> chunkIds = new HashSet<>();
        WriteRawRequest.Builder merged = null;
        long bytes = 0;
        while (!pending.isEmpty()) {
            ConsumerRecord<byte[], byte[]> r = pending.peekFirst();
            Optional<Long> id = RecordIds.of(r);
            if (id.isPresent() && (ids.forwarded(id.get()) || chunkIds.contains(id.get()))) {
                if (!records.isEmpty()) {
                    break; // settled after the chunk, in order
                }
                pending.removeFirst();
                duplicates.incrementAndGet();
                offsets.settled(r);
                continue;
            }
            WriteRawRequest request;
            Optional<String> problem = contentProblem(r);
            try {
                request = problem.isPresent() ? null : WriteRawRequest.parseFrom(r.value());
            } catch (InvalidProtocolBufferException e) {
                request = null;
                problem = Optional.of("value is not a WriteRawRequest: " + e.getMessage());
            }
            if (request == null) {
                if (!records.isEmpty()) {
                    break;
                }
                pending.removeFirst();
                quarantine(r, "relay: " + problem.orElseThrow());
                continue;
            }
            int size = r.value().length;
            if (merged != null && (bytes + size > maxRequestBytes || merged.getNormalized() != request.getNormalized())) {
                break;
            }
            if (merged == null) {
                merged = WriteRawRequest.newBuilder().setNormalized(request.getNormalized());
            }
            merged.addAllSeries(request.getSeriesList());
            bytes += size;
            records.add(pending.removeFirst());
            id.ifPresent(chunkIds::add);
        }
        return records.isEmpty() ? Optional.empty() : Optional.of(new Chunk(records, merged.build(), bytes));
    }

    private static Optional<String> contentProblem(ConsumerRecord<byte[], byte[]> r) {
        Optional<String> type = KafkaRecords.header(r.headers(), KafkaRecords.HEADER_CONTENT_TYPE);
        if (type.isPresent() && !type.get().equals(KafkaRecords.CONTENT_TYPE)) {
            return Optional.of("unknown content-type \"" + type.get() + "\"");
        }
        return r.value() == null ? Optional.of("record has no value") : Optional.empty();
    }

    private void oneByOne(List<ConsumerRecord<byte[], byte[]>> records) {
        for (int i = 0; i < records.size(); i++) {
            ConsumerRecord<byte[], byte[]> r = records.get(i);
            switch (parca.writeRaw(r.value(), sendTimeout)) {
                case SendResult.Delivered d -> accepted(List.of(r), r.value().length);
                case SendResult.Rejected rejected -> quarantine(r, rejected.reason());
                case SendResult.Retryable retryable -> {
                    putBack(records.subList(i, records.size()));
                    offsets.commit();
                    retry.failed(retryable.reason(), pending.size());
                    return;
                }
            }
        }
        retry.succeeded();
        offsets.commit();
    }

    private void accepted(List<ConsumerRecord<byte[], byte[]>> records, long bytes) {
        for (ConsumerRecord<byte[], byte[]> r : records) {
            RecordIds.of(r).ifPresent(ids::remember);
            offsets.settled(r);
        }
        forwarded.addAndGet(records.size());
        forwardedBytes.addAndGet(bytes);
        requests.incrementAndGet();
        retry.succeeded();
    }

    private void quarantine(ConsumerRecord<byte[], byte[]> r, String reason) {
        quarantine.put(r, reason);
        offsets.settled(r);
    }

    /** Records Parca accepted since start. */
    long forwarded() {
        return forwarded.get();
    }

    long forwardedBytes() {
        return forwardedBytes.get();
    }

    /** WriteRaw requests Parca accepted since start. */
    long requests() {
        return requests.get();
    }

    /** Records dropped because Parca had accepted their id already. */
    long duplicates() {
        return duplicates.get();
    }

    private void putBack(List<ConsumerRecord<byte[], byte[]>> records) {
        for (int i = records.size() - 1; i >= 0; i--) {
            pending.addFirst(records.get(i));
        }
    }
}
