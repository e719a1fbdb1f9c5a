package dev.loupe.agent.unwind;

import dev.loupe.unwinder.proc.ProcessRegistry;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.LongSupplier;

/**
 * The registration-delay histogram ({@link UnwindTableUploader.DelayHistogram}): from a process's start to
 * its tables being live in the kernel, for processes that started after the agent. Both ends are clock
 * ticks since boot (the process's start from /proc/PID/stat, now from the monotonic clock set by /proc/uptime):
 * 10 ms resolution.
 * Recorded on the uploader's thread, read by /metrics.
 */
final class RegistrationDelay {
    private final LongSupplier bootTicks;
    private final long agentStartTicks;
    private final long[] counts = new long[UnwindTableUploader.DelayHistogram.BOUNDS.length + 1];
    private long count;
    private double sumSeconds;
    private double maxSeconds;

    /** {@code bootTicks}: clock ticks since boot now, or -1 if unknown; read once here for the agent's start. */
    RegistrationDelay(LongSupplier bootTicks) {
        this.bootTicks = bootTicks;
        this.agentStartTicks = bootTicks.getAsLong();
    }

    /**
     * Clock ticks since boot without a file read per registration: {@code nanoTime} (monotonic) plus its offset from
     * {@code uptime}, read again at most once a minute (CLOCK_MONOTONIC stops while the host is suspended, uptime does
     * not); -1 while uptime cannot be read.
     */
    static LongSupplier bootClock(Path procRoot, LongSupplier nanoTime) {
        long[] offset = {0, Long.MIN_VALUE}; // uptime - nanoTime (ns), when it was read (nanoTime); uploader thread only
        return () -> {
            long now = nanoTime.getAsLong();
            if (offset[1] == Long.MIN_VALUE || now - offset[1] >= 60_000_000_000L) {
                long ticks = bootTicks(procRoot);
                if (ticks < 0) {
                    return -1;
                }
                offset[0] = ticks * ProcessRegistry.NANOS_PER_TICK - now;
                offset[1] = now;
            }
            return (now + offset[0]) / ProcessRegistry.NANOS_PER_TICK;
        };
    }

    /** Clock ticks since boot from {@code uptime} in {@code procRoot}; -1 if unreadable. */
    static long bootTicks(Path procRoot) {
        try {
            String text = Files.readString(procRoot.resolve("uptime"));
            int sp = text.indexOf(' ');
            BigDecimal secs = new BigDecimal(sp < 0 ? text.trim() : text.substring(0, sp));
            return secs.multiply(BigDecimal.valueOf(1_000_000_000L / ProcessRegistry.NANOS_PER_TICK)).longValue();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** A process that started at {@code startTicks} was registered for the first time just now. */
    void registered(long startTicks) {
        if (agentStartTicks < 0 || startTicks <= agentStartTicks) {
            return; // running before the agent: its wait says nothing about the agent
        }
        long nowTicks = bootTicks.getAsLong();
        if (nowTicks >= startTicks) {
            record((nowTicks - startTicks) * ProcessRegistry.NANOS_PER_TICK / 1e9);
        }
    }

    private synchronized void record(double seconds) {
        double[] bounds = UnwindTableUploader.DelayHistogram.BOUNDS;
        int i = 0;
        while (i < bounds.length && seconds > bounds[i]) {
            i++;
        }
        counts[i]++;
        count++;
        sumSeconds += seconds;
        maxSeconds = Math.max(maxSeconds, seconds);
    }

    synchronized UnwindTableUploader.DelayHistogram snapshot() {
        return new UnwindTableUploader.DelayHistogram(UnwindTableUploader.DelayHistogram.BOUNDS.clone(), counts.clone(), count,
                sumSeconds, maxSeconds);
    }
}
