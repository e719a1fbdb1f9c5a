package dev.loupe.agent.ship;

import dev.loupe.config.RemoteStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/** Builds the remote sinks from configuration; the agent's composition root calls these. */
public final class RemoteSinks {
    private RemoteSinks() {}

    /** The Parca sink: WriteRaw over OkHttp, spooled under {@code spoolRoot/parca}. */
    public static RemoteSink parca(RemoteStore store, Path spoolRoot, long spoolMaxBytes, Map<String, String> externalLabels)
            throws IOException {
        ParcaClientConfig.Builder b = ParcaClientConfig.builder(store.address())
                .insecure(store.insecure())
                .insecureSkipVerify(store.insecureSkipVerify())
                .timeout(store.timeout());
        store.caFile().ifPresent(b::caFile);
        if (store.certFile().isPresent()) {
            b.clientCertificate(store.certFile().get(), store.keyFile().orElseThrow());
        }
        store.bearerTokenFile().ifPresent(b::bearerTokenFile);
        store.headers().forEach(b::header);
        ParcaClient client = ParcaClient.create(b.build());
        Spool spool;
        try {
            spool = Spool.open(spoolRoot, "parca", spoolMaxBytes);
        } catch (IOException | RuntimeException e) {
            client.close();
            throw e;
        }
        DeliveryLoop loop = DeliveryLoop.create(spool, (batch, timeout) -> client.writeRaw(batch.payload(), timeout),
                store.timeout());
        return new RemoteSink("parca", spool, loop, encoder(externalLabels, store.batchMaxBytes()), client);
    }

    /**
     * The Kafka sink: one record per series (KafkaSender), spooled under {@code spoolRoot/kafka}. The
     * request size cap only groups series into spool batches here; records are per series.
     */
    public static RemoteSink kafka(dev.loupe.config.KafkaSettings kafka, Path spoolRoot, long spoolMaxBytes,
                                   Map<String, String> externalLabels) throws IOException {
        dev.loupe.agent.ship.kafka.KafkaSender sender = dev.loupe.agent.ship.kafka.KafkaSender.create(
                dev.loupe.agent.ship.kafka.KafkaSenderConfig.of(kafka.bootstrapServers(), agentVersion())
                        .withTopic(kafka.topic())
                        .withProducerProperties(kafka.producer())
                        .withTransactional(kafka.transactional()));
        Spool spool;
        try {
            spool = Spool.open(spoolRoot, "kafka", spoolMaxBytes);
        } catch (IOException | RuntimeException e) {
            sender.close();
            throw e;
        }
        DeliveryLoop loop = DeliveryLoop.create(spool, sender, java.time.Duration.ofSeconds(30));
        return new RemoteSink("kafka", spool, loop, encoder(externalLabels, 16L << 20), sender);
    }

    static String agentVersion() {
        String v = RemoteSinks.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }

    public static WriteRawEncoder encoder(Map<String, String> externalLabels, long maxRequestBytes) {
        return new WriteRawEncoder(externalLabels, maxRequestBytes, RemoteSinks::executable);
    }

    /** The process's executable from /proc/PID/exe; empty once it has exited or when the link is unreadable. */
    static Optional<String> executable(int pid) {
        try {
            String target = Files.readSymbolicLink(Path.of("/proc", Integer.toString(pid), "exe")).toString();
            return Optional.of(target.endsWith(" (deleted)") ? target.substring(0, target.length() - 10) : target);
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return Optional.empty();
        }
    }
}
