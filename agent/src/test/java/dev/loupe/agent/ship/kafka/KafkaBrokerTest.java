package dev.loupe.agent.ship.kafka;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** The harness itself: a record written before a stop is read after the restart on the same port. */
class KafkaBrokerTest {
    @Test
    void restartKeepsPortAndData() throws Exception {
        try (KafkaBroker broker = KafkaBroker.start(Map.of())) {
            String bootstrap = broker.bootstrapServers();
            broker.createTopic("t", 1, Map.of());
            try (var producer = new KafkaProducer<>(Map.<String, Object>of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap),
                    new StringSerializer(), new StringSerializer())) {
                producer.send(new ProducerRecord<>("t", "k", "before restart")).get(30, TimeUnit.SECONDS);
            }
            broker.stop();
            assertFalse(broker.running());
            broker.start();
            assertEquals(bootstrap, broker.bootstrapServers());
            try (var consumer = new KafkaConsumer<>(Map.<String, Object>of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                    ConsumerConfig.GROUP_ID_CONFIG, "g", ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"),
                    new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(List.of("t"));
                List<String> values = new ArrayList<>();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (values.isEmpty() && System.nanoTime() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        values.add(r.value());
                    }
                }
                assertEquals(List.of("before restart"), values);
            }
        }
    }
}
