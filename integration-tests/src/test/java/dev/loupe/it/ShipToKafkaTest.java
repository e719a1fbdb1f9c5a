package dev.loupe.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.loupe.agent.ship.ParcaStandIn;
import dev.loupe.agent.ship.kafka.KafkaBroker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fleet path end to end: the packaged agent → a real KRaft broker (restarted mid-stream) → two `loupe relay`
 * processes in one consumer group → the Parca stand-in. Every interval the agent wrote locally reaches
 * the store exactly once.
 */
class ShipToKafkaTest {
    @TempDir
    Path dir;

    @Test
    void brokerRestartLosesAndDuplicatesNothingThroughTwoRelays() throws Exception {
        Path bin = Targets.build("callchain.c", dir, "kafkaed", "-fno-omit-frame-pointer");
        Process target = Targets.start(bin);
        Path out = dir.resolve("profiles");
        ParcaStandIn standIn = new ParcaStandIn().start();
        KafkaBroker broker = KafkaBroker.start(Map.of());
        List<Process> relays = new ArrayList<>();
        try {
            broker.createTopic("loupe.profiles", 4, Map.of());
            for (int i = 0; i < 2; i++) {
                relays.add(relay(broker.bootstrapServers(), standIn.address(), i));
            }
            try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(target.pid()), "--frequency", "99",
                    "--interval", "1s", "--output", out.toString(), "--http", "off",
                    "--kafka-bootstrap-servers", broker.bootstrapServers(), "--spool-dir", dir.resolve("spool").toString(),
                    "--external-label", "team=kafka")) {
                agent.awaitSampling(Duration.ofSeconds(60));
                await("3 intervals through Kafka", () -> ShippedIntervals.atStore(standIn, target.pid(), bin, "kafka").size() >= 3,
                        agent, relays);
                broker.stop();
                Thread.sleep(4_000);
                broker.start();
                int before = ShippedIntervals.atStore(standIn, target.pid(), bin, "kafka").size();
                await("intervals after the broker came back",
                        () -> ShippedIntervals.atStore(standIn, target.pid(), bin, "kafka").size() >= before + 4, agent, relays);
                agent.terminate();
                int exit = agent.awaitExit(Duration.ofSeconds(60));
                assertTrue(exit == 0 || exit == 143, "SIGTERM exit " + exit + "\n" + agent.log());
                TreeSet<Long> written = ShippedIntervals.inFiles(out);
                await("every written interval at the store",
                        () -> ShippedIntervals.atStore(standIn, target.pid(), bin, "kafka").containsAll(written), agent, relays);
                Thread.sleep(1_000); // a late duplicate would show up here
                assertEquals(written, ShippedIntervals.atStore(standIn, target.pid(), bin, "kafka"),
                        "every interval once, across the broker restart");
            }
            assertTrue(standIn.rejections().isEmpty(), standIn.rejections().toString());
        } finally {
            for (Process r : relays) {
                r.destroy();
                if (!r.waitFor(20, TimeUnit.SECONDS)) {
                    r.destroyForcibly();
                }
            }
            broker.close();
            standIn.close();
            Targets.kill(target);
        }
    }

    private Process relay(String bootstrap, String parca, int i) throws Exception {
        Path log = dir.resolve("relay-" + i + ".log");
        return new ProcessBuilder(AgentProcess.JAVA, "--enable-native-access=ALL-UNNAMED", "-Xmx128m", "-jar",
                AgentProcess.JAR.toString(), "relay", "--kafka-bootstrap-servers", bootstrap,
                "--remote-store-address", parca, "--remote-store-insecure",
                "--quarantine-dir", dir.resolve("quarantine-" + i).toString())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    private void await(String what, BooleanSupplier condition, AgentProcess agent, List<Process> relays) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                StringBuilder logs = new StringBuilder(agent.log());
                for (int i = 0; i < relays.size(); i++) {
                    logs.append("\n--- relay ").append(i).append(":\n").append(Files.readString(dir.resolve("relay-" + i + ".log")));
                }
                throw new AssertionError("timed out waiting for " + what + "\n" + logs);
            }
            Thread.sleep(100);
        }
    }
}
