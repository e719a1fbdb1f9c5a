package dev.loupe.agent.sampling;

import dev.loupe.agent.sink.EncodedProfile;
import dev.loupe.agent.sink.ProfileBatch;
import dev.loupe.agent.sink.ProfileSink;
import dev.loupe.bpf.RawSample;
import dev.loupe.bpf.SamplerStats;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.MappingRef;
import dev.loupe.unwinder.symbolize.Symbolizer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The main loop with a fake sample source, a fake symbolizer and an injected clock: no BPF here. */
class AgentTest {
    /** Wall and monotonic time that move only when the test says so, and independently. */
    static final class ManualClock implements InstantSource {
        final AtomicLong nanos = new AtomicLong(1_700_000_000_000_000_000L);
        final AtomicLong mono = new AtomicLong(5_000_000_000L);

        @Override
        public Instant instant() {
            return Instant.ofEpochSecond(0, nanos.get());
        }

        /** Real time passing: both clocks move. */
        void advance(Duration d) {
            nanos.addAndGet(d.toNanos());
            mono.addAndGet(d.toNanos());
        }

        /** An NTP step: only the wall clock moves. */
        void stepWall(Duration d) {
            nanos.addAndGet(d.toNanos());
        }

        Clocks clocks() {
            return new Clocks(this, mono::get);
        }
    }

    /** An agent whose fake pids are all in the root cgroup (the host's /proc is not asked about them). */
    static Agent agent(int hz, Duration interval, SampleSource source, List<ProfileSink> sinks, ManualClock clock) {
        return new Agent(hz, interval, source, new FakeSymbolizer(), sinks, clock.clocks(),
                Agent.Options.defaults(Map.of("node", "test-node")).withCgroupReader(pid -> "0::/\n"));
    }

    static final class FakeSource implements SampleSource {
        final ConcurrentLinkedQueue<RawSample> queue = new ConcurrentLinkedQueue<>();
        volatile boolean closed;
        volatile boolean failPolls;
        volatile boolean blockPolls;
        /** Set while a poll is held up by {@link #blockPolls}. */
        volatile boolean blocked;

        @Override
        public int poll(Duration timeout, Consumer<RawSample> sink) throws SampleSourceException {
            while (blockPolls) {
                blocked = true;
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return 0;
                }
            }
            blocked = false;
            if (failPolls) {
                throw new SampleSourceException("boom", null);
            }
            int n = 0;
            RawSample s;
            while ((s = queue.poll()) != null) {
                sink.accept(s);
                n++;
            }
            if (n == 0 && !timeout.isZero()) {
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return n;
        }

        @Override
        public SamplerStats stats() {
            return SamplerStats.EMPTY;
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    /** Names user address A as "fn_A" in a fake binary; kernel addresses as "k_A". */
    static final class FakeSymbolizer implements Symbolizer {
        static final MappingRef BIN = new MappingRef(0x1000, 0x9000, 0, "/bin/fake", "abcd", true);
        static final MappingRef KERNEL = new MappingRef(0xffffffff81000000L, 0xffffffff82000000L, 0, "[kernel.kallsyms]", null, true);

        @Override
        public int symbolizeUser(int pid, long start, long[] addrs, int count, List<Frame> out) {
            for (int i = 0; i < count; i++) {
                out.add(new Frame(addrs[i], BIN, "fn_" + Long.toHexString(addrs[i]), false));
            }
            return 0;
        }

        @Override
        public void symbolizeKernel(long[] addrs, int count, List<Frame> out) {
            for (int i = 0; i < count; i++) {
                out.add(new Frame(addrs[i], KERNEL, "k_" + Long.toHexString(addrs[i]), true));
            }
        }

        @Override
        public Stats stats() {
            return null;
        }

        @Override
        public void close() {}
    }

    static final class MemorySink implements ProfileSink {
        final List<Profile> profiles = new CopyOnWriteArrayList<>();
        final List<ProfileBatch> batches = new CopyOnWriteArrayList<>();

        @Override
        public String name() {
            return "memory";
        }

        @Override
        public void write(ProfileBatch batch) {
            for (EncodedProfile p : batch.profiles()) {
                profiles.add(PprofFiles.parse(p.gzippedPprof()));
            }
            batches.add(batch); // last: tests wait on batches, then read profiles
        }
    }

    static RawSample sample(int pid, long[] kernel, long... user) {
        return new RawSample(pid, pid, pid, pid, 0, "proc" + pid, "thr" + pid, 0, 0, 0, kernel, user);
    }

    private static void awaitTrue(java.util.function.BooleanSupplier c) throws InterruptedException {
        long end = System.nanoTime() + 5_000_000_000L;
        while (!c.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("condition not met within 5 s");
            }
            Thread.sleep(5);
        }
    }

    /** The profile an agent (no unwind tables) writes from these samples, in one interval. */
    private Profile profileOf(RawSample... samples) throws Exception {
        FakeSource source = new FakeSource();
        MemorySink sink = new MemorySink();
        Agent agent = agent(19, Duration.ofSeconds(10), source, List.of(sink), new ManualClock());
        agent.start();
        source.queue.addAll(List.of(samples));
        awaitTrue(() -> agent.samplesProcessed() == samples.length);
        agent.stop();
        assertEquals(1, sink.profiles.size());
        return sink.profiles.get(0);
    }

    @Test
    void aThreadThatRenamesItselfGetsItsNewNameInTheLabels() throws Exception {
        Profile p = profileOf(
                new RawSample(5, 6, 5, 6, 0, "app", "worker", 0, 0, 0, new long[0], new long[] {0x1100}),
                new RawSample(5, 6, 5, 6, 0, "app", "worker", 0, 0, 0, new long[0], new long[] {0x1100}),
                new RawSample(5, 6, 5, 6, 0, "app", "renamed", 0, 0, 0, new long[0], new long[] {0x1100}));
        Map<String, Long> byThreadName = new java.util.TreeMap<>();
        for (var sample : p.getSampleList()) {
            for (var l : sample.getLabelList()) {
                if (p.getStringTable((int) l.getKey()).equals("thread_comm")) {
                    byThreadName.merge(p.getStringTable((int) l.getStr()), sample.getValue(0), Long::sum);
                }
            }
        }
        assertEquals(Map.of("renamed", 1L, "worker", 2L), byThreadName);
    }

    @Test
    void withoutUnwindTablesFramePointerSamplesAreNotLabelledFallback() throws Exception {
        Profile p = profileOf(new RawSample(9, 9, 9, 9, 0, "proc9", "thr9", 0, 0, RawSample.FP_FALLBACK, new long[0], new long[] {0x1100}));
        assertEquals(1, p.getSampleCount());
        List<String> keys = p.getSample(0).getLabelList().stream().map(l -> p.getStringTable((int) l.getKey())).toList();
        assertEquals(List.of("pid", "tid", "comm", "thread_comm", "node"), keys,
                "no unwind=frame_pointers when tables are off (node: the local file's series label on every sample)");
    }

    @Test
    void rotatesEveryIntervalAndFlushesPartialIntervalOnStop() throws Exception {
        ManualClock clock = new ManualClock();
        FakeSource source = new FakeSource();
        MemorySink sink = new MemorySink();
        Agent agent = agent(19, Duration.ofSeconds(10), source, List.of(sink), clock);
        long t0 = clock.nanos.get();
        agent.start();

        source.queue.add(sample(7, new long[0], 0x1100, 0x1200));
        source.queue.add(sample(7, new long[0], 0x1100, 0x1200));
        awaitTrue(() -> agent.samplesProcessed() == 2);
        clock.advance(Duration.ofSeconds(10));
        awaitTrue(() -> sink.profiles.size() == 1);

        source.queue.add(sample(8, new long[] {0xffffffff81000100L}, 0x1300));
        awaitTrue(() -> agent.samplesProcessed() == 3);
        clock.advance(Duration.ofSeconds(3));
        agent.stop();
        assertTrue(source.closed);
        assertEquals(2, sink.profiles.size());

        Profile first = sink.profiles.get(0);
        assertEquals(t0, first.getTimeNanos());
        assertEquals(10_000_000_000L, first.getDurationNanos());
        assertEquals(1_000_000_000L / 19, first.getPeriod());
        assertEquals(1, first.getSampleCount(), "two identical samples aggregate");
        assertEquals(List.of(2L, 2L * (1_000_000_000L / 19)), first.getSample(0).getValueList());
        assertEquals(2, first.getSample(0).getLocationIdCount());

        Profile last = sink.profiles.get(1);
        assertEquals(3_000_000_000L, last.getDurationNanos(), "partial interval flushed on stop");
        assertEquals(1, last.getSampleCount());
        // Leaf first: the kernel frame, then the user frame.
        var s = last.getSample(0);
        var names = new ArrayList<String>();
        for (long id : s.getLocationIdList()) {
            var loc = last.getLocation((int) id - 1);
            names.add(last.getStringTable((int) last.getFunction((int) loc.getLine(0).getFunctionId() - 1).getName()));
        }
        assertEquals(List.of("k_ffffffff81000100", "fn_1300"), names);

        // Encoded once with the series labels every sink sees.
        EncodedProfile enc = sink.batches.get(0).profiles().get(0);
        assertEquals(Map.of("__name__", "parca_agent_cpu", "node", "test-node"), enc.labels());
        assertEquals("parca_agent_cpu{node=\"test-node\"}", enc.seriesId());
        assertEquals(List.of(1L, 2L), sink.batches.stream().map(ProfileBatch::sequence).toList());
    }

    /**
     * External labels go on every sample of the gzipped bytes (local files) from the next interval on, as node does;
     * node wins over an external label of its name; series labels (remote sinks) stay node only.
     */
    @Test
    void externalLabelsGoOnEverySampleOfLocalFilesFromTheNextIntervalNotIntoSeriesLabels() throws Exception {
        ManualClock clock = new ManualClock();
        FakeSource source = new FakeSource();
        MemorySink sink = new MemorySink();
        Agent agent = agent(19, Duration.ofSeconds(10), source, List.of(sink), clock);
        agent.start();
        source.queue.add(sample(7, new long[0], 0x1100));
        awaitTrue(() -> agent.samplesProcessed() == 1);
        clock.advance(Duration.ofSeconds(10));
        awaitTrue(() -> sink.profiles.size() == 1);

        agent.externalLabels(Map.of("team", "profiling", "node", "not-ours"));
        source.queue.add(sample(8, new long[0], 0x1200));
        source.queue.add(sample(9, new long[0], 0x1300));
        awaitTrue(() -> agent.samplesProcessed() == 3);
        clock.advance(Duration.ofSeconds(10));
        awaitTrue(() -> sink.profiles.size() == 2);
        agent.stop();

        Profile before = sink.profiles.get(0);
        assertEquals(1, before.getSampleCount());
        assertEquals(Map.of("comm", "proc7", "thread_comm", "thr7", "node", "test-node"), strLabels(before, 0));
        Profile after = sink.profiles.get(1);
        assertEquals(2, after.getSampleCount());
        for (int i = 0; i < after.getSampleCount(); i++) {
            Map<String, String> l = strLabels(after, i);
            assertEquals("profiling", l.get("team"), l.toString());
            assertEquals("test-node", l.get("node"), "node is ours: " + l);
        }
        for (ProfileBatch b : sink.batches) {
            assertEquals(Map.of("__name__", "parca_agent_cpu", "node", "test-node"), b.profiles().get(0).labels(),
                    "remote sinks add external labels to their series themselves");
        }
    }

    private static Map<String, String> strLabels(Profile p, int sample) {
        Map<String, String> m = new java.util.TreeMap<>();
        for (var l : p.getSample(sample).getLabelList()) {
            if (l.getStr() != 0) {
                m.put(p.getStringTable((int) l.getKey()), p.getStringTable((int) l.getStr()));
            }
        }
        return m;
    }

    @Test
    void captureCollectsOnlyItsOwnWindow() throws Exception {
        ManualClock clock = new ManualClock();
        FakeSource source = new FakeSource();
        MemorySink sink = new MemorySink();
        Agent agent = agent(99, Duration.ofSeconds(60), source, List.of(sink), clock);
        agent.start();
        source.queue.add(sample(1, new long[0], 0x1100));
        awaitTrue(() -> agent.samplesProcessed() == 1);
        // Two samples once the capture has opened its window (this thread then waits in capture()).
        Thread capturing = Thread.currentThread();
        Thread feeder = Thread.ofVirtual().start(() -> {
            try {
                awaitTrue(() -> capturing.getState() == Thread.State.TIMED_WAITING);
                source.queue.add(sample(2, new long[0], 0x1500));
                source.queue.add(sample(2, new long[0], 0x1500));
            } catch (InterruptedException ignored) {
            }
        });
        Profile p = agent.capture(Duration.ofMillis(600));
        feeder.join();
        agent.stop();
        assertEquals(1, p.getSampleCount());
        assertEquals(2, p.getSample(0).getValue(0), "the two samples taken during the capture");
        Profile file = sink.profiles.get(0);
        Map<String, Long> byComm = new java.util.TreeMap<>();
        for (int i = 0; i < file.getSampleCount(); i++) {
            byComm.merge(strLabels(file, i).get("comm"), file.getSample(i).getValue(0), Long::sum);
        }
        assertEquals(Map.of("proc1", 1L, "proc2", 2L), byComm, "the interval has every sample, the capture's too");
    }
}
