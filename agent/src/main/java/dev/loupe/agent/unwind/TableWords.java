package dev.loupe.agent.unwind;

import dev.loupe.unwinder.ehframe.UnwindTable;

/** A built table's contents as the kernel's arrays hold them (see {@link UnwindTarget#writeTable}). */
record TableWords(int[] pageWords, int[] rowWords, long[] ruleWords) {
    static TableWords of(UnwindTable table) {
        return new TableWords(table.pageWords(), table.rowWords(), table.ruleWords());
    }
}
