package dev.loupe.agent.ship.kafka;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.loupe.agent.ship.BatchSender;
import dev.loupe.agent.ship.SendResult;
import dev.loupe.agent.ship.SpooledBatch;
import dev.loupe.pprof.parca.Label;
import dev.loupe.pprof.parca.RawProfileSeries;
import dev.loupe.pprof.parca.WriteRawRequest;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.AbstractRecords;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * The Kafka sink: one record per series of a batch, keyed by the series id (node, pid, profile type) so
 * a series stays in one partition and keeps its order there. Record format: {@link KafkaRecords} and
 * docs/kafka.md.
 *
 * <p>Delivery: an idempotent producer with {@code acks=all} (no duplicates or reordering from the
 * producer's own retries within a partition). {@link #send} returns {@link SendResult.Delivered} only
 * when every record of the batch is acknowledged; brokers away or slow give {@link SendResult.Retryable}
 * and the delivery loop sends the whole batch again, so some records of a batch can reach the topic twice.
 * Each record carries an id that is the same in every resend (also after an agent restart replays the
 * spool), and the relay drops what it has seen: at-least-once into Kafka, deduplicated out of it.
 * A series whose record exceeds {@code max.request.size} (checked before anything of the batch is sent)
 * or that the broker refuses as too large is {@link SendResult.Rejected}: one series cannot be split.
 *
 * <p>Transactions ({@link KafkaSenderConfig#transactional()}, off by default): one transaction per batch,
 * {@code transactional.id = loupe-agent-<node>}, so read_committed consumers never see half a batch or the
 * records of a failed attempt. Not the default because (1) the relay dedupes anyway, and a commit whose
 * answer was lost is still resent, so transactions do not remove duplicates for good; (2) a transactional
 * id per node name makes two agents that share a host name fence each other, and an id that is not stable
 * leaves a crashed agent's open transaction blocking read_committed consumers of its partitions until
 * {@code transaction.timeout.ms}; (3) it needs TransactionalId ACLs and costs two more round trips per
 * batch (measured in {@code KafkaShipBench}: docs/kafka.md). Use it when other consumers of the topic
 * need batches atomically. After any failure in transactional mode the producer is closed and a new one
 * is made; its {@code initTransactions} aborts whatever the old one left open.
 */
public final class KafkaSender implements BatchSender, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(KafkaSender.class.getName());

    /** Counters since start: records and value bytes the brokers acknowledged. */
    public record Stats(long records, long bytes, long batches) {}

    private final KafkaSenderConfig config;
    private final Function<Map<String, Object>, Producer<byte[], byte[]>> producers;
    private final LongSupplier nanoTime;
    private final int maxRequestBytes;
    private final CompressionType compression;
    private final AtomicLong records = new AtomicLong();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicLong batches = new AtomicLong();
    // Used by the one delivery thread; close() may come from another.
    private Producer<byte[], byte[]> producer;
    private boolean closed;

    KafkaSender(KafkaSenderConfig config, Function<Map<String, Object>, Producer<byte[], byte[]>> producers,
                LongSupplier nanoTime) {
        this.config = config;
        this.producers = producers;
        this.nanoTime = nanoTime;
        this.maxRequestBytes = config.maxRequestBytes();
        try {
            this.compression = CompressionType.forName(config.compressionType());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("Kafka producer property compression.type="
                    + config.compressionType() + ": " + e.getMessage());
        }
        KafkaLogging.quiet();
    }

    /** A sender; the producer is made at the first send (it needs the node name for a transactional id). */
    public static KafkaSender create(KafkaSenderConfig config) {
        return new KafkaSender(config, p -> new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer()),
                System::nanoTime);
    }

    public KafkaSenderConfig config() {
        return config;
    }

    @Override
    public synchronized SendResult send(SpooledBatch batch, Duration timeout) {
        if (closed) {
            return new SendResult.Retryable("Kafka sender closed");
        }
        long deadline = nanoTime.getAsLong() + timeout.toNanos();
        List<ProducerRecord<byte[], byte[]>> recs;
        try {
            recs = records(batch);
        } catch (MalformedBatch e) {
            return new SendResult.Rejected(e.getMessage());
        }
        for (ProducerRecord<byte[], byte[]> r : recs) {
            int size = AbstractRecords.estimateSizeInBytesUpperBound(RecordBatch.CURRENT_MAGIC_VALUE, compression,
                    r.key(), r.value(), r.headers().toArray());
            if (size > maxRequestBytes) {
                return new SendResult.Rejected("series " + new String(r.key(), java.nio.charset.StandardCharsets.UTF_8)
                        + " makes a Kafka record of up to " + size + " bytes (" + r.value().length
                        + " bytes of WriteRawRequest), above the producer's max.request.size of " + maxRequestBytes
                        + " bytes; one series cannot be split further: raise max.request.size and the topic's "
                        + "max.message.bytes");
            }
        }
        String node = batch.attributes().getOrDefault("node", "");
        Producer<byte[], byte[]> p;
        try {
            p = producer(node);
        } catch (KafkaException e) {
            dropProducer();
            return classify("cannot start the Kafka producer", e);
        }
        SendResult result = config.transactional() ? sendInTransaction(p, recs, deadline) : sendAll(p, recs, deadline);
        if (result instanceof SendResult.Delivered) {
            records.addAndGet(recs.size());
            long b = 0;
            for (var r : recs) {
                b += r.value().length;
            }
            bytes.addAndGet(b);
            batches.incrementAndGet();
        }
        return result;
    }

    private SendResult sendAll(Producer<byte[], byte[]> p, List<ProducerRecord<byte[], byte[]>> recs, long deadline) {
        List<Future<RecordMetadata>> futures = new ArrayList<>(recs.size());
        try {
            for (var r : recs) {
                futures.add(p.send(r));
            }
        } catch (KafkaException | IllegalStateException e) {
            dropProducer();
            return classify("Kafka send failed", e);
        }
        int acked = 0;
        for (int i = 0; i < futures.size(); i++) {
            try {
                futures.get(i).get(Math.max(0, deadline - nanoTime.getAsLong()), TimeUnit.NANOSECONDS);
                acked++;
            } catch (TimeoutException e) {
                return new SendResult.Retryable((futures.size() - acked) + " of " + futures.size()
                        + " Kafka records not acknowledged in time (brokers away or slow)");
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (cause instanceof RecordTooLargeException) {
                    return new SendResult.Rejected("series " + new String(recs.get(i).key(), java.nio.charset.StandardCharsets.UTF_8)
                            + ": the broker refused its record of " + recs.get(i).value().length
                            + " bytes as too large (message.max.bytes, or the topic's max.message.bytes, is lower);"
                            + " one series cannot be split further: " + cause.getMessage());
                }
                SendResult r = classify("Kafka record not delivered", cause);
                if (!(cause instanceof RetriableException)) {
                    dropProducer();
                }
                return r;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new SendResult.Retryable("interrupted while waiting for Kafka acknowledgements");
            }
        }
        return SendResult.DELIVERED;
    }

    private SendResult sendInTransaction(Producer<byte[], byte[]> p, List<ProducerRecord<byte[], byte[]>> recs, long deadline) {
        List<Future<RecordMetadata>> futures = new ArrayList<>(recs.size());
        try {
            p.beginTransaction();
            for (var r : recs) {
                futures.add(p.send(r));
            }
            // commitTransaction flushes and blocks up to max.block.ms; a failed record fails the commit.
            p.commitTransaction();
            return SendResult.DELIVERED;
        } catch (KafkaException | IllegalStateException e) {
            // A new producer with the same transactional.id aborts what this one left open.
            dropProducer();
            for (int i = 0; i < futures.size(); i++) {
                if (futures.get(i).isDone()) {
                    try {
                        futures.get(i).get();
                    } catch (ExecutionException ee) {
                        if (ee.getCause() instanceof RecordTooLargeException) {
                            return new SendResult.Rejected("series " + new String(recs.get(i).key(),
                                    java.nio.charset.StandardCharsets.UTF_8) + ": the broker refused its record of "
                                    + recs.get(i).value().length + " bytes as too large: " + ee.getCause().getMessage());
                        }
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
            return classify("Kafka transaction not committed", e);
        }
    }

    private static SendResult classify(String what, Throwable e) {
        String reason = what + ": " + e;
        if (e instanceof AuthorizationException || e instanceof AuthenticationException || e instanceof InvalidTopicException) {
            return new SendResult.Rejected(reason);
        }
        return new SendResult.Retryable(reason);
    }

    private Producer<byte[], byte[]> producer(String node) {
        if (producer == null) {
            String id = "loupe-agent-" + (node.isEmpty() ? "unknown" : node);
            Producer<byte[], byte[]> p = producers.apply(config.producerConfig(id, id));
            if (config.transactional()) {
                try {
                    p.initTransactions();
                } catch (RuntimeException e) {
                    p.close(Duration.ZERO);
                    throw e;
                }
            }
            producer = p;
        }
        return producer;
    }

    private void dropProducer() {
        if (producer != null) {
            try {
                producer.close(Duration.ZERO);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, "closing the Kafka producer: " + e);
            }
            producer = null;
        }
    }

    static final class MalformedBatch extends Exception {
        MalformedBatch(String message) {
            super(message);
        }
    }

    /** One record per series; the key and headers as docs/kafka.md describes. */
    List<ProducerRecord<byte[], byte[]>> records(SpooledBatch batch) throws MalformedBatch {
        WriteRawRequest request;
        try {
            request = WriteRawRequest.parseFrom(batch.payload());
        } catch (InvalidProtocolBufferException e) {
            throw new MalformedBatch("batch " + batch.sequence() + " is not a WriteRawRequest: " + e.getMessage());
        }
        Map<String, String> a = batch.attributes();
        String type = required(batch, "profile_type");
        String start = required(batch, "start_nanos");
        String end = required(batch, "end_nanos");
        String batchNode = a.getOrDefault("node", "");
        List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>(request.getSeriesCount());
        for (int i = 0; i < request.getSeriesCount(); i++) {
            RawProfileSeries series = request.getSeries(i);
            String node = label(series, "node", batchNode);
            String pid = label(series, "pid", "");
            byte[] value = WriteRawRequest.newBuilder()
                    .addSeries(series)
                    .setNormalized(request.getNormalized())
                    .build()
                    .toByteArray();
            List<Header> headers = List.of(
                    new RecordHeader(KafkaRecords.HEADER_CONTENT_TYPE, KafkaRecords.utf8(KafkaRecords.CONTENT_TYPE)),
                    new RecordHeader(KafkaRecords.HEADER_PROFILE_TYPE, KafkaRecords.utf8(type)),
                    new RecordHeader(KafkaRecords.HEADER_AGENT_VERSION, KafkaRecords.utf8(config.agentVersion())),
                    new RecordHeader(KafkaRecords.HEADER_START_NANOS, KafkaRecords.utf8(start)),
                    new RecordHeader(KafkaRecords.HEADER_END_NANOS, KafkaRecords.utf8(end)),
                    new RecordHeader(KafkaRecords.HEADER_RECORD_ID,
                            KafkaRecords.utf8(batchNode + "/" + batch.sequence() + "/" + start + "/" + i)));
            out.add(new ProducerRecord<>(config.topic(), null, KafkaRecords.utf8(seriesKey(node, pid, type)), value, headers));
        }
        return out;
    }

    /** The record key: a series' identity, so all its intervals land in one partition in order. */
    static String seriesKey(String node, String pid, String profileType) {
        return node + "/" + pid + "/" + profileType;
    }

    private static String required(SpooledBatch batch, String name) throws MalformedBatch {
        String v = batch.attributes().get(name);
        if (v == null || v.isEmpty()) {
            throw new MalformedBatch("batch " + batch.sequence() + " lacks the attribute " + name
                    + " (has " + batch.attributes().keySet() + ")");
        }
        return v;
    }

    private static String label(RawProfileSeries series, String name, String otherwise) {
        for (Label l : series.getLabels().getLabelsList()) {
            if (l.getName().equals(name)) {
                return l.getValue();
            }
        }
        return otherwise;
    }

    public Stats stats() {
        return new Stats(records.get(), bytes.get(), batches.get());
    }

    /** Closes the producer without waiting: what is not acknowledged stays in the spool. */
    @Override
    public synchronized void close() {
        closed = true;
        dropProducer();
    }
}
