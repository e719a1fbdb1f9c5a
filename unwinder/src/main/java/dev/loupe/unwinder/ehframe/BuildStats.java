package dev.loupe.unwinder.ehframe;

import java.util.List;
import java.util.Map;

/**
 * What went into an {@link UnwindTable}: counts for /metrics and the first few problems for a log line.
 *
 * @param sections          the CFI sections read, e.g. {@code [.eh_frame, .debug_frame]}
 * @param fdes              FDEs whose rows are in the table (from either section)
 * @param debugFrameFdes    of those, FDEs from .debug_frame (PC ranges .eh_frame does not cover)
 * @param rowsInterpreted   rows the CFA programs produced, before merging and page carry rows
 * @param skippedEntries    entries that could not be decoded at all (bad CIE, pointer encoding, length)
 * @param malformedFdes     FDEs whose program failed: their range is one {@code stop(MALFORMED_FDE)} row
 * @param outsideText       FDEs outside every executable PT_LOAD segment (discarded code), dropped
 * @param overlapping       FDEs cut short (or dropped) because another FDE starts inside them
 * @param hdrEntries        entries in .eh_frame_hdr's search table (0 without one)
 * @param hdrMismatches     hdr entries that do not name a decoded FDE with that start
 * @param problems          counts of skipped and malformed entries by problem
 * @param firstProblems     messages of the first few problems (for one log line)
 */
public record BuildStats(List<String> sections, int fdes, int debugFrameFdes, long rowsInterpreted, int skippedEntries,
                         int malformedFdes, int outsideText, int overlapping, int hdrEntries, int hdrMismatches,
                         Map<EhFrameException.Problem, Integer> problems, List<String> firstProblems) {
    public BuildStats {
        sections = List.copyOf(sections);
        problems = Map.copyOf(problems);
        firstProblems = List.copyOf(firstProblems);
    }
}
