package dev.loupe.agent.unwind;

import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Gives the heap a burst of table building grew back to the OS. Compiling a large binary's unwind table
 * (libjvm: 231 k rows) makes tens of MB of short-lived garbage; the serial collector expands the heap for
 * it and, between full collections, keeps it committed and resident. Once no table has been built for
 * {@link #QUIET} (or builds have gone on for {@link #MAX_PENDING}), one full collection lets the launcher's
 * {@code -XX:MaxHeapFreeRatio} shrink the heap: an always-on agent's steady RSS is then its live set, not
 * its worst burst. At most one per {@link #MIN_GAP}: a full collection of the agent's ~30 MB heap costs
 * tens of ms of CPU, so a host that keeps starting new binaries pays at most ~0.1 % of a core for it.
 */
final class HeapTrimmer {
    static final long QUIET = TimeUnit.SECONDS.toNanos(5);
    static final long MAX_PENDING = TimeUnit.SECONDS.toNanos(60);
    static final long MIN_GAP = TimeUnit.SECONDS.toNanos(60);

    private final LongSupplier nanoTime;
    private final Runnable fullGc;
    private long lastBurst;
    private long firstPending;
    private boolean pending;
    private long lastTrim;
    private boolean trimmedOnce;
    private long trims;

    HeapTrimmer(LongSupplier nanoTime, Runnable fullGc) {
        this.nanoTime = nanoTime;
        this.fullGc = fullGc;
    }

    /** The JVM's own full collection. */
    static HeapTrimmer system(LongSupplier nanoTime) {
        return new HeapTrimmer(nanoTime, System::gc);
    }

    /** A table was built (its garbage is on the heap now). */
    synchronized void burst() {
        lastBurst = nanoTime.getAsLong();
        if (!pending) {
            firstPending = lastBurst;
            pending = true;
        }
    }

    /** Called often from one thread; collects when a burst has been over for {@link #QUIET}. */
    void tick() {
        long now = nanoTime.getAsLong();
        synchronized (this) {
            boolean over = now - lastBurst >= QUIET || now - firstPending >= MAX_PENDING;
            if (!pending || !over || (trimmedOnce && now - lastTrim < MIN_GAP)) {
                return;
            }
            pending = false;
            lastTrim = now;
            trimmedOnce = true;
            trims++;
        }
        fullGc.run();
    }

    synchronized long trims() {
        return trims;
    }
}
