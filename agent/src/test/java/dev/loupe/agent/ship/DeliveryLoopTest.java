package dev.loupe.agent.ship;

import dev.loupe.agent.logging.LogCapture;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DeliveryLoopTest {
    private static final long S = TimeUnit.SECONDS.toNanos(1);

    @TempDir
    Path root;
    final AtomicLong nanos = new AtomicLong(1_000 * S);
    final List<Long> sleeps = Collections.synchronizedList(new ArrayList<>());
    /** Sleeps only on the fake clock. */
    final DeliveryLoop.Sleeper fakeSleeper = n -> {
        sleeps.add(n);
        nanos.addAndGet(n);
    };

    /** Answers per sequence number, in order; Delivered once a script runs out. Records every send. */
    static final class ScriptedSender implements BatchSender {
        final Map<Long, Deque<SendResult>> script = new HashMap<>();
        final List<Long> sent = Collections.synchronizedList(new ArrayList<>());
        final List<Duration> timeouts = Collections.synchronizedList(new ArrayList<>());
        Runnable duringSend = () -> {};

        ScriptedSender on(long sequence, SendResult... results) {
            script.computeIfAbsent(sequence, k -> new ArrayDeque<>()).addAll(List.of(results));
            return this;
        }

        @Override
        public SendResult send(SpooledBatch batch, Duration timeout) {
            sent.add(batch.sequence());
            timeouts.add(timeout);
            duringSend.run();
            Deque<SendResult> d = script.get(batch.sequence());
            return d == null || d.isEmpty() ? SendResult.DELIVERED : d.poll();
        }
    }

    private Spool spool(int batches) throws Exception {
        Spool spool = Spool.open(root, "parca", 1 << 20, 1 << 20, nanos::get, System::currentTimeMillis);
        for (int i = 1; i <= batches; i++) {
            spool.append(Map.of("i", Integer.toString(i)), new byte[] {(byte) i});
        }
        return spool;
    }

    private DeliveryLoop loop(Spool spool, BatchSender sender) {
        return new DeliveryLoop(spool, sender, DeliveryLoop.Backoff.DEFAULT, Duration.ofSeconds(10), nanos::get,
                fakeSleeper, new Random(7));
    }

    @Test
    void backoffIsFullJitterUnderADoublingCappedCeiling() {
        var b = DeliveryLoop.Backoff.DEFAULT;
        assertEquals(List.of(S / 2, S, 2 * S, 4 * S, 8 * S, 16 * S, 30 * S, 30 * S),
                List.of(b.ceilingNanos(0), b.ceilingNanos(1), b.ceilingNanos(2), b.ceilingNanos(3),
                        b.ceilingNanos(4), b.ceilingNanos(5), b.ceilingNanos(6), b.ceilingNanos(62)));
        assertEquals(30 * S, b.ceilingNanos(Integer.MAX_VALUE));

        Random r = new Random(1);
        long min = Long.MAX_VALUE;
        long max = 0;
        double sum = 0;
        int n = 10_000;
        for (int i = 0; i < n; i++) {
            long d = b.delayNanos(10, r);
            assertTrue(d >= 0 && d <= 30 * S, "delay " + d);
            min = Math.min(min, d);
            max = Math.max(max, d);
            sum += d;
        }
        assertTrue(min < 1 * S && max > 29 * S, "spread over the whole range: " + min + ".." + max);
        assertEquals(15.0, sum / n / S, 0.5, "uniform: mean half the ceiling");
        assertEquals(new Random(3).nextLong(2 * S + 1), b.delayNanos(2, new Random(3)), "deterministic per seed");
    }

    @Test
    void retriesTheSameBatchUntilDeliveredThenKeepsOrderAndQuarantinesRejects() throws Exception {
        var sender = new ScriptedSender()
                .on(1, new SendResult.Retryable("UNAVAILABLE"), new SendResult.Retryable("reset"),
                        new SendResult.Retryable("timeout"))
                .on(3, new SendResult.Rejected("grpc-status 3 INVALID_ARGUMENT: labels lack __name__"));
        try (Spool spool = spool(4); LogCapture log = new LogCapture("dev.loupe.agent.ship")) {
            DeliveryLoop loop = loop(spool, sender);
            Thread t = Thread.ofPlatform().start(loop);
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (spool.stats().batches() > 0 && System.nanoTime() < until) {
                Thread.sleep(5);
            }
            loop.stop();
            t.join(5_000);
            assertFalse(t.isAlive(), "stop() ends an idle loop at once");

            assertEquals(List.of(1L, 1L, 1L, 1L, 2L, 3L, 4L), sender.sent);
            assertEquals(3, sleeps.size());
            for (int i = 0; i < 3; i++) {
                long ceiling = DeliveryLoop.Backoff.DEFAULT.ceilingNanos(i);
                assertTrue(sleeps.get(i) >= 0 && sleeps.get(i) <= ceiling, "sleep " + i + " = " + sleeps.get(i));
            }
            assertEquals(new DeliveryLoop.Stats(3, 3, 4, 3, 1), loop.stats());
            String reason = Files.readString(root.resolve("parca/quarantine/00000000000000000003.reason"));
            assertEquals("grpc-status 3 INVALID_ARGUMENT: labels lack __name__\n", reason);
            assertTrue(Files.exists(root.resolve("parca/quarantine/00000000000000000003.batch")));

            List<String> lines = log.lines();
            assertEquals(1, lines.stream().filter(l -> l.contains("rejected for good")
                    && l.contains("labels lack __name__")).count(), log.text());
            assertEquals(1, lines.stream().filter(l -> l.contains("will retry")).count(), "one line per outage");
            assertEquals(1, lines.stream().filter(l -> l.contains("delivering again after 3 failed attempt(s)")).count());
        }
    }

    @Test
    void aThrowingSenderIsARetryableFailure() throws Exception {
        AtomicBoolean thrown = new AtomicBoolean();
        BatchSender sender = (batch, timeout) -> {
            if (thrown.compareAndSet(false, true)) {
                throw new IllegalStateException("sink bug");
            }
            return SendResult.DELIVERED;
        };
        try (Spool spool = spool(1)) {
            DeliveryLoop loop = loop(spool, sender);
            assertEquals(DeliveryLoop.Step.RETRY, loop.attempt(Duration.ofSeconds(1)));
            assertEquals(1, spool.stats().batches());
            assertEquals(DeliveryLoop.Step.DELIVERED, loop.attempt(Duration.ofSeconds(1)));
            assertEquals(DeliveryLoop.Step.IDLE, loop.attempt(Duration.ofSeconds(1)));
        }
    }

    @Test
    void drainOnceTriesEachBatchOnceInOrderAndStopsAtTheFirstRetryableFailure() throws Exception {
        var sender = new ScriptedSender()
                .on(2, new SendResult.Rejected("PERMISSION_DENIED"))
                .on(4, new SendResult.Retryable("UNAVAILABLE"));
        try (Spool spool = spool(5)) {
            DeliveryLoop loop = loop(spool, sender);
            loop.stop();
            var result = loop.drainOnce(nanos.get() + 60 * S);
            assertEquals(new DeliveryLoop.DrainResult(2, 1, 2), result);
            assertEquals(List.of(1L, 2L, 3L, 4L), sender.sent);
            assertEquals(List.of(4L, 5L), spool.sequences(), "the rest stays spooled, in order");
            assertTrue(sleeps.isEmpty(), "no backoff on the way out");
        }
    }

    @Test
    void drainOnceKeepsWithinTheDeadline() throws Exception {
        var sender = new ScriptedSender();
        sender.duringSend = () -> nanos.addAndGet(4 * S);
        try (Spool spool = spool(5)) {
            DeliveryLoop loop = loop(spool, sender);
            var result = loop.drainOnce(nanos.get() + 6 * S);
            assertEquals(List.of(Duration.ofSeconds(6), Duration.ofSeconds(2)), sender.timeouts,
                    "each send gets what is left of the deadline, at most the send timeout");
            assertEquals(new DeliveryLoop.DrainResult(2, 0, 3), result);
            assertEquals(List.of(3L, 4L, 5L), spool.sequences());
        }
    }

    @Test
    void stopWaitsForTheSendInFlightWithoutInterruptingIt() throws Exception {
        CountDownLatch inSend = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean interrupted = new AtomicBoolean();
        BatchSender sender = (batch, timeout) -> {
            inSend.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                interrupted.set(true);
            }
            interrupted.compareAndSet(false, Thread.currentThread().isInterrupted());
            return SendResult.DELIVERED;
        };
        try (Spool spool = spool(2)) {
            DeliveryLoop loop = loop(spool, sender);
            Thread t = Thread.ofPlatform().start(loop);
            assertTrue(inSend.await(10, TimeUnit.SECONDS));
            loop.stop();
            t.join(50);
            assertTrue(t.isAlive(), "still sending");
            release.countDown();
            t.join(5_000);
            assertFalse(t.isAlive());
            assertFalse(interrupted.get(), "a send in flight is never interrupted");
            assertEquals(List.of(2L), spool.sequences(), "the confirmed batch is gone, the next one stays");
        }
    }
}
