package dev.loupe.config;

import java.util.Map;
import java.util.TreeMap;

/**
 * Where to send profiles through Kafka.
 *
 * @param bootstrapServers host:port[,host:port...]
 * @param topic            the topic records go to
 * @param producer         extra producer properties passed through (TLS, SASL, ...)
 * @param transactional    one Kafka transaction per batch, for read_committed consumers that need whole
 *                         batches (off by default: see docs/kafka.md)
 */
public record KafkaSettings(String bootstrapServers, String topic, Map<String, String> producer, boolean transactional) {
    public static final String DEFAULT_TOPIC = "loupe.profiles";

    public KafkaSettings(String bootstrapServers, String topic, Map<String, String> producer) {
        this(bootstrapServers, topic, producer, false);
    }

    public KafkaSettings {
        producer = java.util.Collections.unmodifiableMap(new TreeMap<>(producer));
    }
}
