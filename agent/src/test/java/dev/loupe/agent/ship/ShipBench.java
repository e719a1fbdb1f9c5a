package dev.loupe.agent.ship;

import dev.loupe.agent.sink.EncodedProfile;
import dev.loupe.agent.sink.ProfileBatch;
import dev.loupe.pprof.Label;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.ProfileBuilder;
import dev.loupe.pprof.parca.WriteRawRequest;
import dev.loupe.pprof.proto.Profile;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

/**
 * {@code ./loupe bench ship}: what shipping to Parca costs and sustains on this machine, with a host-wide
 * interval shaped like a busy host's (many processes, deep stacks, shared libraries).
 *
 * <ul>
 *   <li>encode: CPU per interval to split by process, gzip each and build WriteRaw requests, against the
 *       baseline in the same run: gzipping the host-wide profile once (what the local file sink costs);</li>
 *   <li>sustained: intervals pushed through RemoteSink → spool → ParcaClient → grpc-java stand-in as fast
 *       as they go: series/s, bytes/s, requests/s, request size distribution;</li>
 *   <li>backlog: a 10-minute outage at a 10 s interval (60 intervals spooled), then the store comes back:
 *       time until the spool is empty;</li>
 *   <li>Kafka: the same intervals through RemoteSink → spool → KafkaSender → a KRaft broker in this JVM,
 *       plain idempotent and transactional, then {@code loupe relay}'s KafkaRelay reading them all back to
 *       the Parca stand-in (records/s). The broker shares the JVM and the 2 CPUs, so these are lower bounds.</li>
 * </ul>
 * Arguments: [processes] [stacksPerProcess] [--no-kafka] (default 40 60: about what a busy 16-CPU host gives
 * at 19 Hz in 10 s).
 */
public final class ShipBench {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    public static void main(String[] args) throws Exception {
        int processes = args.length > 0 ? Integer.parseInt(args[0]) : 40;
        int stacks = args.length > 1 ? Integer.parseInt(args[1]) : 60;
        System.out.printf("host-wide interval: %d processes x %d distinct stacks (depth 8..40)%n", processes, stacks);
        List<ProfileBatch> intervals = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            intervals.add(interval(i, processes, stacks));
        }
        Profile p0 = intervals.get(0).profiles().get(0).profile();
        System.out.printf("  profile: %d samples, %d locations, %d functions, %d mappings; gzipped %d KiB%n",
                p0.getSampleCount(), p0.getLocationCount(), p0.getFunctionCount(), p0.getMappingCount(),
                PprofFiles.gzip(p0).length / 1024);

        encodeCost(intervals);
        Path root = Files.createTempDirectory("loupe-ship-bench");
        try {
            sustained(root.resolve("sustained"), intervals);
            backlog(root.resolve("backlog"), intervals);
            if (!"--no-kafka".equals(args.length > 2 ? args[2] : "")) {
                kafka(root.resolve("kafka"), intervals);
            }
        } finally {
            try (var walk = Files.walk(root)) {
                walk.sorted(Collections.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /** One synthetic host-wide interval (fixed seed per index: every run measures the same bytes). */
    static ProfileBatch interval(int index, int processes, int stacks) {
        long start = 1_763_000_000_000_000_000L + index * 10_000_000_000L;
        ProfileBuilder b = new ProfileBuilder(10_101_010L, start);
        SplittableRandom r = new SplittableRandom(42 + index);
        long libc = b.mapping(0x7f0000000000L, 0x7f0000200000L, 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", "c0ffee01", true);
        long libm = b.mapping(0x7f0000400000L, 0x7f0000500000L, 0, "/usr/lib/x86_64-linux-gnu/libm.so.6", "c0ffee02", true);
        for (int p = 0; p < processes; p++) {
            int pid = 1000 + p;
            long exe = b.mapping(0x400000, 0x2400000, 0, "/usr/bin/service-" + p, String.format("%040x", p), true);
            List<Label> labels = List.of(Label.num("pid", pid), Label.str("comm", "service-" + p));
            for (int s = 0; s < stacks; s++) {
                int depth = 8 + r.nextInt(33);
                long[] ids = new long[depth];
                for (int d = 0; d < depth; d++) {
                    int fn = r.nextInt(2000);
                    boolean shared = d < 2 && r.nextInt(4) == 0;
                    long mapping = shared ? (fn % 2 == 0 ? libc : libm) : exe;
                    long base = shared ? (mapping == libc ? 0x7f0000000000L : 0x7f0000400000L) : 0x400000;
                    String name = shared ? "lib_fn_" + fn : "pkg" + (fn % 40) + ".Service" + p % 7 + ".method" + fn;
                    ids[d] = b.location(mapping, base + fn * 64L, name, null);
                }
                b.addSample(ids, 1 + r.nextInt(20), labels);
            }
        }
        Profile profile = b.build(start + 10_000_000_000L);
        TreeMap<String, String> series = new TreeMap<>(Map.of("__name__", "parca_agent_cpu", "node", "bench-node"));
        EncodedProfile e = new EncodedProfile("cpu", series, profile.getTimeNanos(), profile.getDurationNanos(),
                PprofFiles.gzip(profile), profile.getSampleCount(), profile);
        return new ProfileBatch(index, profile.getTimeNanos(), profile.getDurationNanos(), List.of(e));
    }

    private static void encodeCost(List<ProfileBatch> intervals) {
        WriteRawEncoder enc = new WriteRawEncoder(Map.of("region", "bench"), 16 << 20, pid -> java.util.Optional.empty());
        int rounds = 5;
        long[] remote = new long[rounds];
        long[] local = new long[rounds];
        int series = 0;
        for (int warm = 0; warm < 2; warm++) {
            for (ProfileBatch b : intervals) {
                enc.requests(enc.series(b.profiles().get(0).profile(), b.profiles().get(0).labels()));
                PprofFiles.gzip(b.profiles().get(0).profile());
            }
        }
        for (int round = 0; round < rounds; round++) {
            long t0 = THREADS.getCurrentThreadCpuTime();
            for (ProfileBatch b : intervals) {
                PprofFiles.gzip(b.profiles().get(0).profile());
            }
            long t1 = THREADS.getCurrentThreadCpuTime();
            for (ProfileBatch b : intervals) {
                List<WriteRawEncoder.Series> s = enc.series(b.profiles().get(0).profile(), b.profiles().get(0).labels());
                series = s.size();
                enc.requests(s);
            }
            long t2 = THREADS.getCurrentThreadCpuTime();
            local[round] = (t1 - t0) / intervals.size();
            remote[round] = (t2 - t1) / intervals.size();
        }
        long l = median(local);
        long rm = median(remote);
        System.out.printf("encode (CPU, median of %d rounds of %d intervals):%n", rounds, intervals.size());
        System.out.printf("  baseline  gzip host-wide profile once (file sink): %.1f ms per interval%n", l / 1e6);
        System.out.printf("  parca     split into %d series + gzip each + WriteRaw: %.1f ms per interval, %.0f us per series%n",
                series, rm / 1e6, rm / 1e3 / series);
        System.out.printf("  ratio     %.2fx the file sink's encoding%n", (double) rm / l);
    }

    private static void sustained(Path root, List<ProfileBatch> intervals) throws Exception {
        ParcaStandIn standIn = new ParcaStandIn().start();
        ParcaClient client = ParcaClient.create(ParcaClientConfig.builder(standIn.address()).insecure(true)
                .timeout(Duration.ofSeconds(10)).build());
        Spool spool = Spool.open(root, "parca", 4L << 30);
        DeliveryLoop loop = DeliveryLoop.create(spool, (batch, timeout) -> client.writeRaw(batch.payload(), timeout),
                Duration.ofSeconds(10));
        RemoteSink sink = new RemoteSink("parca", spool, loop, WriteRawEncoder.forHost(Map.of(), dev.loupe.agent.relabel.Relabeling.none(), 4L << 20), client);
        int n = 48;
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            sink.write(intervals.get(i % intervals.size()));
        }
        long spooled = System.nanoTime() - t0;
        while (spool.stats().batches() > 0) {
            Thread.sleep(5);
        }
        long total = System.nanoTime() - t0;
        var st = sink.remoteStats().orElseThrow();
        List<Long> sizes = new ArrayList<>();
        long series = 0;
        for (var r : standIn.accepted()) {
            WriteRawRequest req = r.request();
            sizes.add((long) req.getSerializedSize());
            series += req.getSeriesCount();
        }
        Collections.sort(sizes);
        sink.close(System.nanoTime() + 5_000_000_000L);
        standIn.close();
        double secs = total / 1e9;
        System.out.printf("sustained to Parca (RemoteSink -> spool -> ParcaClient -> grpc-java stand-in, localhost):%n");
        System.out.printf("  %d intervals in %.2f s (spooling alone %.2f s): %.0f series/s, %.1f requests/s, %.1f MiB/s%n",
                n, secs, spooled / 1e9, series / secs, st.delivered() / secs, st.deliveredBytes() / secs / (1 << 20));
        System.out.printf("  request bytes (4 MiB cap): min %d, median %d, p90 %d, max %d (%d requests)%n",
                sizes.get(0), sizes.get(sizes.size() / 2), sizes.get(sizes.size() * 9 / 10), sizes.get(sizes.size() - 1),
                sizes.size());
    }

    private static void backlog(Path root, List<ProfileBatch> intervals) throws Exception {
        ParcaStandIn standIn = new ParcaStandIn().start();
        standIn.stop();
        ParcaClient client = ParcaClient.create(ParcaClientConfig.builder(standIn.address()).insecure(true)
                .timeout(Duration.ofSeconds(10)).build());
        Spool spool = Spool.open(root, "parca", 4L << 30);
        DeliveryLoop loop = new DeliveryLoop(spool, (batch, timeout) -> client.writeRaw(batch.payload(), timeout),
                new DeliveryLoop.Backoff(Duration.ofMillis(100), Duration.ofMillis(500)), Duration.ofSeconds(10),
                System::nanoTime, DeliveryLoop.Sleeper.SYSTEM, java.util.random.RandomGenerator.getDefault());
        RemoteSink sink = new RemoteSink("parca", spool, loop, WriteRawEncoder.forHost(Map.of(), dev.loupe.agent.relabel.Relabeling.none(), 16L << 20), client);
        for (int i = 0; i < 60; i++) { // 10 minutes at 10 s
            sink.write(intervals.get(i % intervals.size()));
        }
        long backlogBytes = spool.stats().bytes();
        long batches = spool.stats().batches();
        standIn.start();
        long t0 = System.nanoTime();
        while (spool.stats().batches() > 0) {
            Thread.sleep(5);
        }
        long drain = System.nanoTime() - t0;
        sink.close(System.nanoTime() + 5_000_000_000L);
        standIn.close();
        System.out.printf("backlog: 10 minutes at a 10 s interval = 60 intervals, %d requests, %.1f MiB spooled%n",
                batches, backlogBytes / (double) (1 << 20));
        System.out.printf("  drained %.2f s after the store came back (includes up to 0.5 s of backoff): %.0fx faster than real time%n",
                drain / 1e9, 600e9 / drain);
    }

    private static void kafka(Path root, List<ProfileBatch> intervals) throws Exception {
        try (dev.loupe.agent.ship.kafka.KafkaBroker broker = dev.loupe.agent.ship.kafka.KafkaBroker.start(Map.of())) {
            String topic = "bench.profiles";
            broker.createTopic(topic, 6, Map.of("max.message.bytes", "16777216"));
            int n = 48;
            long plainRecords = kafkaSustained(root.resolve("plain"), broker, topic, intervals, n, false);
            long txRecords = kafkaSustained(root.resolve("tx"), broker, topic, intervals, n, true);
            relay(root.resolve("relay"), broker, topic, plainRecords + txRecords);
        }
    }

    /** @return records the broker acknowledged */
    private static long kafkaSustained(Path root, dev.loupe.agent.ship.kafka.KafkaBroker broker, String topic,
                                       List<ProfileBatch> intervals, int n, boolean transactional) throws Exception {
        var sender = dev.loupe.agent.ship.kafka.KafkaSender.create(dev.loupe.agent.ship.kafka.KafkaSenderConfig
                .of(broker.bootstrapServers(), "bench").withTopic(topic).withTransactional(transactional)
                .withProducerProperties(Map.of("max.request.size", "16777216")));
        Spool spool = Spool.open(root, "kafka", 4L << 30);
        DeliveryLoop loop = DeliveryLoop.create(spool, sender, Duration.ofSeconds(30));
        RemoteSink sink = new RemoteSink("kafka", spool, loop, WriteRawEncoder.forHost(Map.of(), dev.loupe.agent.relabel.Relabeling.none(), 16L << 20), sender);
        // Warm-up: producer metadata, transactional id registration.
        sink.write(intervals.get(0));
        while (spool.stats().batches() > 0) {
            Thread.sleep(5);
        }
        var before = sender.stats();
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            sink.write(intervals.get(i % intervals.size()));
        }
        while (spool.stats().batches() > 0) {
            Thread.sleep(5);
        }
        long total = System.nanoTime() - t0;
        var after = sender.stats();
        sink.close(System.nanoTime() + 5_000_000_000L);
        double secs = total / 1e9;
        long records = after.records() - before.records();
        System.out.printf("sustained to Kafka, %s (RemoteSink -> spool -> KafkaSender -> KRaft broker in this JVM):%n",
                transactional ? "transactional, one transaction per batch" : "idempotent, acks=all");
        System.out.printf("  %d intervals in %.2f s: %.0f records (series)/s, %.1f batches/s, %.1f MiB/s of values%n",
                n, secs, records / secs, (after.batches() - before.batches()) / secs,
                (after.bytes() - before.bytes()) / secs / (1 << 20));
        return after.records();
    }

    private static void relay(Path root, dev.loupe.agent.ship.kafka.KafkaBroker broker, String topic, long expected)
            throws Exception {
        ParcaStandIn standIn = new ParcaStandIn().start();
        ParcaClient client = ParcaClient.create(ParcaClientConfig.builder(standIn.address()).insecure(true)
                .timeout(Duration.ofSeconds(10)).build());
        var relay = dev.loupe.agent.relay.KafkaRelay.create(dev.loupe.agent.relay.KafkaRelay.Config
                .defaults(broker.bootstrapServers(), root.resolve("quarantine")).withTopic(topic), client::writeRaw);
        Thread t = Thread.ofPlatform().name("relay").start(relay);
        long t0 = System.nanoTime();
        long deadline = t0 + 300_000_000_000L;
        while (relay.stats().forwarded() + relay.stats().duplicatesDropped() < expected && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        long total = System.nanoTime() - t0;
        var st = relay.stats();
        relay.stop();
        t.join(30_000);
        relay.close();
        standIn.close();
        double secs = total / 1e9;
        System.out.printf("relay (KafkaRelay, one member, from offset 0 -> grpc-java stand-in; the transactional run sent"
                + " the same intervals again, with the same record ids, so the relay drops those as duplicates):%n");
        System.out.printf("  %d of %d records forwarded in %.2f s (group join included): %.0f records/s, %.1f MiB/s, %d requests, %d duplicates dropped%n",
                st.forwarded(), expected, secs, st.forwarded() / secs, st.forwardedBytes() / secs / (1 << 20), st.requests(),
                st.duplicatesDropped());
    }

    private static long median(long[] v) {
        long[] c = v.clone();
        java.util.Arrays.sort(c);
        return c[c.length / 2];
    }
}
