package dev.loupe.config;

import java.util.Map;
import java.util.TreeMap;

/**
 * Where to send profiles through Kafka.
 *
 * @param bootstrapServers host:port[,host:port...]
 * @param topic            the topic records go to
 * @param producer         extra producer properties passed through (TLS, SASL, ...)
 */
public record KafkaSettings(String bootstrapServers, String topic, Map<String, String> producer) {
    public static final String DEFAULT_TOPIC = "loupe.profiles";

    public KafkaSettings {
        producer = java.util.Collections.unmodifiableMap(new TreeMap<>(producer));
    }
}
