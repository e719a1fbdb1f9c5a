package dev.loupe.agent.logging;

import java.util.function.LongSupplier;

/**
 * Logs the first occurrence of a recurring problem at once, then at most one line per period saying how
 * many were suppressed meanwhile, on a monotonic clock. Thread-safe.
 */
public final class RateLimitedLog {
    private final System.Logger log;
    private final System.Logger.Level level;
    private final long periodNanos;
    private final LongSupplier nanoTime;
    private long lastLoggedAt;
    private boolean loggedOnce;
    private long suppressed;

    public RateLimitedLog(System.Logger log, System.Logger.Level level, long periodNanos, LongSupplier nanoTime) {
        this.log = log;
        this.level = level;
        this.periodNanos = periodNanos;
        this.nanoTime = nanoTime;
    }

    /** Records one occurrence; logs {@code message} now or counts it as suppressed. */
    public void log(String message) {
        String line;
        synchronized (this) {
            long now = nanoTime.getAsLong();
            if (loggedOnce && now - lastLoggedAt < periodNanos) {
                suppressed++;
                return;
            }
            line = suppressed == 0 ? message
                    : message + " (" + suppressed + " more like it since the last report)";
            loggedOnce = true;
            lastLoggedAt = now;
            suppressed = 0;
        }
        log.log(level, line);
    }
}
