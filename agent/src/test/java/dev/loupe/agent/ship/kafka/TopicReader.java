package dev.loupe.agent.ship.kafka;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Reads a whole topic from the beginning (no group) until it has {@code count} records. */
public final class TopicReader {
    private TopicReader() {}

    /** As a relay reads: records of open or aborted transactions are not returned. */
    public static List<ConsumerRecord<byte[], byte[]>> read(String bootstrap, String topic, int count, Duration within) {
        return read(bootstrap, topic, count, within, IsolationLevel.READ_COMMITTED);
    }

    public static List<ConsumerRecord<byte[], byte[]>> read(String bootstrap, String topic, int count, Duration within,
                                                            IsolationLevel isolation) {
        try (var consumer = new KafkaConsumer<>(Map.<String, Object>of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation.toString(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"),
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> parts = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
            long deadline = System.nanoTime() + within.toNanos();
            while (out.size() < count && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(100)).forEach(out::add);
            }
            // A little longer: more than expected is a failure the caller should see.
            long settle = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
            while (System.nanoTime() < settle) {
                consumer.poll(Duration.ofMillis(50)).forEach(out::add);
            }
            return out;
        }
    }
}
