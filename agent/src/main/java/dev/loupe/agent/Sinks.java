package dev.loupe.agent;

import dev.loupe.agent.relabel.RelabelConfigException;
import dev.loupe.agent.relabel.Relabeling;
import dev.loupe.agent.ship.DeliveryLoop;
import dev.loupe.agent.ship.ParcaClient;
import dev.loupe.agent.ship.ParcaClientConfig;
import dev.loupe.agent.ship.RemoteSink;
import dev.loupe.agent.ship.Spool;
import dev.loupe.agent.ship.WriteRawEncoder;
import dev.loupe.agent.ship.kafka.KafkaSender;
import dev.loupe.agent.ship.kafka.KafkaSenderConfig;
import dev.loupe.agent.sink.LocalFileRetention;
import dev.loupe.agent.sink.LocalFileSink;
import dev.loupe.agent.sink.ProfileSink;
import dev.loupe.config.KafkaSettings;
import dev.loupe.config.LoupeConfig;
import dev.loupe.config.Options;
import dev.loupe.config.RemoteStore;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The one factory of the agent's sinks: local files, Kafka, Parca, in that order. A sink that cannot be
 * built closes the ones already built (their spools stay on disk) and fails the start with one message.
 */
final class Sinks {
    /** Why a sink could not be built; the message names the sink and its address. */
    static final class StartFailure extends Exception {
        StartFailure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private Sinks() {}

    /**
     * Why the config's relabel rules cannot be used, naming the file, the rule (from 0) and its field; empty when
     * they can. Config reads the rules' shape only: their meaning is checked here, before anything starts.
     */
    static Optional<String> relabelConfigError(LoupeConfig config) {
        try {
            Relabeling.parse(config.get(Options.RELABEL));
            return Optional.empty();
        } catch (RelabelConfigException e) {
            return Optional.of(config.source().map(Path::toString).orElse("configuration") + ": " + e.getMessage());
        }
    }

    static List<ProfileSink> open(LoupeConfig config) throws StartFailure {
        List<ProfileSink> sinks = new ArrayList<>();
        try {
            Relabeling relabeling;
            try {
                relabeling = Relabeling.parse(config.get(Options.RELABEL));
            } catch (RelabelConfigException e) {
                throw new StartFailure(relabelConfigError(config).orElseThrow(), e);
            }
            if (config.localFiles()) {
                try {
                    sinks.add(new LocalFileSink(config.outputDir(), new LocalFileRetention(config.outputDir(),
                            config.outputRetention(), config.outputMaxBytes(), java.time.InstantSource.system())));
                } catch (IOException e) {
                    throw new StartFailure("cannot create output directory " + config.outputDir() + ": " + e, e);
                }
            }
            if (config.kafka().isPresent()) {
                KafkaSettings k = config.kafka().get();
                try {
                    sinks.add(kafka(k, config.spoolDir(), config.spoolMaxBytes(), config.externalLabels(), relabeling));
                } catch (IOException | RuntimeException e) {
                    throw new StartFailure("kafka " + k.bootstrapServers() + ": " + e.getMessage(), e);
                }
            }
            if (config.remoteStore().isPresent()) {
                RemoteStore r = config.remoteStore().get();
                try {
                    sinks.add(parca(r, config.spoolDir(), config.spoolMaxBytes(), config.externalLabels(), relabeling));
                } catch (IOException | RuntimeException e) {
                    throw new StartFailure("remote store " + r.address() + ": " + e.getMessage(), e);
                }
            }
            return List.copyOf(sinks);
        } catch (StartFailure e) {
            closeAll(sinks);
            throw e;
        }
    }

    static void closeAll(List<ProfileSink> sinks) {
        for (ProfileSink s : sinks) {
            try {
                s.close();
            } catch (Exception e) {
                // best effort on a failed start: what a remote sink spooled stays for the next start
            }
        }
    }

    /** The Parca sink: WriteRaw over OkHttp, spooled under {@code spoolRoot/parca}. */
    static RemoteSink parca(RemoteStore store, Path spoolRoot, long spoolMaxBytes, Map<String, String> externalLabels,
                            Relabeling relabeling) throws IOException {
        ParcaClient client = ParcaClient.create(ParcaClientConfig.of(store));
        Spool spool;
        try {
            spool = Spool.open(spoolRoot, "parca", spoolMaxBytes);
        } catch (IOException | RuntimeException e) {
            client.close();
            throw e;
        }
        DeliveryLoop loop = DeliveryLoop.create(spool, (batch, timeout) -> client.writeRaw(batch.payload(), timeout),
                store.timeout());
        return new RemoteSink("parca", spool, loop, WriteRawEncoder.forHost(externalLabels, relabeling, store.batchMaxBytes()),
                client);
    }

    /**
     * The Kafka sink: one record per series (KafkaSender), spooled under {@code spoolRoot/kafka}. The
     * request size cap only groups series into spool batches here; records are per series.
     */
    static RemoteSink kafka(KafkaSettings kafka, Path spoolRoot, long spoolMaxBytes, Map<String, String> externalLabels,
                            Relabeling relabeling) throws IOException {
        KafkaSender sender = KafkaSender.create(KafkaSenderConfig.of(kafka.bootstrapServers(), agentVersion())
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
        DeliveryLoop loop = DeliveryLoop.create(spool, sender, Duration.ofSeconds(30));
        return new RemoteSink("kafka", spool, loop, WriteRawEncoder.forHost(externalLabels, relabeling, 16L << 20), sender);
    }

    static String agentVersion() {
        String v = Sinks.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }
}
