package dev.loupe.config;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * {@code loupe relay}'s settings: the Kafka side it reads and the Parca it forwards to.
 *
 * @param bootstrapServers   Kafka brokers
 * @param topic              the topic agents write to
 * @param groupId            the consumer group the relays share
 * @param consumerProperties extra Kafka consumer properties
 * @param quarantineDir      where records Parca rejects for good are kept
 * @param remoteStore        the Parca server
 * @param source             the config file used, if any
 */
public record RelayConfig(String bootstrapServers, String topic, String groupId, Map<String, String> consumerProperties,
                          Path quarantineDir, RemoteStore remoteStore, Optional<Path> source) {
    public RelayConfig {
        consumerProperties = Map.copyOf(consumerProperties);
    }

    static RelayConfig build(OptionValues v, Optional<Path> source, String sourceName) throws ConfigException {
        String servers = v.get(Options.KAFKA_BOOTSTRAP_SERVERS).orElseThrow(() -> new ConfigException(
                Options.KAFKA_BOOTSTRAP_SERVERS.flag(), 0, "required (or kafka.bootstrap-servers in the --config file)"));
        RemoteStore remote = RemoteStore.from(v, sourceName).orElseThrow(() -> new ConfigException(
                Options.REMOTE_STORE_ADDRESS.flag(), 0, "required (or remote-store.address in the --config file)"));
        return new RelayConfig(servers, v.get(Options.KAFKA_TOPIC), v.get(Options.KAFKA_GROUP_ID), v.get(Options.KAFKA_CONSUMER),
                v.get(Options.RELAY_QUARANTINE_DIR).orElseGet(() -> v.get(Options.STATE_DIR).resolve("relay-quarantine")), remote, source);
    }
}
