package dev.loupe.it;

import dev.loupe.agent.ship.ParcaStandIn;
import dev.loupe.agent.ship.kafka.KafkaBroker;
import dev.loupe.agent.ship.kafka.KafkaRecords;
import dev.loupe.agent.ship.kafka.TopicReader;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.parca.RawProfileSeries;
import dev.loupe.pprof.parca.WriteRawRequest;
import dev.loupe.pprof.proto.Profile;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 30: off-CPU profiles reach Parca (the gRPC stand-in, Parca's rules on every request) as
 * {@code parca_agent_offcpu} with the sample types {@code events/count} and {@code off_cpu/nanoseconds}, one series per
 * process with the CPU series' labels, and reach Kafka (a real KRaft broker) as records of profile type
 * {@code offcpu}: every off-CPU interval the agent wrote locally, once, in both.
 */
class OffCpuShippingTest {
    private static final String TOPIC = "loupe.profiles";

    @TempDir
    Path dir;

    @Test
    void offCpuProfilesReachParcaAndKafka() throws Exception {
        Path bin = Targets.build("offcpu_split.c", dir, "offcpu_split", "-fomit-frame-pointer", "-pthread");
        Path out = dir.resolve("profiles");
        Process target = Targets.startReady(bin);
        ParcaStandIn standIn = new ParcaStandIn().start();
        KafkaBroker broker = KafkaBroker.start(Map.of());
        try {
            broker.createTopic(TOPIC, 1, Map.of());
            try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(target.pid()), "--off-cpu-threshold", "1",
                    "--interval", "2s", "--output", out.toString(), "--http", "off",
                    "--remote-store-address", standIn.address(), "--remote-store-insecure",
                    "--kafka-bootstrap-servers", broker.bootstrapServers(), "--spool-dir", dir.resolve("spool").toString(),
                    "--external-label", "team=offcpu")) {
                agent.awaitSampling(Duration.ofSeconds(90));
                ReloadTest.await("three off-CPU series at the Parca stand-in",
                        () -> atParca(standIn, target.pid(), bin).size() >= 3, agent);
                agent.terminate();
                int exit = agent.awaitExit(Duration.ofSeconds(60));
                assertTrue(exit == 0 || exit == 143, "SIGTERM exit " + exit + "\n" + agent.log());
            }
            TreeSet<Long> written = new TreeSet<>();
            int nonEmpty = 0;
            for (Path f : Profiles.files(out)) {
                Profile p = Profiles.read(f);
                if (p.getSampleCount() == 0) {
                    continue;
                }
                nonEmpty++; // one series per file: --pid keeps one process
                if (f.getFileName().toString().startsWith("offcpu-")) {
                    written.add(p.getTimeNanos());
                }
            }
            assertTrue(written.size() >= 3, "off-CPU intervals written: " + written);
            assertEquals(written, atParca(standIn, target.pid(), bin), "every off-CPU interval at Parca, once");
            assertTrue(standIn.rejections().isEmpty(), standIn.rejections().toString());
            Map<String, Long> byState = new TreeMap<>();
            for (var r : standIn.accepted()) {
                for (RawProfileSeries s : r.request().getSeriesList()) {
                    if (label(s, "__name__").equals("parca_agent_offcpu")) {
                        Profile p = PprofFiles.parse(s.getSamples(0).getRawProfile().toByteArray());
                        List<Profiles.Stack> stacks = Profiles.stacks(p);
                        for (int i = 0; i < stacks.size(); i++) {
                            byState.merge(stacks.get(i).labels().getOrDefault("state", "?"), p.getSample(i).getValue(1), Long::sum);
                        }
                    }
                }
            }
            // The waiter's sleeps and the spinners' run-queue waits, by the state label the store keeps.
            assertTrue(byState.getOrDefault("sleeping", 0L) > 0 && byState.getOrDefault("runnable", 0L) > 0, byState.toString());

            List<ConsumerRecord<byte[], byte[]>> records = TopicReader.read(broker.bootstrapServers(), TOPIC, nonEmpty,
                    Duration.ofSeconds(60));
            TreeSet<Long> inKafka = new TreeSet<>();
            for (ConsumerRecord<byte[], byte[]> r : records) {
                if (!KafkaRecords.header(r.headers(), KafkaRecords.HEADER_PROFILE_TYPE).orElseThrow().equals("offcpu")) {
                    continue;
                }
                WriteRawRequest request = WriteRawRequest.parseFrom(r.value());
                assertEquals(1, request.getSeriesCount());
                Profile p = checked(request.getSeries(0), target.pid(), bin);
                assertEquals(Long.toString(p.getTimeNanos()), KafkaRecords.header(r.headers(), KafkaRecords.HEADER_START_NANOS)
                        .orElseThrow());
                assertTrue(inKafka.add(p.getTimeNanos()), "interval " + p.getTimeNanos() + " twice in Kafka");
            }
            Map<String, Long> byType = new TreeMap<>();
            records.forEach(r -> byType.merge(KafkaRecords.header(r.headers(), KafkaRecords.HEADER_PROFILE_TYPE).orElse("?"), 1L,
                    Long::sum));
            System.out.printf("off-CPU shipping: %d off-CPU intervals written, %d at Parca, %d in Kafka; Kafka records by type %s, "
                    + "%d non-empty local files%n", written.size(), atParca(standIn, target.pid(), bin).size(), inKafka.size(), byType,
                    nonEmpty);
            assertEquals(written, inKafka, "every off-CPU interval in Kafka, once (" + records.size() + " records)");
        } finally {
            broker.close();
            standIn.close();
            Targets.kill(target);
        }
    }

    /** Start times of the target's off-CPU series the stand-in accepted; fails on a duplicate or a wrong series. */
    private static TreeSet<Long> atParca(ParcaStandIn standIn, long pid, Path bin) {
        TreeSet<Long> t = new TreeSet<>();
        for (var r : standIn.accepted()) {
            for (RawProfileSeries s : r.request().getSeriesList()) {
                if (!label(s, "__name__").equals("parca_agent_offcpu")) {
                    continue;
                }
                Profile p = checked(s, pid, bin);
                if (!t.add(p.getTimeNanos())) {
                    throw new AssertionError("off-CPU interval " + p.getTimeNanos() + " reached the store twice");
                }
            }
        }
        return t;
    }

    /** An off-CPU series: its labels, sample types and the target's waits in it; returns its profile. */
    private static Profile checked(RawProfileSeries s, long pid, Path bin) {
        assertEquals("parca_agent_offcpu", label(s, "__name__"));
        assertEquals(Long.toString(pid), label(s, "pid"), "a series per process, the only one kept");
        assertEquals(bin.getFileName().toString(), label(s, "comm"));
        assertEquals(bin.toString(), label(s, "executable"));
        assertEquals("offcpu", label(s, "team"));
        Profile p = PprofFiles.parse(s.getSamples(0).getRawProfile().toByteArray());
        assertEquals(List.of(), dev.loupe.pprof.ParcaRules.violations(p));
        List<String> types = new ArrayList<>();
        p.getSampleTypeList().forEach(v -> types.add(p.getStringTable((int) v.getType()) + "/" + p.getStringTable((int) v.getUnit())));
        assertEquals(List.of("events/count", "off_cpu/nanoseconds"), types);
        assertEquals("off_cpu/nanoseconds", p.getStringTable((int) p.getPeriodType().getType()) + "/"
                + p.getStringTable((int) p.getPeriodType().getUnit()));
        return p;
    }

    private static String label(RawProfileSeries s, String name) {
        return s.getLabels().getLabelsList().stream().filter(l -> l.getName().equals(name)).map(l -> l.getValue())
                .findFirst().orElse("");
    }
}
