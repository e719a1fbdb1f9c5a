package dev.loupe.unwinder.v8;

import dev.loupe.unwinder.ehframe.EhFrameException;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.ehframe.UnwindTableBuilder;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The walker's tables for V8's code, each starting with the layout word ({@link UnwindRule#KIND_V8_DATA}) as the rule
 * of a row in the 64 KiB page below the table's first code (no code of the binary or the JIT lies there), so that it
 * is rule 0, where {@code v8.bpf.h} reads it:
 * <ul>
 *   <li>{@link #binary}: node's binary, its own rows with the embedded builtins' range (no FDE covers them) one
 *       {@link UnwindRule#KIND_V8_FRAME} row of aux {@link V8FrameStep#AUX_BUILTINS}, in file addresses, shared by
 *       every process that maps the binary;</li>
 *   <li>{@link #jit}: one process's JIT code ranges (its anonymous executable mappings), each a
 *       {@link UnwindRule#KIND_V8_FRAME} row, in runtime addresses.</li>
 * </ul>
 */
final class V8Tables {
    static final long BUILTINS_RULE = UnwindRule.KIND_V8_FRAME | (long) V8FrameStep.AUX_BUILTINS << 8;
    static final long JIT_RULE = UnwindRule.KIND_V8_FRAME;
    private static final long NO_INFO = UnwindRule.stop(StopReason.NO_UNWIND_INFO);

    private V8Tables() {}

    /** {@code own} (node's table, file addresses) with [{@code low}, {@code high}) V8's builtins. */
    static UnwindTable binary(String name, UnwindTable own, long low, long high, long word) throws EhFrameException {
        if (low <= 0 || high <= low) {
            throw new IllegalArgumentException("no builtins range");
        }
        TreeMap<Long, Long> rows = new TreeMap<>(Long::compareUnsigned);
        int[] pages = own.pageWords();
        int[] fileRows = own.rowWords();
        long[] rules = own.ruleWords();
        for (int p = 0; p < pages.length / 2; p++) {
            long pageStart = own.pcBase() + ((long) p << UnwindTable.PAGE_SHIFT);
            for (int i = pages[2 * p]; i < pages[2 * p] + pages[2 * p + 1]; i++) {
                long pc = pageStart + (fileRows[i] & 0xffff);
                if (pc < low || pc >= high) {
                    rows.put(pc, rules[fileRows[i] >>> 16]);
                }
            }
        }
        long after = own.lookup(high);
        rows.put(high, after == UnwindRule.NOT_COVERED ? NO_INFO : after);
        rows.put(low, BUILTINS_RULE);
        return withWord(name, rows, word);
    }

    /** One process's JIT code: each of {@code ranges} ([low, high), runtime addresses, ascending) V8's code. */
    static UnwindTable jit(String name, List<long[]> ranges, long word) throws EhFrameException {
        if (ranges.isEmpty()) {
            throw new IllegalArgumentException("no code ranges");
        }
        TreeMap<Long, Long> rows = new TreeMap<>(Long::compareUnsigned);
        for (long[] r : ranges) {
            rows.put(r[1], NO_INFO);
        }
        for (long[] r : ranges) {
            rows.put(r[0], JIT_RULE); // a range starting where another ends continues it
        }
        return withWord(name, rows, word);
    }

    private static UnwindTable withWord(String name, TreeMap<Long, Long> rows, long word) throws EhFrameException {
        if ((word & 0xff) != UnwindRule.KIND_V8_DATA) {
            throw new IllegalArgumentException("not a layout word: 0x" + Long.toHexString(word));
        }
        long dataPage = (rows.firstKey() & ~0xffffL) - 0x10000;
        if (dataPage <= 0) {
            throw new IllegalArgumentException("no page below the code at 0x" + Long.toHexString(rows.firstKey()));
        }
        int n = 2 + rows.size();
        long[] pcs = new long[n];
        long[] rs = new long[n];
        pcs[0] = dataPage;
        rs[0] = word;
        pcs[1] = dataPage + 8;
        rs[1] = NO_INFO;
        int out = 2;
        for (Map.Entry<Long, Long> e : rows.entrySet()) {
            pcs[out] = e.getKey();
            rs[out++] = e.getValue();
        }
        UnwindTable t = UnwindTableBuilder.fromRows(name, pcs, rs, out);
        if (t.ruleWords().length == 0 || t.ruleWords()[0] != word) {
            throw new IllegalStateException(name + ": the layout word is not rule 0");
        }
        t.verify();
        return t;
    }
}
