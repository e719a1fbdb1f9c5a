package dev.loupe.agent.latencydiff;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class DiffTableTest {
    @Test
    void durationsHaveThreeSignificantDigitsInTheLargestUnitThatKeepsThemAtLeastOne() {
        assertEquals(List.of("-", "0ns", "4ns", "512ns", "999ns", "1.00us", "1.50us", "12.3us", "100us", "1.23ms",
                        "999ms", "1.00s", "2.50s", "7200s"),
                List.of(Double.NaN, 0.0, 3.6, 512.0, 999.4, 999.6, 1500.0, 12_345.0, 99_960.0, 1_234_567.0,
                        999_000_000.0, 999_600_000.0, 2.5e9, 7.2e12).stream().map(DiffTable::duration).toList());
    }

    @Test
    void ratiosHaveTwoDecimals() {
        assertEquals(List.of("-", "1.30", "0.95", "inf"),
                List.of(Double.NaN, 1.2999, 0.9478, Double.POSITIVE_INFINITY).stream().map(DiffTable::ratio).toList());
    }

    @Test
    void anEmptyComparisonSummarisesToZeros() {
        assertEquals("0 functions: 0 regressed, 0 not regressed, 0 too few calls, 0 only in base, 0 only in current "
                + "(regressed: rank test p < 0.001 and p50 or p90 at least 1.5x the base's; a verdict needs 50 calls on "
                + "each side)", DiffTable.summary(List.of(), 50, 1.5, 0.001));
    }
}
