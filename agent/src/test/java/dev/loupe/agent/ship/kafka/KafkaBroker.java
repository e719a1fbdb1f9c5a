package dev.loupe.agent.ship.kafka;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.utils.Exit;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real Kafka node in this JVM: KRaft in combined mode (broker and controller, one voter), from Maven
 * Central's broker jars, formatted into a temporary log directory. {@link #stop()} and {@link #start()}
 * again keep the same ports and log directory, so clients see the broker go away and come back with its
 * data, as after a restart.
 */
public final class KafkaBroker implements AutoCloseable {
    static {
        KafkaLogging.quiet();
        // The broker calls Exit on fatal errors: fail the test, do not end the JVM.
        Exit.setExitProcedure((status, message) -> {
            throw new IllegalStateException("Kafka broker asked to exit(" + status + "): " + message);
        });
        Exit.setHaltProcedure((status, message) -> {
            throw new IllegalStateException("Kafka broker asked to halt(" + status + "): " + message);
        });
    }

    private final Path logDir;
    private final boolean ownsLogDir;
    private final int port;
    private final int controllerPort;
    private final Map<String, String> overrides;
    private KafkaRaftServer server;

    private KafkaBroker(Path logDir, boolean ownsLogDir, Map<String, String> overrides) throws IOException {
        this.logDir = logDir;
        this.ownsLogDir = ownsLogDir;
        this.port = freePort();
        this.controllerPort = freePort();
        this.overrides = Map.copyOf(overrides);
        Formatter formatter = new Formatter()
                .setPrintStream(new PrintStream(OutputStream.nullOutputStream()))
                .setNodeId(1)
                .setClusterId(Uuid.randomUuid().toString())
                .setControllerListenerName("CONTROLLER")
                .setMetadataLogDirectory(logDir.toString())
                .addDirectory(logDir.toString());
        try {
            formatter.run();
        } catch (Exception e) {
            throw new IOException("cannot format the KRaft log directory " + logDir + ": " + e, e);
        }
    }

    /** A formatted, started node with a fresh temporary log directory. */
    public static KafkaBroker start(Map<String, String> overrides) throws IOException {
        Path dir = Files.createTempDirectory("loupe-kafka-");
        return new KafkaBroker(dir, true, overrides).start();
    }

    public synchronized KafkaBroker start() {
        if (server != null) {
            return this;
        }
        Properties p = new Properties();
        p.put("process.roles", "broker,controller");
        p.put("node.id", "1");
        p.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        p.put("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
        p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
        p.put("controller.listener.names", "CONTROLLER");
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.put("log.dirs", logDir.toString());
        p.put("num.partitions", "1");
        // One node: every internal topic has one replica; few partitions make start-up quick.
        p.put("offsets.topic.replication.factor", "1");
        p.put("offsets.topic.num.partitions", "1");
        p.put("transaction.state.log.replication.factor", "1");
        p.put("transaction.state.log.min.isr", "1");
        p.put("transaction.state.log.num.partitions", "1");
        p.put("share.coordinator.state.topic.replication.factor", "1");
        p.put("share.coordinator.state.topic.min.isr", "1");
        p.put("group.initial.rebalance.delay.ms", "0");
        p.put("log.flush.interval.messages", "1");
        p.put("num.network.threads", "2");
        p.put("num.io.threads", "2");
        p.put("background.threads", "2");
        p.put("log.cleaner.enable", "false");
        p.putAll(overrides);
        server = new KafkaRaftServer(KafkaConfig.fromProps(p, false), Time.SYSTEM);
        server.startup();
        awaitListening();
        return this;
    }

    /** A clean broker shutdown; the data and the ports stay for {@link #start()}. */
    public synchronized void stop() {
        if (server != null) {
            server.shutdown();
            server.awaitShutdown();
            server = null;
        }
    }

    public synchronized boolean running() {
        return server != null;
    }

    public String bootstrapServers() {
        return "127.0.0.1:" + port;
    }

    /** Creates a topic (one replica) and waits until it can be used. */
    public void createTopic(String name, int partitions, Map<String, String> configs) throws Exception {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs))).all()
                    .get(30, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (true) {
                try {
                    var d = admin.describeTopics(List.of(name)).allTopicNames().get(30, TimeUnit.SECONDS).get(name);
                    if (d.partitions().size() == partitions && d.partitions().stream().allMatch(x -> x.leader() != null && !x.leader().isEmpty())) {
                        return;
                    }
                } catch (ExecutionException e) {
                    // The controller has accepted the topic but this broker's metadata may not have it yet.
                    if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                        throw e;
                    }
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("topic " + name + " has no leaders after 30 s");
                }
                Thread.sleep(50);
            }
        }
    }

    public Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000",
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000"));
    }

    private void awaitListening() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 500);
                return;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("broker not listening on " + port + " after 60 s", e);
                }
                try {
                    Thread.sleep(20);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(ie);
                }
            }
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() throws IOException {
        stop();
        if (ownsLogDir) {
            try (Stream<Path> walk = Files.walk(logDir)) {
                for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }
}
