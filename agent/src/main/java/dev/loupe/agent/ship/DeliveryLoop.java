package dev.loupe.agent.ship;

import java.io.IOException;
import java.time.Duration;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;

/**
 * Drains a {@link Spool} into a {@link BatchSender}, oldest batch first. A batch leaves the spool only
 * when the sink confirmed it ({@link SendResult.Delivered}) or rejected it for good
 * ({@link SendResult.Rejected}: quarantined, logged once with the sink's reason); a retryable failure
 * keeps the same batch at the head and waits an exponential backoff with full jitter (capped), so
 * order is kept and nothing is skipped. A sink that stays away fills the spool, whose cap then drops
 * the oldest batches (counted and logged there).
 *
 * <p>{@link #run()} is the delivery thread's body until {@link #stop()}; {@link #drainOnce} is the
 * SIGTERM path: one last attempt per batch, in order, within a deadline, the rest left spooled.
 */
public final class DeliveryLoop implements Runnable {
    private static final System.Logger LOG = System.getLogger(DeliveryLoop.class.getName());
    /** How long an idle loop waits for a new batch before looking again. */
    private static final long IDLE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** Exponential backoff with full jitter: attempt n waits uniformly in [0, min(cap, base * 2^n)]. */
    public record Backoff(Duration base, Duration cap) {
        public static final Backoff DEFAULT = new Backoff(Duration.ofMillis(500), Duration.ofSeconds(30));

        public Backoff {
            if (base.isNegative() || base.isZero() || cap.compareTo(base) < 0) {
                throw new IllegalArgumentException("backoff needs 0 < base <= cap, got " + base + ", " + cap);
            }
        }

        /** The ceiling of the wait before retry number {@code failures} (0 = after the first failure). */
        public long ceilingNanos(int failures) {
            long base = this.base.toNanos();
            long cap = this.cap.toNanos();
            int shift = Math.min(failures, 62);
            return base > (cap >> shift) ? cap : Math.min(cap, base << shift);
        }

        public long delayNanos(int failures, RandomGenerator random) {
            return random.nextLong(ceilingNanos(failures) + 1);
        }
    }

    /** Blocks for a while; interrupted when the loop is stopped. */
    @FunctionalInterface
    public interface Sleeper {
        void sleepNanos(long nanos) throws InterruptedException;

        Sleeper SYSTEM = TimeUnit.NANOSECONDS::sleep;
    }

    /**
     * Counters since start. {@code retries} counts sends of a batch that had failed before;
     * {@code failedAttempts} every send that did not deliver (retryable or rejected).
     */
    public record Stats(long delivered, long deliveredBytes, long failedAttempts, long retries, long rejected) {}

    /** What {@link #drainOnce} achieved; {@code remaining} batches stay spooled for the next start. */
    public record DrainResult(int delivered, int rejected, long remaining) {}

    /** Outcome of one attempt on the head of the spool. */
    enum Step { IDLE, DELIVERED, REJECTED, RETRY }

    private final Spool spool;
    private final BatchSender sender;
    private final Backoff backoff;
    private final Duration sendTimeout;
    private final LongSupplier nanoTime;
    private final Sleeper sleeper;
    private final RandomGenerator random;

    private final AtomicLong delivered = new AtomicLong();
    private final AtomicLong deliveredBytes = new AtomicLong();
    private final AtomicLong failedAttempts = new AtomicLong();
    private final AtomicLong retries = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();

    /** Held for each attempt, so drainOnce waits for a send in flight instead of racing it. */
    private final Object attemptLock = new Object();
    // Guarded by attemptLock.
    private long failingSequence = -1;
    private int failureStreak;
    private long streakStartNanos;
    /** Confirmed by the sink but not yet deleted (the delete failed): never sent again. */
    private final Set<Long> confirmed = new HashSet<>();

    // Guarded by stateLock: the loop thread is interrupted only while it waits, never during a send or file I/O.
    private final Object stateLock = new Object();
    private boolean stopRequested;
    private boolean waiting;
    private Thread loopThread;

    public DeliveryLoop(Spool spool, BatchSender sender, Backoff backoff, Duration sendTimeout,
                        LongSupplier nanoTime, Sleeper sleeper, RandomGenerator random) {
        this.spool = spool;
        this.sender = sender;
        this.backoff = backoff;
        this.sendTimeout = sendTimeout;
        this.nanoTime = nanoTime;
        this.sleeper = sleeper;
        this.random = random;
    }

    /** Default backoff (0.5 s doubling to 30 s), system clock and sleep. */
    public static DeliveryLoop create(Spool spool, BatchSender sender, Duration sendTimeout) {
        return new DeliveryLoop(spool, sender, Backoff.DEFAULT, sendTimeout, System::nanoTime, Sleeper.SYSTEM,
                RandomGenerator.getDefault());
    }

    /** Delivers until {@link #stop()}. Meant to be a thread's whole body. */
    @Override
    public void run() {
        synchronized (stateLock) {
            loopThread = Thread.currentThread();
        }
        int failures = 0;
        try {
            while (true) {
                Step step;
                try {
                    step = attempt(sendTimeout);
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.WARNING, "sink " + spool.sinkName() + ": spool error: " + e.getMessage());
                    step = Step.RETRY;
                }
                switch (step) {
                    case DELIVERED, REJECTED -> failures = 0;
                    case IDLE -> {
                        failures = 0;
                        if (!waitUntilStopped(() -> spool.awaitBatch(IDLE_WAIT_NANOS))) {
                            return;
                        }
                    }
                    case RETRY -> {
                        long delay = backoff.delayNanos(failures, random);
                        failures = Math.min(failures + 1, 62);
                        if (!waitUntilStopped(() -> sleeper.sleepNanos(delay))) {
                            return;
                        }
                    }
                }
                synchronized (stateLock) {
                    if (stopRequested) {
                        return;
                    }
                }
            }
        } finally {
            synchronized (stateLock) {
                loopThread = null;
                Thread.interrupted();
            }
        }
    }

    private interface Wait {
        void await() throws InterruptedException;
    }

    /** Runs an interruptible wait; false if the loop should end. */
    private boolean waitUntilStopped(Wait wait) {
        synchronized (stateLock) {
            if (stopRequested) {
                return false;
            }
            waiting = true;
        }
        try {
            wait.await();
        } catch (InterruptedException e) {
            // stop() interrupted the wait; the state below says so.
        } finally {
            synchronized (stateLock) {
                waiting = false;
                Thread.interrupted();
            }
        }
        synchronized (stateLock) {
            return !stopRequested;
        }
    }

    /**
     * Asks {@link #run()} to return: at once if it is waiting, else after the send in flight (which is
     * never interrupted, so a batch the sink accepted is not left unconfirmed).
     */
    public void stop() {
        synchronized (stateLock) {
            stopRequested = true;
            if (waiting && loopThread != null) {
                loopThread.interrupt();
            }
        }
    }

    /**
     * One attempt on the oldest batch: delete it when delivered, quarantine it when rejected, keep it
     * when the failure is retryable.
     */
    Step attempt(Duration timeout) throws IOException {
        synchronized (attemptLock) {
            Optional<SpooledBatch> head = spool.oldest();
            while (head.isPresent() && confirmed.contains(head.get().sequence())) {
                // The sink has it; only the delete failed before. Retry the delete, never the send.
                long seq = head.get().sequence();
                spool.remove(seq);
                confirmed.remove(seq);
                head = spool.oldest();
            }
            if (head.isEmpty()) {
                return Step.IDLE;
            }
            SpooledBatch batch = head.get();
            if (batch.sequence() == failingSequence) {
                retries.incrementAndGet();
            }
            SendResult result;
            try {
                result = sender.send(batch, timeout);
            } catch (RuntimeException e) {
                result = new SendResult.Retryable("sender threw " + e);
            }
            return switch (result) {
                case SendResult.Delivered d -> {
                    delivered.incrementAndGet();
                    deliveredBytes.addAndGet(batch.payload().length);
                    if (failureStreak > 0) {
                        LOG.log(System.Logger.Level.INFO, "sink " + spool.sinkName() + ": delivering again after "
                                + failureStreak + " failed attempt(s) over "
                                + human(nanoTime.getAsLong() - streakStartNanos));
                    }
                    failureStreak = 0;
                    failingSequence = -1;
                    try {
                        spool.remove(batch.sequence());
                    } catch (IOException e) {
                        confirmed.add(batch.sequence());
                        throw e;
                    }
                    yield Step.DELIVERED;
                }
                case SendResult.Rejected r -> {
                    failedAttempts.incrementAndGet();
                    rejected.incrementAndGet();
                    failingSequence = -1;
                    LOG.log(System.Logger.Level.WARNING, "sink " + spool.sinkName() + ": batch " + batch.sequence()
                            + " rejected for good, moved to quarantine: " + r.reason());
                    spool.quarantine(batch.sequence(), r.reason());
                    yield Step.REJECTED;
                }
                case SendResult.Retryable r -> {
                    failedAttempts.incrementAndGet();
                    failingSequence = batch.sequence();
                    if (failureStreak++ == 0) {
                        streakStartNanos = nanoTime.getAsLong();
                        SpoolStats s = spool.stats();
                        LOG.log(System.Logger.Level.WARNING, "sink " + spool.sinkName() + ": batch " + batch.sequence()
                                + " not delivered, will retry (backoff up to " + human(backoff.cap().toNanos()) + "): "
                                + r.reason() + "; " + s.batches() + " batch(es), " + s.bytes() + " bytes spooled");
                    } else {
                        LOG.log(System.Logger.Level.DEBUG, "sink " + spool.sinkName() + ": attempt " + failureStreak
                                + " failed: " + r.reason());
                    }
                    yield Step.RETRY;
                }
            };
        }
    }

    /**
     * The last delivery before exit: attempts the waiting batches once each, in order, until one fails
     * retryably, the spool is empty or {@code deadlineNanos} (on the loop's clock) has come. Call after
     * {@link #stop()}; a send in flight is waited for first.
     */
    public DrainResult drainOnce(long deadlineNanos) {
        int sent = 0;
        int bad = 0;
        while (true) {
            long left = deadlineNanos - nanoTime.getAsLong();
            if (left <= 0) {
                break;
            }
            Duration timeout = Duration.ofNanos(Math.min(left, sendTimeout.toNanos()));
            Step step;
            try {
                step = attempt(timeout);
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "sink " + spool.sinkName() + ": spool error while draining: "
                        + e.getMessage());
                break;
            }
            if (step == Step.DELIVERED) {
                sent++;
            } else if (step == Step.REJECTED) {
                bad++;
            } else {
                break;
            }
        }
        long remaining = spool.stats().batches();
        LOG.log(System.Logger.Level.INFO, "sink " + spool.sinkName() + ": final delivery: " + sent + " delivered, "
                + bad + " rejected, " + remaining + " left in the spool for the next start");
        return new DrainResult(sent, bad, remaining);
    }

    private static String human(long nanos) {
        long millis = TimeUnit.NANOSECONDS.toMillis(nanos);
        return millis < 10_000 ? millis + " ms" : millis / 1000 + " s";
    }

    public Stats stats() {
        return new Stats(delivered.get(), deliveredBytes.get(), failedAttempts.get(), retries.get(), rejected.get());
    }
}
