package dev.loupe.agent.relay;

import dev.loupe.agent.ship.kafka.KafkaRecords;
import dev.loupe.agent.ship.kafka.KafkaSenderConfig;
import dev.loupe.agent.ship.ParcaClient;
import dev.loupe.agent.ship.ParcaClientConfig;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code loupe relay [options]}: a {@link KafkaRelay} from the command line, until SIGTERM. Exit codes:
 * 0 stopped, 1 runtime failure, 2 bad arguments.
 */
public final class RelayCommand {
    private static final System.Logger LOG = System.getLogger(RelayCommand.class.getName());
    static final Path DEFAULT_QUARANTINE_DIR = Path.of("/var/lib/loupe/relay-quarantine");

    private RelayCommand() {}

    static String usage() {
        return """
                Usage: loupe relay --kafka-bootstrap-servers HOST:PORT[,...] --remote-store-address HOST:PORT [options]

                Forwards the profiles Loupe agents write to Kafka to Parca, as a member of a consumer group:
                run more instances with the same group id to share the partitions. Offsets are committed only
                after Parca accepted the records.

                  --kafka-bootstrap-servers HOST:PORT[,...]   Kafka brokers (required)
                  --kafka-topic NAME                          topic to read (default loupe.profiles)
                  --kafka-group-id ID                         consumer group (default loupe-relay)
                  --kafka-property KEY=VALUE                  a Kafka consumer property, e.g. security.protocol=SASL_SSL
                                                              (repeatable)
                  --remote-store-address HOST:PORT            Parca's gRPC address (required)
                  --remote-store-insecure                     plaintext HTTP/2 instead of TLS
                  --remote-store-bearer-token-file FILE       send 'authorization: Bearer <token read from FILE>'
                  --quarantine-dir DIR                        where records Parca rejects for good are kept
                                                              (default /var/lib/loupe/relay-quarantine)
                  -h, --help                                  this text
                """;
    }

    /** What the command line asks for. */
    record Parsed(boolean help, KafkaRelay.Config relay, ParcaClientConfig parca) {}

    /** @throws IllegalArgumentException with a message for the user */
    static Parsed parse(String[] args) {
        String bootstrap = null;
        String topic = KafkaRecords.DEFAULT_TOPIC;
        String group = KafkaRelay.Config.DEFAULT_GROUP_ID;
        String address = null;
        boolean insecure = false;
        Path token = null;
        Path quarantine = DEFAULT_QUARANTINE_DIR;
        Map<String, String> props = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            String name = arg;
            String inline = null;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0) {
                name = arg.substring(0, eq);
                inline = arg.substring(eq + 1);
            }
            switch (name) {
                case "-h", "--help" -> {
                    return new Parsed(true, null, null);
                }
                case "--remote-store-insecure" -> {
                    if (inline == null || inline.equals("true")) {
                        insecure = true;
                    } else if (inline.equals("false")) {
                        insecure = false;
                    } else {
                        throw new IllegalArgumentException("--remote-store-insecure takes no value, or =true/=false; got \""
                                + inline + "\"");
                    }
                }
                case "--kafka-bootstrap-servers", "--kafka-topic", "--kafka-group-id", "--kafka-property",
                     "--remote-store-address", "--remote-store-bearer-token-file", "--quarantine-dir" -> {
                    String value;
                    if (inline != null) {
                        value = inline;
                    } else if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                        value = args[++i];
                    } else {
                        throw new IllegalArgumentException(name + " needs a value");
                    }
                    if (value.isBlank()) {
                        throw new IllegalArgumentException(name + " needs a non-empty value");
                    }
                    switch (name) {
                        case "--kafka-bootstrap-servers" -> bootstrap = value;
                        case "--kafka-topic" -> topic = value;
                        case "--kafka-group-id" -> group = value;
                        case "--remote-store-address" -> address = value;
                        case "--remote-store-bearer-token-file" -> token = Path.of(value);
                        case "--quarantine-dir" -> quarantine = Path.of(value);
                        default -> {
                            int e = value.indexOf('=');
                            if (e <= 0) {
                                throw new IllegalArgumentException("--kafka-property needs KEY=VALUE, got \"" + value + "\"");
                            }
                            props.put(value.substring(0, e).trim(), value.substring(e + 1));
                        }
                    }
                }
                default -> throw new IllegalArgumentException("unknown option \"" + arg + "\"");
            }
        }
        if (bootstrap == null) {
            throw new IllegalArgumentException("--kafka-bootstrap-servers is required");
        }
        if (address == null) {
            throw new IllegalArgumentException("--remote-store-address is required");
        }
        KafkaRelay.Config relay = KafkaRelay.Config.defaults(bootstrap, quarantine).withTopic(topic).withGroupId(group)
                .withConsumerProperties(props);
        new KafkaSenderConfig(bootstrap, topic, Map.of(), false, "-"); // the same checks of servers and topic name
        ParcaClientConfig.Builder parca = ParcaClientConfig.builder(address).insecure(insecure);
        if (token != null) {
            parca.bearerTokenFile(token);
        }
        return new Parsed(false, relay, parca.build());
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
            LOG.log(System.Logger.Level.INFO, "relay: stopped; " + s.forwarded() + " records forwarded, "
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
