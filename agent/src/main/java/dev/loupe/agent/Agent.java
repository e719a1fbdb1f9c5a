package dev.loupe.agent;

import dev.loupe.bpf.SamplerStats;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.unwinder.symbolize.Symbolizer;

import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The main loop: polls the sample source, symbolizes into the open profile windows, and every interval
 * hands a finished host-wide profile to the sinks (on their own thread). {@link #stop()} flushes the
 * partial last interval, so SIGTERM loses nothing.
 */
public final class Agent {
    private static final System.Logger LOG = System.getLogger(Agent.class.getName());
    private static final Duration POLL = Duration.ofMillis(100);

    private final SampleSource source;
    private final Symbolizer symbolizer;
    private final List<ProfileSink> sinks;
    private final InstantSource clock;
    private final long periodNanos;
    private final long intervalNanos;
    private final SampleProcessor processor;
    private final ExecutorService sinkThread;
    private final Thread loop;
    private final CountDownLatch stopped = new CountDownLatch(1);
    private final AtomicLong profilesWritten = new AtomicLong();
    private final AtomicLong sinkErrors = new AtomicLong();
    private final AtomicLong pollErrors = new AtomicLong();
    private volatile boolean running;
    private volatile long lastPollEpochNanos;
    private boolean stopRequested;

    public Agent(int frequencyHz, Duration interval, SampleSource source, Symbolizer symbolizer,
                 List<ProfileSink> sinks, InstantSource clock) {
        this.source = source;
        this.symbolizer = symbolizer;
        this.sinks = List.copyOf(sinks);
        this.clock = clock;
        this.periodNanos = 1_000_000_000L / frequencyHz;
        this.intervalNanos = interval.toNanos();
        this.processor = new SampleProcessor(symbolizer);
        this.sinkThread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "loupe-sink");
            t.setDaemon(true);
            return t;
        });
        this.loop = new Thread(this::run, "loupe-sampler");
    }

    long nowNanos() {
        var i = clock.instant();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    public synchronized void start() {
        running = true;
        lastPollEpochNanos = nowNanos();
        loop.start();
    }

    private void run() {
        ProfileWindow window = new ProfileWindow(periodNanos, nowNanos());
        processor.open(window);
        try {
            while (running) {
                try {
                    source.poll(POLL, processor);
                } catch (SampleSource.SampleSourceException | RuntimeException e) {
                    pollErrors.incrementAndGet();
                    LOG.log(System.Logger.Level.ERROR, "sampling poll failed: " + e.getMessage());
                    sleepQuietly(POLL);
                }
                long now = nowNanos();
                lastPollEpochNanos = now;
                if (now - window.startNanos() >= intervalNanos) {
                    window = rotate(window, now, true);
                }
            }
            try {
                source.poll(Duration.ZERO, processor); // what is already in the buffer belongs to this interval
            } catch (SampleSource.SampleSourceException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "final poll failed: " + e.getMessage());
            }
            rotate(window, nowNanos(), false);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "sampling loop died", t);
        } finally {
            stopped.countDown();
        }
    }

    private ProfileWindow rotate(ProfileWindow window, long now, boolean openNext) {
        ProfileWindow next = null;
        if (openNext) {
            next = new ProfileWindow(periodNanos, now);
            processor.open(next);
        }
        processor.close(window);
        Profile profile = window.finish(now);
        sinkThread.submit(() -> deliver(profile));
        return next;
    }

    private void deliver(Profile profile) {
        for (ProfileSink sink : sinks) {
            try {
                sink.write(profile);
                profilesWritten.incrementAndGet();
            } catch (Exception e) {
                sinkErrors.incrementAndGet();
                LOG.log(System.Logger.Level.ERROR, "sink " + sink.name() + " failed to write a profile: " + e);
            }
        }
    }

    /**
     * Collects a profile for {@code duration} (the /debug/pprof/profile endpoint). Returns early with what
     * it has if the agent stops meanwhile.
     */
    public Profile capture(Duration duration) throws InterruptedException {
        ProfileWindow w = new ProfileWindow(periodNanos, nowNanos());
        processor.open(w);
        try {
            stopped.await(duration.toNanos(), TimeUnit.NANOSECONDS);
        } finally {
            processor.close(w);
        }
        return w.finish(nowNanos());
    }

    /** Stops sampling, flushes the last partial interval to the sinks and waits for them. Idempotent. */
    public void stop() {
        synchronized (this) {
            if (stopRequested) {
                awaitStoppedQuietly();
                return;
            }
            stopRequested = true;
            running = false;
        }
        if (loop.isAlive()) {
            awaitStoppedQuietly();
        }
        sinkThread.shutdown();
        try {
            if (!sinkThread.awaitTermination(30, TimeUnit.SECONDS)) {
                LOG.log(System.Logger.Level.WARNING, "sinks did not finish within 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (ProfileSink sink : sinks) {
            sink.close();
        }
        source.close();
        try {
            symbolizer.close();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "closing symbolizer: " + e);
        }
    }

    private void awaitStoppedQuietly() {
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Blocks until the sampling loop has ended (after {@link #stop()}) or the timeout passes. */
    public boolean awaitStopped(Duration timeout) throws InterruptedException {
        return stopped.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** A snapshot for /healthz and /metrics. */
    public Status status() {
        long now = nowNanos();
        return new Status(running && loop.isAlive() && now - lastPollEpochNanos < 5_000_000_000L,
                source.stats(), processor.processed(), processor.emptyStacks(), profilesWritten.get(),
                sinkErrors.get(), pollErrors.get(), symbolizer.stats());
    }

    public record Status(boolean healthy, SamplerStats sampler, long samplesProcessed, long emptyStacks,
                         long profilesWritten, long sinkErrors, long pollErrors, Symbolizer.Stats symbolizer) {}

    private static void sleepQuietly(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
