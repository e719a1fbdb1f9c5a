package dev.loupe.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.loupe.agent.ship.ParcaStandIn;
import dev.loupe.agent.ship.kafka.KafkaBroker;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fleet path end to end: the packaged agent → a real KRaft broker (restarted mid-stream) → two `loupe relay`
 * processes in one consumer group → the Parca stand-in. Every interval the agent wrote locally reaches
 * the store exactly once. The two profiled processes are picked so that their series land in partitions of
 * different relays: both relays forward, and both are still running at the end.
 */
class ShipToKafkaTest {
    private static final String TOPIC = "loupe.profiles";
    private static final String GROUP = "loupe-relay";
    private static final int PARTITIONS = 4;

    @TempDir
    Path dir;

    @Test
    void brokerRestartLosesAndDuplicatesNothingThroughTwoRelays() throws Exception {
        Path bin = Targets.build("callchain.c", dir, "kafkaed", "-fno-omit-frame-pointer");
        Path out = dir.resolve("profiles");
        ParcaStandIn standIn = new ParcaStandIn().start();
        KafkaBroker broker = KafkaBroker.start(Map.of());
        List<Process> relays = new ArrayList<>();
        Process target = null;
        Process other = null;
        try {
            broker.createTopic(TOPIC, PARTITIONS, Map.of());
            for (int i = 0; i < 2; i++) {
                relays.add(relay(broker.bootstrapServers(), standIn.address(), i));
            }
            Map<String, Set<Integer>> assignment = awaitBalancedGroup(broker, relays);
            target = Targets.start(bin);
            String first = ownerOf(assignment, partitionOf(target.pid()));
            // A second process whose series goes to the other relay's partitions (pids are the kernel's to pick).
            for (int attempt = 0; attempt < 32 && other == null; attempt++) {
                Process candidate = Targets.start(bin);
                if (ownerOf(assignment, partitionOf(candidate.pid())).equals(first)) {
                    Targets.kill(candidate);
                } else {
                    other = candidate;
                }
            }
            assertNotNull(other, "32 processes in a row hashed to the partitions of " + first + " " + assignment);
            Process second = other;
            Process main = target;
            try (AgentProcess agent = AgentProcess.start(dir, "--pid", target.pid() + "," + second.pid(), "--frequency", "99",
                    "--interval", "1s", "--output", out.toString(), "--http", "off",
                    "--kafka-bootstrap-servers", broker.bootstrapServers(), "--spool-dir", dir.resolve("spool").toString(),
                    "--external-label", "team=kafka")) {
                agent.awaitSampling(Duration.ofSeconds(60));
                await("3 intervals through Kafka", () -> ShippedIntervals.atStore(standIn, main.pid(), bin, "kafka").size() >= 3
                        && !ShippedIntervals.atStore(standIn, second.pid(), bin, "kafka").isEmpty(), agent, relays);
                broker.stop();
                Thread.sleep(4_000);
                broker.start();
                int before = ShippedIntervals.atStore(standIn, main.pid(), bin, "kafka").size();
                await("intervals after the broker came back",
                        () -> ShippedIntervals.atStore(standIn, main.pid(), bin, "kafka").size() >= before + 4, agent, relays);
                agent.terminate();
                int exit = agent.awaitExit(Duration.ofSeconds(60));
                assertTrue(exit == 0 || exit == 143, "SIGTERM exit " + exit + "\n" + agent.log());
                TreeSet<Long> written = ShippedIntervals.inFiles(out, main.pid());
                TreeSet<Long> writtenOther = ShippedIntervals.inFiles(out, second.pid());
                await("every written interval at the store",
                        () -> ShippedIntervals.atStore(standIn, main.pid(), bin, "kafka").containsAll(written)
                                && ShippedIntervals.atStore(standIn, second.pid(), bin, "kafka").containsAll(writtenOther),
                        agent, relays);
                // A late duplicate must be among the accepted when they are compared: once the group has committed
                // every record (a relay commits only what Parca accepted, so neither has anything left to send), the
                // stand-in's stop waits for the calls it has begun.
                await("the relays' group committed the whole topic", () -> committedLag(broker) == 0, agent, relays);
                standIn.stop();
                assertEquals(written, ShippedIntervals.atStore(standIn, main.pid(), bin, "kafka"),
                        "every interval once, across the broker restart");
                assertEquals(writtenOther, ShippedIntervals.atStore(standIn, second.pid(), bin, "kafka"),
                        "every interval of the second process once");
            }
            assertTrue(standIn.rejections().isEmpty(), standIn.rejections().toString());
            for (int i = 0; i < relays.size(); i++) {
                assertTrue(relays.get(i).isAlive(), "relay " + i + " ended early:\n" + relayLog(i));
            }
            // The same two members own the same partitions as at the start (no rebalance handed work over),
            // and each committed offsets past records in its own partitions: offsets are committed only
            // after Parca accepted, so each relay forwarded records.
            assertEquals(assignment, assignment(broker), "the group's assignment at the end");
            Map<Integer, Long> committed = committedOffsets(broker);
            for (var member : assignment.entrySet()) {
                long records = member.getValue().stream().mapToLong(p -> committed.getOrDefault(p, 0L)).sum();
                assertNotEquals(0L, records, member.getKey() + " committed nothing in " + member.getValue()
                        + "; committed offsets " + committed);
            }
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
            Targets.kill(other);
        }
    }

    /** The partition the agent's KafkaSender writes a process's CPU series to: Kafka's default for its key. */
    private static int partitionOf(long pid) throws Exception {
        // The agent's node label is the kernel's host name (HostName); the key is node/pid/profile type.
        String node = Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
        byte[] key = (node + "/" + pid + "/cpu").getBytes(StandardCharsets.UTF_8);
        return Utils.toPositive(Utils.murmur2(key)) % PARTITIONS;
    }

    private static String ownerOf(Map<String, Set<Integer>> assignment, int partition) {
        return assignment.entrySet().stream().filter(e -> e.getValue().contains(partition)).findFirst()
                .orElseThrow(() -> new AssertionError("no member owns partition " + partition + ": " + assignment))
                .getKey();
    }

    /** Member id → its partitions of the topic. */
    private static Map<String, Set<Integer>> assignment(KafkaBroker broker) throws Exception {
        try (var admin = broker.admin()) {
            var group = admin.describeConsumerGroups(List.of(GROUP)).describedGroups().get(GROUP).get(10, TimeUnit.SECONDS);
            Map<String, Set<Integer>> out = new TreeMap<>();
            for (MemberDescription m : group.members()) {
                out.put(m.consumerId(), m.assignment().topicPartitions().stream().filter(tp -> tp.topic().equals(TOPIC))
                        .map(TopicPartition::partition).collect(Collectors.toCollection(TreeSet::new)));
            }
            return out;
        }
    }

    /** Partition → the group's committed offset. */
    private static Map<Integer, Long> committedOffsets(KafkaBroker broker) throws Exception {
        try (var admin = broker.admin()) {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(GROUP)
                    .partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
            Map<Integer, Long> out = new TreeMap<>();
            offsets.forEach((tp, o) -> {
                if (tp.topic().equals(TOPIC) && o != null) {
                    out.put(tp.partition(), o.offset());
                }
            });
            return out;
        }
    }

    /** Records between the group's committed offsets and the end of the topic; -1 if the broker cannot say. */
    private static long committedLag(KafkaBroker broker) {
        try (var admin = broker.admin()) {
            Map<Integer, Long> committed = committedOffsets(broker);
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                latest.put(new TopicPartition(TOPIC, p), OffsetSpec.latest());
            }
            long lag = 0;
            for (var e : admin.listOffsets(latest).all().get(10, TimeUnit.SECONDS).entrySet()) {
                lag += e.getValue().offset() - committed.getOrDefault(e.getKey().partition(), 0L);
            }
            return lag;
        } catch (Exception e) {
            return -1;
        }
    }

    /** Waits until both relays are members, with half the partitions each. */
    private Map<String, Set<Integer>> awaitBalancedGroup(KafkaBroker broker, List<Process> relays) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (true) {
            Map<String, Set<Integer>> a;
            try {
                a = assignment(broker);
            } catch (Exception e) {
                a = Map.of(); // the group does not exist yet
            }
            if (a.size() == relays.size() && a.values().stream().allMatch(p -> p.size() == PARTITIONS / relays.size())) {
                return a;
            }
            if (System.nanoTime() > deadline) {
                StringBuilder logs = new StringBuilder();
                for (int i = 0; i < relays.size(); i++) {
                    logs.append("\n--- relay ").append(i).append(":\n").append(relayLog(i));
                }
                throw new AssertionError("the relays did not share the partitions: " + a + logs);
            }
            Thread.sleep(200);
        }
    }

    private String relayLog(int i) throws java.io.IOException {
        return Files.readString(dir.resolve("relay-" + i + ".log"));
    }

    private Process relay(String bootstrap, String parca, int i) throws Exception {
        Path log = dir.resolve("relay-" + i + ".log");
        return new ProcessBuilder(AgentProcess.JAVA, "@" + AgentProcess.RELAY_JVMOPTS, "-jar",
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
                    logs.append("\n--- relay ").append(i).append(":\n").append(relayLog(i));
                }
                throw new AssertionError("timed out waiting for " + what + "\n" + logs);
            }
            Thread.sleep(100);
        }
    }
}
