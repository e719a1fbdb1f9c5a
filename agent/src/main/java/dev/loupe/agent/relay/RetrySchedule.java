package dev.loupe.agent.relay;

import dev.loupe.agent.ship.DeliveryLoop;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;

/**
 * When the relay may try Parca again: after each retryable failure a capped, jittered backoff
 * ({@link DeliveryLoop.Backoff}); at once again after Parca accepted. Logs the start and the end of an
 * outage, once each. Owned by the relay's thread; {@link #failedAttempts} is read from any.
 */
final class RetrySchedule {
    private static final System.Logger LOG = System.getLogger(KafkaRelay.class.getName());

    private final DeliveryLoop.Backoff backoff;
    private final LongSupplier nanoTime;
    private final RandomGenerator random;
    private final AtomicLong failedAttempts = new AtomicLong();
    /** Failures in a row; 0 = Parca accepts. */
    private int failures;
    private long nextAttemptNanos;
    private long failingSinceNanos;

    RetrySchedule(DeliveryLoop.Backoff backoff, LongSupplier nanoTime, RandomGenerator random) {
        this.backoff = backoff;
        this.nanoTime = nanoTime;
        this.random = random;
    }

    /** Nanoseconds until the next attempt may be made; 0 when it may be made now. */
    long nanosToWait() {
        return failures == 0 ? 0 : Math.max(0, nextAttemptNanos - nanoTime.getAsLong());
    }

    boolean due() {
        return nanosToWait() == 0;
    }

    /** Parca accepted (or rejected for good: it answers): the next attempt may come at once. */
    void succeeded() {
        if (failures > 0) {
            LOG.log(System.Logger.Level.INFO, "relay: Parca accepts again after " + failures + " failed attempt(s) over "
                    + TimeUnit.NANOSECONDS.toSeconds(nanoTime.getAsLong() - failingSinceNanos) + " s");
        }
        failures = 0;
    }

    /** A retryable failure with {@code pending} records waiting: the next attempt waits the backoff. */
    void failed(String reason, int pending) {
        failedAttempts.incrementAndGet();
        long now = nanoTime.getAsLong();
        if (failures == 0) {
            failingSinceNanos = now;
            LOG.log(System.Logger.Level.WARNING, "relay: Parca did not accept " + pending
                    + " buffered record(s), retrying with backoff up to " + backoff.cap().toSeconds() + " s: " + reason);
        }
        nextAttemptNanos = now + backoff.delayNanos(failures, random);
        failures = Math.min(failures + 1, 62);
    }

    long failedAttempts() {
        return failedAttempts.get();
    }
}
