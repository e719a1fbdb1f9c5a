package dev.loupe.agent.service;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

class StatusLineTest {
    private static final long S = TimeUnit.SECONDS.toNanos(1);

    @Test
    void theRateIsOverTheTimeSinceThePreviousLine() {
        AtomicLong now = new AtomicLong(500 * S);
        StatusLine line = new StatusLine(now::get);
        now.addAndGet(10 * S);
        List<StatusLine.SinkState> sinks = List.of(new StatusLine.SinkState("file", true, ""),
                new StatusLine.SinkState("parca", false, "connection refused"));
        assertEquals("1234 samples/s from 87 processes; sinks: file ok, parca DOWN (connection refused)",
                line.next(12_340, 87, sinks));
        now.addAndGet(4 * S);
        assertEquals("2.5 samples/s from 1 process; sinks: file ok (spool 3 batches)",
                line.next(12_350, 1, List.of(new StatusLine.SinkState("file", true, "spool 3 batches"))));
        now.addAndGet(S);
        assertEquals("0.0 samples/s from 0 processes; sinks: none", line.next(5, 0, List.of()),
                "a counter that went back is no negative rate");
        assertEquals("0.0 samples/s from 0 processes; sinks: none", line.next(50, 0, List.of()),
                "no time has passed: no rate");
    }

    @Test
    void ratesRoundToWholeSamplesFromTen() {
        assertEquals("9.9 samples/s from 2 processes; sinks: none", StatusLine.format(9.94, 2, List.of()));
        assertEquals("10 samples/s from 2 processes; sinks: none", StatusLine.format(9.96, 2, List.of()));
        assertEquals("19999 samples/s from 2 processes; sinks: none", StatusLine.format(19_999.4, 2, List.of()));
    }
}
