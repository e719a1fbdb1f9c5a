package dev.loupe.agent.sampling;

import dev.loupe.agent.http.DebugHttpServer;
import dev.loupe.agent.sink.ProfileBatch;
import dev.loupe.agent.sink.ProfileSink;
import dev.loupe.agent.sink.SinkStats;
import dev.loupe.pprof.proto.Profile;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static dev.loupe.agent.sampling.AgentTest.FakeSource;
import static dev.loupe.agent.sampling.AgentTest.ManualClock;
import static dev.loupe.agent.sampling.AgentTest.MemorySink;
import static dev.loupe.agent.sampling.AgentTest.agent;
import static dev.loupe.agent.sampling.AgentTest.sample;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Monotonic time, bounded sinks and rate-limited errors of the agent loop: fakes only, no BPF. */
class AgentClocksAndSinksTest {
    private static void awaitTrue(String what, java.util.function.BooleanSupplier c) throws InterruptedException {
        long end = System.nanoTime() + 20_000_000_000L;
        while (!c.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("not within 20 s: " + what);
            }
            Thread.sleep(2);
        }
    }

    /**
     * Waits until a whole turn of the sampling loop (poll, read the clocks, rotate if due) has run after this call:
     * the turn counted next may have read the clock before it, the one after that has not, and it has finished
     * once a third is counted.
     */
    private static void awaitLoopTurn(Agent agent) throws InterruptedException {
        long target = agent.polls() + 3;
        awaitTrue("three more polls", () -> agent.polls() >= target);
    }

    /** NTP steps of hours either way change neither rotation nor health; profile times follow the wall clock. */
    @Test
    void wallClockStepsChangeNeitherRotationNorHealth() throws Exception {
        ManualClock clock = new ManualClock();
        FakeSource source = new FakeSource();
        MemorySink sink = new MemorySink();
        Agent agent = agent(19, Duration.ofSeconds(10), source, List.of(sink), clock);
        agent.start();
        try {
            long wall0 = clock.nanos.get();
            clock.advance(Duration.ofSeconds(4));
            clock.stepWall(Duration.ofHours(-3)); // backwards: the old code would never rotate again
            awaitLoopTurn(agent); // the loop has looked at both clocks since
            assertTrue(agent.status().healthy(), "healthy after a backward step");
            assertEquals(0, sink.batches.size(), "no rotation: only 4 s of real time passed");
            clock.advance(Duration.ofSeconds(6));
            awaitTrue("rotation after 10 monotonic seconds", () -> sink.batches.size() == 1);
            Profile first = sink.profiles.get(0);
            assertEquals(wall0, first.getTimeNanos(), "time_nanos: the wall clock when the window opened");
            assertEquals(10_000_000_000L, first.getDurationNanos(), "duration: monotonic, not the 3 h step");

            long wall1 = clock.nanos.get();
            clock.stepWall(Duration.ofHours(5)); // forwards: the old code would report unhealthy
            awaitLoopTurn(agent);
            assertTrue(agent.status().healthy(), "healthy after a forward step");
            assertEquals(1, sink.batches.size(), "a forward step does not rotate either");
            clock.advance(Duration.ofSeconds(10));
            awaitTrue("second rotation", () -> sink.batches.size() == 2);
            // The second window opened at the first rotation, before the +5 h step.
            assertEquals(wall1, sink.profiles.get(1).getTimeNanos());
            assertEquals(10_000_000_000L, sink.profiles.get(1).getDurationNanos());

            // Health does follow the monotonic clock: a loop that stops polling is unhealthy.
            source.blockPolls = true;
            awaitTrue("the loop held up in a poll", () -> source.blocked);
            clock.advance(Duration.ofSeconds(6));
            assertTrue(!agent.status().healthy(), "a loop not polling for 6 s is unhealthy");
            source.blockPolls = false;
        } finally {
            agent.stop();
        }
    }

    /** A sink blocked forever: sampling goes on, its queue stays at capacity, drops are counted, heap bounded. */
    @Test
    void aSinkBlockedForeverCostsBoundedHeapAndDoesNotHoldUpSampling() throws Exception {
        ManualClock clock = new ManualClock();
        FakeSource source = new FakeSource();
        CountDownLatch release = new CountDownLatch(1);
        ProfileSink stuck = new ProfileSink() {
            @Override
            public String name() {
                return "stuck";
            }

            @Override
            public void write(ProfileBatch batch) throws java.io.IOException {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    throw new java.io.InterruptedIOException();
                }
            }
        };
        AtomicLong producedBytes = new AtomicLong();
        AtomicLong counted = new AtomicLong();
        ProfileSink counting = new ProfileSink() {
            @Override
            public String name() {
                return "counting";
            }

            @Override
            public void write(ProfileBatch batch) {
                producedBytes.addAndGet(batch.bytes());
                counted.incrementAndGet();
            }
        };
        Agent agent = agent(99, Duration.ofSeconds(10), source, List.of(stuck, counting), clock);
        agent.start();
        long heapSteady = 0;
        int intervals = 100;
        java.util.Random rnd = new java.util.Random(7);
        try {
            for (int i = 1; i <= intervals; i++) {
                for (int s = 0; s < 1500; s++) {
                    long[] user = new long[12];
                    for (int f = 0; f < user.length; f++) {
                        user[f] = 0x1000 + rnd.nextInt(0x7000); // inside the fake binary, mostly unique
                    }
                    source.queue.add(sample(100 + s % 50, new long[0], user));
                }
                long processed = i * 1500L;
                awaitTrue("samples of interval " + i + " processed", () -> agent.samplesProcessed() == processed);
                clock.advance(Duration.ofSeconds(10));
                int n = i;
                awaitTrue("interval " + i + " delivered to the healthy sink", () -> counted.get() == n);
                if (i == 20) {
                    heapSteady = usedHeapAfterGc(); // the stuck sink's queue has been full for a while
                }
            }
            SinkStats st = agent.status().sinks().stream().filter(x -> x.sink().equals("stuck")).findFirst().orElseThrow();
            assertEquals(8, st.queued(), "the stuck sink's queue is full at its capacity, no more");
            assertEquals(intervals - 8 - 1, st.dropped(), "all but the queue and the one in the blocked write were dropped");
            assertEquals(0, st.written());
            assertEquals(intervals * 1500L, agent.status().samplesProcessed(), "sampling never waited for the stuck sink");
            // From interval 20 on, a bounded queue retains nothing more; an unbounded one would keep 80 more batches.
            long heapGrowth = usedHeapAfterGc() - heapSteady;
            long perBatch = producedBytes.get() / intervals;
            long bound = 4 * perBatch + (4L << 20);
            assertTrue(80 * perBatch > 2 * bound,
                    "test premise: an unbounded queue would retain " + 80 * perBatch + " more bytes, far above " + bound);
            System.out.printf("blocked sink: heap grew %d KiB from interval 20 to %d (%d KiB encoded per interval)%n",
                    heapGrowth >> 10, intervals, perBatch >> 10);
            assertTrue(heapGrowth < bound, "heap grew " + heapGrowth + " bytes; bound " + bound
                    + " (encoded total " + producedBytes.get() + ")");
            String metrics = metricsOf(agent);
            assertEquals(intervals - 9, metric(metrics, "loupe_sink_intervals_dropped_total{sink=\"stuck\"}"), metrics);
            assertEquals(8, metric(metrics, "loupe_sink_queue_intervals{sink=\"stuck\"}"), metrics);
            assertEquals(intervals, metric(metrics, "loupe_sink_intervals_written_total{sink=\"counting\"}"), metrics);
        } finally {
            // Once stop() waits for the stuck sink, let 31 s pass: past the 30 s stop timeout it gives up.
            Thread stopping = Thread.currentThread();
            Thread.ofVirtual().start(() -> {
                try {
                    awaitTrue("stop() waiting for the stuck sink", () -> java.util.Arrays.stream(stopping.getStackTrace())
                            .anyMatch(f -> f.getClassName().endsWith(".SinkRunner") && f.getMethodName().equals("stop")));
                } catch (InterruptedException ignored) {
                }
                clock.advance(Duration.ofSeconds(31));
            });
            agent.stop();
            release.countDown();
        }
    }

    @Test
    void pollFailuresAreLoggedOnceThenSummarizedPerMinute() throws Exception {
        ManualClock clock = new ManualClock();
        FakeSource source = new FakeSource();
        source.failPolls = true;
        List<String> logged = new CopyOnWriteArrayList<>();
        Logger jul = Logger.getLogger(Agent.class.getName());
        Handler h = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getMessage().startsWith("sampling poll failed")) {
                    logged.add(r.getMessage());
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        jul.addHandler(h);
        Agent agent = agent(19, Duration.ofSeconds(10), source, List.of(), clock);
        agent.start();
        try {
            awaitTrue("5 failed polls", () -> agent.status().pollErrors() >= 5);
            assertEquals(1, logged.size(), "one line for five failures within a minute: " + logged);
            long before = agent.status().pollErrors();
            clock.advance(Duration.ofSeconds(61));
            awaitTrue("a summary after a minute", () -> logged.size() == 2);
            assertTrue(logged.get(1).matches("sampling poll failed: boom \\(\\d+ more like it since the last report\\)"),
                    logged.get(1));
            long suppressed = Long.parseLong(logged.get(1).replaceAll(".*\\((\\d+) more.*", "$1"));
            assertTrue(suppressed >= before - 1, "suppressed " + suppressed + " of " + before);
            // Polls keep failing meanwhile: the scraped value lies between the counts read around the scrape.
            long low = agent.status().pollErrors();
            double scraped = metric(metricsOf(agent), "loupe_poll_errors_total");
            long high = agent.status().pollErrors();
            assertTrue(scraped >= low, "scraped " + scraped + ", before the scrape " + low);
            assertTrue(scraped <= high, "scraped " + scraped + ", after the scrape " + high);
        } finally {
            source.failPolls = false;
            agent.stop();
            jul.removeHandler(h);
        }
    }

    /** /metrics as the agent serves it: the agent's registered metrics in the text format. */
    static String metricsOf(Agent agent) throws java.io.IOException {
        PrometheusRegistry registry = new PrometheusRegistry();
        agent.registerMetrics(registry);
        return new String(DebugHttpServer.metricsText(registry), java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The value of one series (name with its labels) in exposition text; fails if it is not there. */
    static double metric(String text, String series) {
        for (String line : text.split("\n")) {
            if (line.startsWith(series + " ")) {
                return Double.parseDouble(line.substring(series.length() + 1).trim());
            }
        }
        throw new AssertionError(series + " not in:\n" + text);
    }

    private static long usedHeapAfterGc() throws InterruptedException {
        long best = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
            best = Math.min(best, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
        }
        return best;
    }
}
