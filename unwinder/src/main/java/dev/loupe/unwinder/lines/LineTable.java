package dev.loupe.unwinder.lines;

import java.util.List;

/**
 * The source lines of one binary's code, read lazily: only the parts of the binary where asked addresses lie.
 * Implementations never throw for bad input: a table they cannot read gives no lines (and says why once, in
 * {@link #problem()}).
 */
public interface LineTable {
    /** A binary without line information. */
    LineTable NONE = new LineTable() {
        @Override
        public List<SourceLine> lines(long vaddr) {
            return List.of();
        }

        @Override
        public long weight() {
            return 0;
        }
    };

    /**
     * The source lines at link-time address {@code vaddr}, innermost first (see {@link SourceLine}); empty when
     * unknown. Called from one thread.
     */
    List<SourceLine> lines(long vaddr);

    /** Estimated heap it may hold (its caches of decoded ranges are bounded), for the symbol cache's budget. */
    long weight();

    /** Why lookups give nothing, if a read failed; null when none did. */
    default String problem() {
        return null;
    }
}
