package dev.loupe.unwinder.runtime;

import dev.loupe.unwinder.ehframe.UnwindTable;

import java.util.List;

/**
 * A runtime's unwind table for the code it generated (a JIT's code heaps), in the kernel's table format with
 * runtime addresses as its pcs (bias 0), and the address ranges it covers: the process's executable mappings inside
 * them are walked by it, in place of any table of their file (so a runtime may also give, for one process, a binary's
 * table with rows of its own kinds, e.g. for an interpreter loop); anonymous ones outside keep frame pointers. {@code generation} grows with each new table
 * of the process, so a caller can tell a replaced table from the one it loaded.
 */
public record CodeTable(UnwindTable table, List<Range> ranges, int generation) {
    public CodeTable {
        ranges = List.copyOf(ranges);
    }

    /** [low, high) */
    public record Range(long low, long high) {}

    /** Whether the table covers any of [start, end). */
    public boolean covers(long start, long end) {
        for (Range r : ranges) {
            if (start < r.high() && r.low() < end) {
                return true;
            }
        }
        return false;
    }
}
