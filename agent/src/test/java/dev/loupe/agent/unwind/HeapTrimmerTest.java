package dev.loupe.agent.unwind;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

class HeapTrimmerTest {
    private static final long S = TimeUnit.SECONDS.toNanos(1);

    @Test
    void collectsOnceABurstIsOverAndAtMostOncePerGap() {
        AtomicLong now = new AtomicLong(1_000 * S);
        AtomicInteger gcs = new AtomicInteger();
        HeapTrimmer t = new HeapTrimmer(now::get, gcs::incrementAndGet);
        t.tick();
        assertEquals(0, gcs.get(), "no burst, no collection");
        t.burst();
        now.addAndGet(3 * S);
        t.burst(); // the burst goes on
        now.addAndGet(4 * S);
        t.tick();
        assertEquals(0, gcs.get(), "4 s after the last build: not quiet yet");
        now.addAndGet(1 * S);
        t.tick();
        assertEquals(1, gcs.get(), "5 s after the last build");
        t.tick();
        assertEquals(1, gcs.get(), "once per burst");
        now.addAndGet(10 * S);
        t.burst();
        now.addAndGet(20 * S);
        t.tick();
        assertEquals(1, gcs.get(), "a second burst within a minute of the last collection waits");
        now.addAndGet(30 * S);
        t.tick();
        assertEquals(2, gcs.get(), "and is collected once a minute has passed");
        assertEquals(2, t.trims());
    }

    @Test
    void buildsThatNeverStopAreCollectedAfterAMinute() {
        AtomicLong now = new AtomicLong(5_000 * S);
        AtomicInteger gcs = new AtomicInteger();
        HeapTrimmer t = new HeapTrimmer(now::get, gcs::incrementAndGet);
        for (int i = 0; i < 59; i++) {
            t.burst();
            now.addAndGet(S);
            t.tick();
        }
        assertEquals(0, gcs.get(), "59 s of builds a second apart: never quiet");
        t.burst();
        now.addAndGet(S);
        t.tick();
        assertEquals(1, gcs.get(), "60 s after the first build of the burst");
    }
}
