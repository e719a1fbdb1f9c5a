package dev.loupe.agent.unwind;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

class RegistrationDelayTest {
    @Test
    void bucketsByUpperBoundForProcessesStartedAfterTheAgent() {
        AtomicLong now = new AtomicLong(1000); // the agent starts 10 s after boot
        RegistrationDelay d = new RegistrationDelay(now::get);
        now.set(1200);
        d.registered(1000); // as old as the agent: not counted
        d.registered(900);  // older
        d.registered(1190); // 100 ms: the 0.1 bucket (bounds are inclusive)
        d.registered(1189); // 110 ms: the 0.25 bucket
        d.registered(1200); // 0 ms: the first bucket
        now.set(3000);
        d.registered(1001); // 19.99 s: beyond the last bound
        now.set(1100);
        d.registered(1150); // "started" after now (clocks read at different times): not counted
        UnwindTableUploader.DelayHistogram h = d.snapshot();
        assertArrayEquals(new double[] {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}, h.bounds());
        assertArrayEquals(new long[] {1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1}, h.counts());
        assertEquals(4, h.count());
        assertEquals(0.1 + 0.11 + 19.99, h.sumSeconds(), 1e-9);
        assertEquals(19.99, h.maxSeconds(), 1e-9);
    }

    @Test
    void nothingIsRecordedWithoutABootClock() {
        RegistrationDelay d = new RegistrationDelay(() -> -1);
        d.registered(5);
        assertEquals(0, d.snapshot().count());
    }

    /**
     * The boot clock follows the monotonic clock from uptime's offset, read once and again after a minute (a suspended
     * host's monotonic clock stops while uptime does not): no file read per registration.
     */
    @Test
    void theBootClockFollowsTheMonotonicClockAndResyncsEachMinute(@TempDir Path proc) throws Exception {
        AtomicLong nanos = new AtomicLong(5_000_000_000L);
        java.util.function.LongSupplier clock = RegistrationDelay.bootClock(proc, nanos::get);
        assertEquals(-1, clock.getAsLong(), "no uptime yet");
        Files.writeString(proc.resolve("uptime"), "100.00 1.00\n");
        assertEquals(10_000, clock.getAsLong());
        Files.writeString(proc.resolve("uptime"), "999.00 1.00\n"); // not read again within the minute
        nanos.addAndGet(250_000_000L);
        assertEquals(10_025, clock.getAsLong());
        nanos.addAndGet(60_000_000_000L); // a minute on: uptime read again (the host was suspended meanwhile)
        assertEquals(99_900, clock.getAsLong());
        nanos.addAndGet(10_000_000L);
        assertEquals(99_901, clock.getAsLong());
    }

    @Test
    void bootTicksComeFromUptimeInClockTicks(@TempDir Path proc) throws Exception {
        assertEquals(-1, RegistrationDelay.bootTicks(proc), "no uptime file");
        Files.writeString(proc.resolve("uptime"), "12345.67 40000.00\n");
        assertEquals(1_234_567, RegistrationDelay.bootTicks(proc));
        Files.writeString(proc.resolve("uptime"), "garbage\n");
        assertEquals(-1, RegistrationDelay.bootTicks(proc));
    }
}
