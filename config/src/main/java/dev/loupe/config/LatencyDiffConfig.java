package dev.loupe.config;

import java.nio.file.Path;
import java.util.List;

/**
 * {@code loupe latency-diff}'s settings: the two profiles and how a verdict is reached and shown.
 *
 * @param base      the baseline's latency profile
 * @param current   the latency profile judged against it
 * @param minCalls  no verdict unless both sides hold this many calls of a function
 * @param threshold the p50 or p90 ratio a significant slowdown must reach
 * @param format    how the comparison is printed
 */
public record LatencyDiffConfig(Path base, Path current, long minCalls, double threshold, Format format) {
    public enum Format {
        /** A fixed-width table, one row per function, and a summary line. */
        TABLE,
        /** A JSON array, one object per function. */
        JSON
    }

    /** @param operands the two files, as picocli checked them (exactly two) */
    static LatencyDiffConfig build(OptionValues v, List<String> operands) {
        Format format = v.get(Options.LATENCY_DIFF_FORMAT);
        return new LatencyDiffConfig(Path.of(operands.get(0)), Path.of(operands.get(1)),
                v.get(Options.LATENCY_REGRESSION_MIN_CALLS), v.get(Options.LATENCY_REGRESSION_THRESHOLD),
                format == null ? Format.TABLE : format);
    }
}
