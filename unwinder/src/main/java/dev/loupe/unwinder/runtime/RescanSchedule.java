package dev.loupe.unwinder.runtime;

import java.util.concurrent.TimeUnit;

/**
 * When a JIT runtime's code is read again. JIT code comes and goes in bursts (start-up, a phase change): a runtime is
 * read {@link #RESCAN_NANOS} after a read that found a change, and twice as long after each read that found none (up
 * to {@link #MAX_RESCAN_NANOS}). A hint (a sample showed code nothing described, or a name was missed) brings the next
 * read to {@link #HINTED_RESCAN_NANOS} after the last; a hinted read that found nothing new makes hints count for
 * nothing during {@link #HINTS_IGNORED_NANOS}, and the back-off goes on from where the hint interrupted it (frames no
 * read can explain must not keep a process read four times a second, nor every few seconds). And a read never starts sooner than {@link #COST_FACTOR} times the last one's duration after it: a big
 * process's read takes tens of milliseconds, so reads take at most about 1 % of a core a process.
 *
 * <p>Not thread-safe: its owner synchronizes.
 */
public final class RescanSchedule {
    public static final long RESCAN_NANOS = TimeUnit.SECONDS.toNanos(1);
    public static final long MAX_RESCAN_NANOS = TimeUnit.SECONDS.toNanos(30);
    public static final long HINTED_RESCAN_NANOS = TimeUnit.MILLISECONDS.toNanos(250);
    public static final long HINTS_IGNORED_NANOS = TimeUnit.SECONDS.toNanos(10);
    public static final int COST_FACTOR = 100;

    private boolean started;
    private long last;
    private long lastCost;
    private long after = RESCAN_NANOS;
    /** {@link #after} before a hint brought it in: what a hinted read that finds nothing backs off from. */
    private long unhinted = RESCAN_NANOS;
    private boolean hinted;
    private long hintsIgnoredFrom = Long.MIN_VALUE / 2;

    /** Whether a read is due now (always before the first). */
    public boolean due(long now) {
        return !started || now - last >= Math.max(after, COST_FACTOR * lastCost);
    }

    /** A sample or a lookup showed code the last read did not: read again soon (unless hints are being ignored). */
    public void hint(long now) {
        if (now - hintsIgnoredFrom >= HINTS_IGNORED_NANOS) {
            if (!hinted) {
                unhinted = after;
            }
            after = Math.min(after, HINTED_RESCAN_NANOS);
            hinted = true;
        }
    }

    /** A read that started at {@code start} ended at {@code end}; {@code changed}: it found the code changed. */
    public void read(long start, long end, boolean changed) {
        started = true;
        last = start;
        lastCost = Math.max(0, end - start);
        if (changed) {
            after = RESCAN_NANOS;
        } else {
            // A hinted read that found nothing goes on from the back-off it interrupted, not from the hint's 250 ms:
            // else a process whose samples keep showing code no read explains is read every 1, 2, 4, 8 s, each 10 s.
            after = Math.min(MAX_RESCAN_NANOS, Math.max(RESCAN_NANOS, (hinted ? unhinted : after) * 2));
            if (hinted) {
                hintsIgnoredFrom = start;
            }
        }
        hinted = false;
    }

    /** When the last read started. */
    public long last() {
        return last;
    }
}
