package dev.loupe.unwinder.runtime;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RescanScheduleTest {
    private static final long S = TimeUnit.SECONDS.toNanos(1);

    /** Reads (start times, in seconds) over {@code seconds} of a process whose reads never find a change. */
    private static List<Long> reads(int seconds, boolean hintEverySecond) {
        RescanSchedule s = new RescanSchedule();
        List<Long> at = new ArrayList<>();
        for (long t = 0; t <= (long) seconds * 10; t++) { // every 100 ms
            long now = t * S / 10;
            if (hintEverySecond && t % 10 == 0) {
                s.hint(now);
            }
            if (s.due(now)) {
                at.add(now / S);
                s.read(now, now, false);
            }
        }
        return at;
    }

    @Test
    void readsThatFindNothingBackOffTo30Seconds() {
        assertEquals(List.of(0L, 2L, 6L, 14L, 30L, 60L, 90L), reads(100, false));
    }

    /**
     * Samples that keep showing code no read explains: one hinted read, then 10 s of hints ignored, and the back-off
     * goes on where it was (it restarted at 1 s after each hinted read: 41 reads in 100 s, found by the fuzz target).
     */
    @Test
    void hintsThatFindNothingDoNotUndoTheBackOff() {
        List<Long> at = reads(100, true);
        assertTrue(at.size() <= 16, at.size() + " reads: " + at);
        for (int i = 1; i < at.size(); i++) {
            assertTrue(at.get(i) - at.get(i - 1) >= 1, "reads at " + at);
        }
        assertTrue(at.getLast() - at.get(at.size() - 2) >= 8, "the back-off does not grow: " + at);
    }

    @Test
    void aChangeBringsTheNextReadToOneSecond() {
        RescanSchedule s = new RescanSchedule();
        s.read(0, 0, false);
        s.read(S, S, false); // after: 4 s
        s.read(5 * S, 5 * S, true);
        assertTrue(s.due(6 * S));
    }

    @Test
    void aReadWaitsAHundredTimesItsDuration() {
        RescanSchedule s = new RescanSchedule();
        s.read(0, S / 10, true); // a read of 100 ms
        s.hint(S);
        assertTrue(!s.due(5 * S) && s.due(10 * S));
    }
}
