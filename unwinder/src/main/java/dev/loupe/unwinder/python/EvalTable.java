package dev.loupe.unwinder.python;

import dev.loupe.unwinder.ehframe.EhFrameException;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.ehframe.UnwindTableBuilder;

import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;

/**
 * The walker's table for one CPython binary, shared by every process that maps it: the binary's own rows (file
 * addresses, with {@code bias} 0; the walker adds each mapping's load bias), the rows of
 * {@code _PyEval_EvalFrameDefault} (every part of it: {@link EvalRanges}) given kind {@link UnwindRule#KIND_PYTHON_EVAL}
 * (their CFA rule kept), and, in the 64 KiB page below the binary's first row, one row per layout word whose rule is
 * that word ({@link UnwindRule#KIND_PYTHON_DATA}): those rows come first, so their rules are the table's rules 0 to
 * {@link PythonFrameStep#DATA_WORDS} - 1, where the walker reads them. No pc of the binary lies in that page.
 */
final class EvalTable {
    private EvalTable() {}

    /**
     * @param file   the binary's table (file addresses)
     * @param bias   runtime address minus file address
     * @param loop   the loop's [low, high) file-address ranges
     * @param words  the layout words ({@link PythonLayout#kernelWords})
     */
    static UnwindTable build(String name, UnwindTable file, long bias, List<long[]> loop, long[] words) throws EhFrameException {
        if (words.length != PythonFrameStep.DATA_WORDS || Arrays.stream(words).distinct().count() != words.length) {
            throw new IllegalArgumentException("layout words must be " + PythonFrameStep.DATA_WORDS + " distinct rules");
        }
        TreeMap<Long, Long> rows = new TreeMap<>(Long::compareUnsigned); // file pc -> rule
        int[] pages = file.pageWords();
        int[] fileRows = file.rowWords();
        long[] rules = file.ruleWords();
        for (int p = 0; p < pages.length / 2; p++) {
            long pageStart = file.pcBase() + ((long) p << UnwindTable.PAGE_SHIFT);
            for (int i = pages[2 * p]; i < pages[2 * p] + pages[2 * p + 1]; i++) {
                rows.put(pageStart + (fileRows[i] & 0xffff), rules[fileRows[i] >>> 16]);
            }
        }
        for (long[] r : loop) { // rows at each part's bounds, so the kinds change exactly there
            rows.putIfAbsent(r[0], file.lookup(r[0]));
            rows.putIfAbsent(r[1], file.lookup(r[1]));
        }
        long dataPage = ((file.pcBase() + bias) & ~0xffffL) - 0x10000;
        if (dataPage <= 0) {
            throw new IllegalArgumentException("no page below the binary at 0x" + Long.toHexString(file.pcBase() + bias));
        }
        int n = words.length + 1 + rows.size();
        long[] pcs = new long[n];
        long[] rs = new long[n];
        int out = 0;
        for (int k = 0; k < words.length; k++) {
            pcs[out] = dataPage + 8L * k;
            rs[out++] = words[k];
        }
        pcs[out] = dataPage + 8L * words.length;
        rs[out++] = UnwindRule.stop(StopReason.NO_UNWIND_INFO);
        for (var e : rows.entrySet()) {
            long pc = e.getKey();
            pcs[out] = pc + bias;
            rs[out++] = inside(loop, pc) ? python(e.getValue()) : e.getValue();
        }
        UnwindTable t = UnwindTableBuilder.fromRows(name, pcs, rs, out);
        long[] built = t.ruleWords();
        for (int k = 0; k < words.length; k++) {
            if (built.length <= k || built[k] != words[k]) {
                throw new IllegalStateException(name + ": layout word " + k + " is not rule " + k);
            }
        }
        t.verify();
        return t;
    }

    private static boolean inside(List<long[]> parts, long pc) {
        for (long[] r : parts) {
            if (pc >= r[0] && pc < r[1]) {
                return true;
            }
        }
        return false;
    }

    /** A CFA rule inside the loop as the loop's kind; anything else (a stop) unchanged. */
    private static long python(long rule) {
        int kind = UnwindRule.kind(rule);
        return kind == UnwindRule.KIND_CFA_RSP || kind == UnwindRule.KIND_CFA_RBP ? UnwindRule.pythonEval(rule) : rule;
    }
}
