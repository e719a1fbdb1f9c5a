package dev.loupe.agent.logging;

import org.junit.jupiter.api.Test;

import java.time.ZonedDateTime;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

class LogFormatTest {
    private static final ZonedDateTime T = ZonedDateTime.parse("2026-11-25T03:04:05.678Z");

    @Test
    void underTheJournalLinesCarryNoTimeOfTheirOwn() {
        String f = LogFormat.format(Map.of("JOURNAL_STREAM", "8:12345"));
        assertEquals("INFO dev.loupe.agent.Main: profiling\n", String.format(f, T, "src", "dev.loupe.agent.Main", "INFO", "profiling", ""));
    }

    @Test
    void elsewhereEachLineStartsWithItsTime() {
        String f = LogFormat.format(Map.of());
        assertEquals("2026-11-25T03:04:05.678+0000 WARNING x: y\n", String.format(f, T, "src", "x", "WARNING", "y", ""));
    }
}
