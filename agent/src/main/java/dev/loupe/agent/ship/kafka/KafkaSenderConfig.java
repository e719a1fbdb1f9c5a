package dev.loupe.agent.ship.kafka;

import org.apache.kafka.clients.producer.ProducerConfig;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Where and how {@link KafkaSender} produces. {@code producerProperties} are passed to the Kafka producer
 * as they are (TLS, SASL, {@code max.request.size}, {@code linger.ms}, {@code compression.type}...), except
 * the settings delivery depends on, which a user cannot change: setting one to another value is an error,
 * never silently ignored.
 *
 * @param transactional one Kafka transaction per batch (see {@link KafkaSender}); off by default
 */
public record KafkaSenderConfig(String bootstrapServers, String topic, Map<String, String> producerProperties,
                                boolean transactional, String agentVersion) {
    private static final Pattern TOPIC = Pattern.compile("[a-zA-Z0-9._-]{1,249}");
    private static final Pattern HOST_PORT = Pattern.compile("[^\\s,:]+:\\d{1,5}|\\[[0-9a-fA-F:.]+]:\\d{1,5}");
    /** Settings a user may not override, with the values allowed. */
    private static final Map<String, List<String>> FIXED = Map.of(
            ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, List.of("true"),
            ProducerConfig.ACKS_CONFIG, List.of("all", "-1"),
            ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, List.of(),
            ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, List.of(),
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, List.of(),
            ProducerConfig.RETRIES_CONFIG, List.of(Integer.toString(Integer.MAX_VALUE)));

    /** Defaults a user may change. */
    static final Map<String, String> DEFAULTS = Map.of(
            // The raw profiles are gzipped already; lz4 is cheap on what is left (labels, framing).
            ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4",
            ProducerConfig.LINGER_MS_CONFIG, "5",
            // send() must not block a delivery attempt for a minute when the brokers are away.
            ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000",
            ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000",
            ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");

    public KafkaSenderConfig {
        Objects.requireNonNull(bootstrapServers, "bootstrapServers");
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(agentVersion, "agentVersion");
        producerProperties = Map.copyOf(producerProperties);
        validateBootstrapServers(bootstrapServers);
        if (!TOPIC.matcher(topic).matches() || topic.equals(".") || topic.equals("..")) {
            throw new IllegalArgumentException("invalid Kafka topic \"" + topic
                    + "\": 1 to 249 characters among a-z A-Z 0-9 . _ -");
        }
        for (var e : producerProperties.entrySet()) {
            List<String> allowed = FIXED.get(e.getKey());
            if (allowed != null && !allowed.contains(e.getValue().trim())) {
                throw new IllegalArgumentException("Kafka producer property " + e.getKey() + "=" + e.getValue()
                        + " cannot be set: " + (allowed.isEmpty() ? "Loupe sets it" : "delivery needs " + e.getKey()
                        + "=" + allowed.getFirst()));
            }
        }
        if (!transactional && producerProperties.containsKey(ProducerConfig.TRANSACTIONAL_ID_CONFIG)) {
            throw new IllegalArgumentException("Kafka producer property " + ProducerConfig.TRANSACTIONAL_ID_CONFIG
                    + " is only used with transactional delivery (kafka.transactional: true)");
        }
    }

    /** The default topic, no extra properties, not transactional. */
    public static KafkaSenderConfig of(String bootstrapServers, String agentVersion) {
        return new KafkaSenderConfig(bootstrapServers, KafkaRecords.DEFAULT_TOPIC, Map.of(), false, agentVersion);
    }

    public KafkaSenderConfig withTopic(String topic) {
        return new KafkaSenderConfig(bootstrapServers, topic, producerProperties, transactional, agentVersion);
    }

    public KafkaSenderConfig withProducerProperties(Map<String, String> properties) {
        return new KafkaSenderConfig(bootstrapServers, topic, properties, transactional, agentVersion);
    }

    public KafkaSenderConfig withTransactional(boolean transactional) {
        return new KafkaSenderConfig(bootstrapServers, topic, producerProperties, transactional, agentVersion);
    }

    public static void validateBootstrapServers(String servers) {
        if (servers.isBlank()) {
            throw new IllegalArgumentException("Kafka bootstrap servers are empty: give HOST:PORT[,HOST:PORT...]");
        }
        for (String s : servers.split(",")) {
            if (!HOST_PORT.matcher(s.trim()).matches()) {
                throw new IllegalArgumentException("invalid Kafka bootstrap server \"" + s.trim()
                        + "\": expected HOST:PORT");
            }
        }
    }

    /** The producer's whole configuration, for a transactional id when {@link #transactional}. */
    Map<String, Object> producerConfig(String clientId, String transactionalId) {
        Map<String, Object> p = new LinkedHashMap<>(DEFAULTS);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.putAll(producerProperties);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.RETRIES_CONFIG, Integer.toString(Integer.MAX_VALUE));
        if (transactional) {
            p.putIfAbsent(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        }
        return p;
    }

    int maxRequestBytes() {
        String v = producerProperties.get(ProducerConfig.MAX_REQUEST_SIZE_CONFIG);
        try {
            return v == null ? 1024 * 1024 : Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("Kafka producer property max.request.size=" + v + " is not an integer");
        }
    }

    String compressionType() {
        Object v = producerConfig("x", "x").get(ProducerConfig.COMPRESSION_TYPE_CONFIG);
        return v.toString().trim();
    }
}
