package dev.loupe.agent.ship;

import dev.loupe.agent.relabel.Relabeling;
import dev.loupe.agent.sink.EncodedProfile;
import dev.loupe.agent.sink.ProfileBatch;
import dev.loupe.agent.sink.RemoteSinkStats;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.loupe.pprof.Label;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.ProfileBuilder;
import dev.loupe.pprof.parca.RawProfileSeries;
import dev.loupe.pprof.parca.WriteRawRequest;
import dev.loupe.pprof.proto.Profile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The agent's remote sink end to end: host-wide interval → per-process series → spool → Parca stand-in. */
class RemoteSinkTest {
    private static final long START = 1_763_000_000_000_000_000L;
    private static final int SELF = (int) ProcessHandle.current().pid();
    private static final int GONE = 4_000_000; // above pid_max's default: never a live process
    private static final String SELF_EXE = WriteRawEncoder.procExecutable(SELF).orElseThrow();

    @TempDir
    Path root;
    final List<AutoCloseable> cleanup = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : cleanup.reversed()) {
            c.close();
        }
    }

    /** Interval {@code i}: our own process with two stacks, a process that has exited, and idle kernel samples. */
    static ProfileBatch interval(long i) {
        ProfileBuilder b = new ProfileBuilder(10_101_010L, START + i * 10_000_000_000L);
        long exe = b.mapping(0x400000, 0x500000, 0, SELF_EXE, "feedface", true);
        long libc = b.mapping(0x7f0000000000L, 0x7f0000100000L, 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", "c0ffee", true);
        long main = b.location(exe, 0x401000, "main", null);
        long work = b.location(exe, 0x402000, "work", null);
        long read = b.location(libc, 0x7f0000001000L, "read", null);
        long idle = b.location(0, 0xffffffff81000000L, "default_idle", null);
        b.addSample(new long[] {work, main}, 5 + i, List.of(Label.num("pid", SELF), Label.str("comm", "java")));
        b.addSample(new long[] {read, main}, 2, List.of(Label.num("pid", SELF), Label.str("comm", "java")));
        b.addSample(new long[] {read}, 3, List.of(Label.num("pid", GONE), Label.str("comm", "gone")));
        b.addSample(new long[] {idle}, 1, List.of(Label.num("pid", 0), Label.str("comm", "swapper/0")));
        Profile p = b.build(START + (i + 1) * 10_000_000_000L);
        TreeMap<String, String> labels = new TreeMap<>(Map.of("__name__", "parca_agent_cpu", "node", "test-node"));
        EncodedProfile e = new EncodedProfile("cpu", labels, p.getTimeNanos(), p.getDurationNanos(), PprofFiles.gzip(p),
                p.getSampleCount(), p);
        return new ProfileBatch(i, p.getTimeNanos(), p.getDurationNanos(), List.of(e));
    }

    private RemoteSink sink(ParcaStandIn standIn, long maxRequestBytes) throws Exception {
        return sink(standIn, new WriteRawEncoder(Map.of("region", "eu-west-1"), maxRequestBytes, WriteRawEncoder::procExecutable));
    }

    private RemoteSink sink(ParcaStandIn standIn, WriteRawEncoder encoder) throws Exception {
        ParcaClient client = ParcaClient.create(ParcaClientConfig.builder(standIn.address()).insecure(true)
                .timeout(Duration.ofMillis(800)).build());
        Spool spool = Spool.open(root, "parca", 64 << 20);
        DeliveryLoop loop = new DeliveryLoop(spool, (batch, timeout) -> client.writeRaw(batch.payload(), timeout),
                new DeliveryLoop.Backoff(Duration.ofMillis(20), Duration.ofMillis(200)), Duration.ofMillis(800),
                System::nanoTime, DeliveryLoop.Sleeper.SYSTEM, RandomGenerator.getDefault());
        return new RemoteSink("parca", spool, loop, encoder, client);
    }

    private static Map<String, String> labels(RawProfileSeries s) {
        Map<String, String> m = new TreeMap<>();
        s.getLabels().getLabelsList().forEach(l -> m.put(l.getName(), l.getValue()));
        return m;
    }

    private static List<Map<String, String>> series(ParcaStandIn standIn) {
        List<Map<String, String>> out = new ArrayList<>();
        for (var r : standIn.accepted()) {
            for (RawProfileSeries s : r.request().getSeriesList()) {
                out.add(labels(s));
            }
        }
        return out;
    }

    @Test
    void oneSeriesPerProcessWithParcasLabels() throws Exception {
        ParcaStandIn standIn = new ParcaStandIn().start();
        cleanup.add(standIn);
        RemoteSink sink = sink(standIn, 16 << 20);
        sink.write(interval(1));
        await("one request", () -> standIn.accepted().size() == 1);
        sink.close(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        assertTrue(standIn.rejections().isEmpty(), standIn.rejections().toString());

        WriteRawRequest r = standIn.accepted().get(0).request();
        assertFalse(r.getNormalized(), "plain pprof, not Parca's normalized form");
        Map<String, Map<String, String>> byPid = new HashMap<>();
        Map<String, Profile> profiles = new HashMap<>();
        for (RawProfileSeries s : r.getSeriesList()) {
            Map<String, String> l = labels(s);
            byPid.put(l.get("pid"), l);
            profiles.put(l.get("pid"), PprofFiles.parse(s.getSamples(0).getRawProfile().toByteArray()));
        }
        assertEquals(Map.of("__name__", "parca_agent_cpu", "node", "test-node", "pid", Integer.toString(SELF), "comm", "java",
                "executable", SELF_EXE, "build_id", "feedface", "region", "eu-west-1"), byPid.get(Integer.toString(SELF)));
        assertEquals(Map.of("__name__", "parca_agent_cpu", "node", "test-node", "pid", Integer.toString(GONE), "comm", "gone",
                "region", "eu-west-1"), byPid.get(Integer.toString(GONE)), "an exited process has no executable label");
        assertEquals("swapper/0", byPid.get("0").get("comm"));

        Profile self = profiles.get(Integer.toString(SELF));
        assertEquals(2, self.getSampleCount());
        assertEquals(List.of(6L, 2L), self.getSampleList().stream().map(x -> x.getValue(0)).toList()); // 5 + i, 2
        assertEquals(List.of(SELF_EXE, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
                self.getMappingList().stream().map(m -> self.getStringTable((int) m.getFilename())).toList());
        Profile gone = profiles.get(Integer.toString(GONE));
        assertEquals(1, gone.getSampleCount());
        assertEquals(1, gone.getMappingCount(), "only the mapping its stack uses");

        RemoteSinkStats st = sink.remoteStats().orElseThrow();
        assertEquals(1, st.delivered());
        assertEquals(0, st.spooledBatches());
    }

    @Test
    void splitsRequestsUnderTheSizeLimitAndKeepsEverySeries() throws Exception {
        ParcaStandIn standIn = new ParcaStandIn().start();
        cleanup.add(standIn);
        WriteRawEncoder enc = new WriteRawEncoder(Map.of(), 1, WriteRawEncoder::procExecutable); // every series alone
        List<WriteRawEncoder.Series> s = enc.series(interval(1).profiles().get(0).profile(), Map.of("__name__", "parca_agent_cpu"));
        assertEquals(3, s.size());
        assertEquals(3, enc.requests(s).size());
        long oneSeries = s.get(0).message().getSerializedSize() + s.get(1).message().getSerializedSize() + 40;
        assertEquals(2, new WriteRawEncoder(Map.of(), oneSeries, WriteRawEncoder::procExecutable).requests(s).size());
        assertEquals(1, new WriteRawEncoder(Map.of(), 16 << 20, WriteRawEncoder::procExecutable).requests(s).size());

        RemoteSink sink = sink(standIn, 1);
        sink.write(interval(1));
        sink.write(interval(2));
        await("six one-series requests", () -> standIn.accepted().size() == 6);
        sink.close(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        assertEquals(6, series(standIn).size());
        assertTrue(standIn.rejections().isEmpty(), standIn.rejections().toString());
    }

    /** Store away at stop: the final attempt fails, the batches stay spooled, and the next start sends them in order. */
    @Test
    void whatIsLeftAtStopIsSentAfterRestartInOrder() throws Exception {
        ParcaStandIn standIn = new ParcaStandIn().start();
        cleanup.add(standIn);
        standIn.stop();
        RemoteSink first = sink(standIn, 16 << 20);
        for (long i = 1; i <= 4; i++) {
            first.write(interval(i));
        }
        long t0 = System.nanoTime();
        first.close(t0 + TimeUnit.SECONDS.toNanos(2));
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(10), "close keeps to its deadline");
        assertTrue(Files.list(root.resolve("parca")).anyMatch(p -> p.toString().endsWith(".batch")), "batches stay on disk");

        standIn.start();
        RemoteSink second = sink(standIn, 16 << 20);
        await("the 4 spooled intervals", () -> standIn.accepted().size() == 4);
        second.close(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        List<Long> starts = standIn.accepted().stream().map(r -> {
            Profile p = PprofFiles.parse(r.request().getSeries(0).getSamples(0).getRawProfile().toByteArray());
            return (p.getTimeNanos() - START) / 10_000_000_000L;
        }).toList();
        assertEquals(List.of(1L, 2L, 3L, 4L), starts, "every interval once, in order");
    }

    /** Latency profiles are per function, not per process: one series under their own name, no pid label. */
    @Test
    void latencyProfilesAreOneSeriesOfTheirOwn() throws Exception {
        ParcaStandIn standIn = new ParcaStandIn().start();
        cleanup.add(standIn);
        RemoteSink sink = sink(standIn, 16 << 20);
        ProfileBuilder b = new ProfileBuilder(1, START);
        long f = b.location(0, 0x1000, "main.work", null);
        b.addSample(new long[] {f}, 7, List.of(Label.str("function", "main.work"), Label.num("le_us", 4096)));
        Profile p = b.build(START + 10_000_000_000L);
        TreeMap<String, String> labels = new TreeMap<>(Map.of("__name__", "loupe_function_latency", "node", "n"));
        sink.write(new ProfileBatch(1, START, 10_000_000_000L, List.of(new EncodedProfile("latency", labels, START,
                10_000_000_000L, PprofFiles.gzip(p), 1, p))));
        await("the latency series", () -> standIn.accepted().size() == 1);
        sink.close(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        assertEquals(List.of(Map.of("__name__", "loupe_function_latency", "node", "n", "region", "eu-west-1")), series(standIn));
    }

    /** Off-CPU profiles are per process as CPU profiles are: a series per pid, under parca_agent_offcpu. */
    @Test
    void offCpuProfilesAreOneSeriesPerProcess() throws Exception {
        ParcaStandIn standIn = new ParcaStandIn().start();
        cleanup.add(standIn);
        RemoteSink sink = sink(standIn, 16 << 20);
        ProfileBuilder b = new ProfileBuilder(1, START);
        long f = b.location(0, 0xffffffff81001000L, "__schedule", null);
        b.addSample(new long[] {f}, 7, List.of(Label.num("pid", SELF), Label.str("comm", "java"), Label.str("state", "sleeping")));
        b.addSample(new long[] {f}, 3, List.of(Label.num("pid", GONE), Label.str("comm", "gone"), Label.str("state", "blocked")));
        Profile p = b.build(START + 10_000_000_000L);
        TreeMap<String, String> labels = new TreeMap<>(Map.of("__name__", "parca_agent_offcpu", "node", "n"));
        sink.write(new ProfileBatch(1, START, 10_000_000_000L, List.of(new EncodedProfile("offcpu", labels, START,
                10_000_000_000L, PprofFiles.gzip(p), 2, p))));
        await("the off-CPU series", () -> standIn.accepted().size() == 1);
        sink.close(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        assertTrue(standIn.rejections().isEmpty(), standIn.rejections().toString());
        List<Map<String, String>> series = series(standIn);
        assertEquals(2, series.size(), series.toString());
        assertEquals(Map.of(Integer.toString(SELF), "java", Integer.toString(GONE), "gone"),
                series.stream().collect(java.util.stream.Collectors.toMap(l -> l.get("pid"), l -> l.get("comm"))));
        assertTrue(series.stream().allMatch(l -> l.get("__name__").equals("parca_agent_offcpu")), series.toString());
    }

    /** A series the relabel rules drop is neither spooled nor sent, and the sink's stats count it. */
    @Test
    void seriesTheRelabelRulesDropAreCountedAndNotSent() throws Exception {
        ParcaStandIn standIn = new ParcaStandIn().start();
        cleanup.add(standIn);
        Relabeling rules = Relabeling.parse(List.of(Map.of("action", "drop", "source_labels", List.of("comm"),
                "regex", "gone|swapper/.*")));
        RemoteSink sink = sink(standIn, new WriteRawEncoder(Map.of(), rules, 16 << 20, WriteRawEncoder::procExecutable));
        sink.write(interval(1));
        sink.write(interval(2));
        await("two requests", () -> standIn.accepted().size() == 2);
        sink.close(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        assertEquals(List.of(Integer.toString(SELF), Integer.toString(SELF)),
                series(standIn).stream().map(l -> l.get("pid")).toList());
        assertEquals(4, sink.remoteStats().orElseThrow().seriesDroppedByRelabel(), "2 of 3 series in each of 2 intervals");
    }

    @Test
    void idleIntervalsAreNotSent() throws Exception {
        ParcaStandIn standIn = new ParcaStandIn().start();
        cleanup.add(standIn);
        RemoteSink sink = sink(standIn, 16 << 20);
        Profile empty = new ProfileBuilder(10_101_010L, START).build(START + 10_000_000_000L);
        TreeMap<String, String> labels = new TreeMap<>(Map.of("__name__", "parca_agent_cpu"));
        sink.write(new ProfileBatch(1, START, 10_000_000_000L, List.of(new EncodedProfile("cpu", labels, START,
                10_000_000_000L, PprofFiles.gzip(empty), 0, empty))));
        sink.close(System.nanoTime() + TimeUnit.SECONDS.toNanos(2));
        assertEquals(0, standIn.accepted().size());
        assertEquals(0, sink.remoteStats().orElseThrow().delivered());
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(10);
        }
    }
}
