package dev.loupe.agent.sink;

import dev.loupe.agent.logging.RateLimitedLog;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * One sink's bounded queue and thread. {@link #offer} never blocks the caller (the sampling thread):
 * when the queue is full the oldest batch is dropped and counted, so a stalled sink costs at most
 * {@code capacity} batches of heap. The sink's thread writes batches in order.
 */
public final class SinkRunner {
    private static final System.Logger LOG = System.getLogger(SinkRunner.class.getName());
    private static final long ONE_MINUTE = TimeUnit.MINUTES.toNanos(1);

    private final ProfileSink sink;
    private final int capacity;
    private final LongSupplier nanoTime;
    private final ArrayDeque<ProfileBatch> queue = new ArrayDeque<>();
    private final Thread thread;
    private final AtomicLong written = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong bytesWritten = new AtomicLong();
    private final RateLimitedLog dropLog;
    private final RateLimitedLog failLog;
    private boolean stopping;
    private boolean busy;

    public SinkRunner(ProfileSink sink, int capacity, LongSupplier nanoTime) {
        if (capacity < 1) {
            throw new IllegalArgumentException("sink queue capacity must be at least 1, got " + capacity);
        }
        this.sink = sink;
        this.capacity = capacity;
        this.nanoTime = nanoTime;
        this.dropLog = new RateLimitedLog(LOG, System.Logger.Level.WARNING, ONE_MINUTE, nanoTime);
        this.failLog = new RateLimitedLog(LOG, System.Logger.Level.ERROR, ONE_MINUTE, nanoTime);
        this.thread = new Thread(this::run, "loupe-sink-" + sink.name());
        this.thread.setDaemon(true);
        this.thread.start();
    }

    public String name() {
        return sink.name();
    }

    /** Queues a batch; if the queue is full, drops the oldest queued batch (counted) to make room. */
    public void offer(ProfileBatch batch) {
        ProfileBatch evicted = null;
        synchronized (this) {
            if (stopping) {
                dropped.incrementAndGet();
                return;
            }
            if (queue.size() >= capacity) {
                evicted = queue.removeFirst();
                dropped.incrementAndGet();
            }
            queue.addLast(batch);
            notifyAll();
        }
        if (evicted != null) {
            dropLog.log("sink " + sink.name() + " is not keeping up: dropped the oldest queued profiles (interval "
                    + evicted.sequence() + ", " + evicted.bytes() + " bytes); queue capacity " + capacity);
        }
    }

    private void run() {
        while (true) {
            ProfileBatch b;
            synchronized (this) {
                while (queue.isEmpty() && !stopping) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        return; // stop() gave up waiting for us
                    }
                }
                if (queue.isEmpty()) {
                    return;
                }
                b = queue.removeFirst();
                busy = true;
            }
            try {
                sink.write(b);
                written.incrementAndGet();
                bytesWritten.addAndGet(b.bytes());
            } catch (Exception e) {
                failed.incrementAndGet();
                failLog.log("sink " + sink.name() + " failed to write interval " + b.sequence() + ": " + e);
            } finally {
                synchronized (this) {
                    busy = false;
                    notifyAll();
                }
            }
        }
    }

    /**
     * Stops taking batches and lets the sink write what is queued until {@code deadlineNanos} (monotonic);
     * what is left then is dropped, counted and logged. Closes the sink.
     */
    public void stop(long deadlineNanos) {
        synchronized (this) {
            stopping = true;
            notifyAll();
            while ((busy || !queue.isEmpty()) && nanoTime.getAsLong() < deadlineNanos) {
                long waitMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - nanoTime.getAsLong()));
                try {
                    wait(Math.min(waitMs, 100));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            if (!queue.isEmpty()) {
                int left = queue.size();
                dropped.addAndGet(left);
                queue.clear();
                LOG.log(System.Logger.Level.WARNING, "sink " + sink.name() + " did not finish before the stop timeout: "
                        + left + " queued interval(s) dropped");
            }
        }
        thread.interrupt();
        try {
            thread.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            sink.close(deadlineNanos);
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "closing sink " + sink.name() + ": " + e);
        }
    }

    /** False once the sink's thread has ended: before {@link #stop}, that means it died. */
    public boolean threadAlive() {
        return thread.isAlive();
    }

    public synchronized SinkStats stats() {
        return new SinkStats(sink.name(), written.get(), failed.get(), dropped.get(), queue.size(), bytesWritten.get(),
                sink.remoteStats());
    }
}
