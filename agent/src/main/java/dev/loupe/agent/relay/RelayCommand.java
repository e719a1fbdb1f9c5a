package dev.loupe.agent.relay;

import dev.loupe.agent.ship.ParcaClient;
import dev.loupe.agent.ship.ParcaClientConfig;
import dev.loupe.config.Command;
import dev.loupe.config.CommandLine;
import dev.loupe.config.ConfigException;
import dev.loupe.config.RelayConfig;

import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code loupe relay [options]}: a {@link KafkaRelay} from the command line, until SIGTERM. Exit codes:
 * 0 stopped, 1 runtime failure, 2 bad arguments.
 */
public final class RelayCommand {
    private static final System.Logger LOG = System.getLogger(RelayCommand.class.getName());

    private RelayCommand() {}

    static String usage() {
        return CommandLine.usage(Command.RELAY);
    }

    /** What the command line asks for. */
    record Parsed(boolean help, KafkaRelay.Config relay, ParcaClientConfig parca) {}

    /** The option table's relay flags over its --config file; @throws IllegalArgumentException with a message for the user */
    static Parsed parse(String[] args) {
        RelayConfig c;
        try {
            CommandLine.ParsedRelay parsed = CommandLine.parseRelay(args);
            if (parsed.help()) {
                return new Parsed(true, null, null);
            }
            c = parsed.config();
        } catch (ConfigException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        KafkaRelay.Config relay = KafkaRelay.Config.defaults(c.bootstrapServers(), c.quarantineDir()).withTopic(c.topic())
                .withGroupId(c.groupId()).withConsumerProperties(c.consumerProperties());
        return new Parsed(false, relay, ParcaClientConfig.of(c.remoteStore()));
    }

    /** Runs the relay until SIGTERM (or interrupt); returns the exit code. */
    public static int run(String[] args) {
        Parsed parsed;
        try {
            parsed = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("loupe relay: " + e.getMessage());
            System.err.println("Try 'loupe relay --help'.");
            return 2;
        }
        if (parsed.help()) {
            System.out.println(usage());
            return 0;
        }
        ParcaClient parca;
        try {
            parca = ParcaClient.create(parsed.parca());
        } catch (IOException | IllegalArgumentException e) {
            System.err.println("loupe relay: remote store: " + e.getMessage());
            return 2;
        }
        KafkaRelay relay;
        try {
            relay = KafkaRelay.create(parsed.relay(), parca::writeRaw);
        } catch (IOException e) {
            System.err.println("loupe relay: cannot create quarantine directory " + parsed.relay().quarantineDir() + ": " + e);
            parca.close();
            return 1;
        } catch (RuntimeException e) {
            System.err.println("loupe relay: cannot start the Kafka consumer: " + e.getMessage());
            parca.close();
            return 2;
        }
        CountDownLatch done = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            relay.stop();
            try {
                done.await(15, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "loupe-relay-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        KafkaRelay.Config c = parsed.relay();
        LOG.log(System.Logger.Level.INFO, "relay: " + c.bootstrapServers() + " topic " + c.topic() + " group "
                + c.groupId() + " -> Parca " + parsed.parca().host() + ":" + parsed.parca().port()
                + (parsed.parca().insecure() ? " (plaintext)" : " (TLS)"));
        try {
            relay.run();
            KafkaRelay.Stats s = relay.stats();
            // Not through the logger: on SIGTERM java.util.logging's own shutdown hook may already have removed its handlers.
            System.err.println("loupe relay: stopped; " + s.forwarded() + " records forwarded, "
                    + s.duplicatesDropped() + " duplicates dropped, " + s.quarantined() + " quarantined");
            return 0;
        } catch (RuntimeException e) {
            System.err.println("loupe relay: " + e);
            return 1;
        } finally {
            parca.close();
            done.countDown();
        }
    }
}
