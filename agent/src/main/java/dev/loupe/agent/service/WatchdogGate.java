package dev.loupe.agent.service;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Decides when to send {@code WATCHDOG=1}: at half the watchdog timeout (systemd's advice), and only while
 * the agent does its work. A stalled poll loop or a dead sink thread withholds the ping, so systemd
 * restarts an agent that is up but no longer profiling, instead of a liveness thread vouching for it.
 *
 * <p>Progress is a counter that advances whenever the poll loop completes a poll, not the sample count:
 * an idle host can go minutes without a sample while the agent is perfectly healthy. Call {@link #check}
 * from a thread other than the poll loop (a timer), so that a stuck loop is seen and named.
 */
public final class WatchdogGate {
    /** What to do now: ping or not, and why not when the agent is unhealthy ("" otherwise). */
    public record Decision(boolean ping, String problem) {
        public Decision {
            Objects.requireNonNull(problem, "problem");
        }

        public boolean healthy() {
            return problem.isEmpty();
        }
    }

    private final long pingEvery;
    private final long stallLimit;
    private final LongSupplier monotonicNanos;
    private long lastProgress;
    private long lastProgressAt;
    private boolean seenProgress;
    private long lastPingAt;
    private boolean pinged;

    /**
     * @param watchdogTimeout systemd's {@code WATCHDOG_USEC}; pings go out at half of it
     * @param stallLimit      how long the progress counter may stand still before the agent counts as stuck
     */
    public WatchdogGate(Duration watchdogTimeout, Duration stallLimit, LongSupplier monotonicNanos) {
        if (watchdogTimeout.isNegative() || watchdogTimeout.isZero() || stallLimit.isNegative() || stallLimit.isZero()) {
            throw new IllegalArgumentException("watchdog timeout and stall limit must be positive: "
                    + watchdogTimeout + ", " + stallLimit);
        }
        this.pingEvery = watchdogTimeout.toNanos() / 2;
        this.stallLimit = stallLimit.toNanos();
        this.monotonicNanos = Objects.requireNonNull(monotonicNanos, "monotonicNanos");
    }

    /**
     * The decision for now, given the poll loop's progress counter and the names of sink threads that have
     * died. The first call starts the stall clock.
     */
    public synchronized Decision check(long progress, List<String> deadSinkThreads) {
        long now = monotonicNanos.getAsLong();
        if (!seenProgress || progress != lastProgress) {
            lastProgress = progress;
            lastProgressAt = now;
            seenProgress = true;
        }
        long still = now - lastProgressAt;
        if (still > stallLimit) {
            return new Decision(false, "no poll completed for " + TimeUnit.NANOSECONDS.toSeconds(still) + " s");
        }
        if (!deadSinkThreads.isEmpty()) {
            return new Decision(false, "sink thread" + (deadSinkThreads.size() == 1 ? " " : "s ")
                    + String.join(", ", deadSinkThreads) + " died");
        }
        if (pinged && now - lastPingAt < pingEvery) {
            return new Decision(false, "");
        }
        pinged = true;
        lastPingAt = now;
        return new Decision(true, "");
    }
}
