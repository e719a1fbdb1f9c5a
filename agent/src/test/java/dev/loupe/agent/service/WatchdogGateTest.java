package dev.loupe.agent.service;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class WatchdogGateTest {
    private static final long S = TimeUnit.SECONDS.toNanos(1);
    private static final WatchdogGate.Decision PING = new WatchdogGate.Decision(true, "");
    private static final WatchdogGate.Decision NOT_DUE = new WatchdogGate.Decision(false, "");

    @Test
    void pingsAtHalfTheTimeoutWhileThePollLoopProgresses() {
        AtomicLong now = new AtomicLong(1_000 * S);
        WatchdogGate gate = new WatchdogGate(Duration.ofSeconds(30), Duration.ofSeconds(60), now::get);
        assertEquals(PING, gate.check(1, List.of()), "the first check pings at once");
        now.addAndGet(14 * S);
        assertEquals(NOT_DUE, gate.check(2, List.of()));
        now.addAndGet(S);
        assertEquals(PING, gate.check(3, List.of()), "15 s = half of 30 s");
        now.addAndGet(S);
        assertEquals(NOT_DUE, gate.check(4, List.of()));
        now.addAndGet(14 * S);
        assertEquals(PING, gate.check(5, List.of()));
    }

    @Test
    void aPollLoopThatStandsStillLongerThanTheLimitIsNotVouchedFor() {
        AtomicLong now = new AtomicLong(0);
        WatchdogGate gate = new WatchdogGate(Duration.ofSeconds(10), Duration.ofSeconds(20), now::get);
        assertEquals(PING, gate.check(7, List.of()));
        now.addAndGet(20 * S);
        assertEquals(PING, gate.check(7, List.of()), "still for exactly the limit: not yet stuck");
        now.addAndGet(S);
        assertEquals(new WatchdogGate.Decision(false, "no poll completed for 21 s"), gate.check(7, List.of()));
        now.addAndGet(9 * S);
        assertEquals(new WatchdogGate.Decision(false, "no poll completed for 30 s"), gate.check(7, List.of()));
        assertEquals(PING, gate.check(8, List.of()), "progress again: healthy, and the last ping is 10 s old");
    }

    @Test
    void aDeadSinkThreadWithholdsThePing() {
        AtomicLong now = new AtomicLong(0);
        WatchdogGate gate = new WatchdogGate(Duration.ofSeconds(10), Duration.ofSeconds(60), now::get);
        WatchdogGate.Decision one = gate.check(1, List.of("parca"));
        assertEquals(new WatchdogGate.Decision(false, "sink thread parca died"), one);
        assertEquals(false, one.healthy());
        assertEquals(new WatchdogGate.Decision(false, "sink threads file, kafka died"),
                gate.check(2, List.of("file", "kafka")));
        WatchdogGate.Decision ok = gate.check(3, List.of());
        assertEquals(PING, ok, "never pinged before: due at once");
        assertEquals(true, ok.healthy());
    }

    @Test
    void aStuckLoopIsNamedBeforeADeadSink() {
        AtomicLong now = new AtomicLong(0);
        WatchdogGate gate = new WatchdogGate(Duration.ofSeconds(10), Duration.ofSeconds(5), now::get);
        gate.check(1, List.of());
        now.addAndGet(6 * S);
        assertEquals(new WatchdogGate.Decision(false, "no poll completed for 6 s"), gate.check(1, List.of("file")));
    }

    @Test
    void limitsMustBePositive() {
        assertThrows(IllegalArgumentException.class, () -> new WatchdogGate(Duration.ZERO, Duration.ofSeconds(1), () -> 0));
        assertThrows(IllegalArgumentException.class, () -> new WatchdogGate(Duration.ofSeconds(1), Duration.ofSeconds(-1), () -> 0));
    }
}
