package dev.loupe.unwinder.python;

import dev.loupe.unwinder.ehframe.EhFrameException;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.ehframe.UnwindTableBuilder;

import java.util.Arrays;

/**
 * The walker's table for one process's CPython binary: the binary's own rows in runtime addresses, the rows of
 * {@code _PyEval_EvalFrameDefault} given kind {@link UnwindRule#KIND_PYTHON_EVAL} (their CFA rule kept), and, in the
 * 64 KiB page below the binary's first row, one row per layout word whose rule is that word
 * ({@link UnwindRule#KIND_PYTHON_DATA}): those rows come first, so their rules are the table's rules 0 to
 * {@link PythonFrameStep#DATA_WORDS} - 1, where the walker reads them. No pc of the binary lies in that page.
 */
final class EvalTable {
    private EvalTable() {}

    /**
     * @param file     the binary's table (file addresses)
     * @param bias     runtime address minus file address
     * @param evalLow  {@code _PyEval_EvalFrameDefault}'s first file address
     * @param evalHigh one past its last
     * @param words    the layout words ({@link PythonLayout#kernelWords})
     */
    static UnwindTable build(String name, UnwindTable file, long bias, long evalLow, long evalHigh, long[] words)
            throws EhFrameException {
        if (words.length != PythonFrameStep.DATA_WORDS || Arrays.stream(words).distinct().count() != words.length) {
            throw new IllegalArgumentException("layout words must be " + PythonFrameStep.DATA_WORDS + " distinct rules");
        }
        int[] pages = file.pageWords();
        int[] rows = file.rowWords();
        long[] rules = file.ruleWords();
        int n = rows.length;
        long[] pcs = new long[n + words.length + 3];
        long[] rs = new long[pcs.length];
        int out = 0;
        long firstPc = file.pcBase() + bias;
        long dataPage = (firstPc & ~0xffffL) - 0x10000;
        if (dataPage <= 0) {
            throw new IllegalArgumentException("no page below the binary at 0x" + Long.toHexString(firstPc));
        }
        for (int k = 0; k < words.length; k++) {
            pcs[out] = dataPage + 8L * k;
            rs[out++] = words[k];
        }
        pcs[out] = dataPage + 8L * words.length;
        rs[out++] = UnwindRule.stop(StopReason.NO_UNWIND_INFO);
        boolean splitLow = false;
        boolean splitHigh = false;
        long current = UnwindRule.stop(StopReason.NO_UNWIND_INFO);
        for (int p = 0; p < pages.length / 2; p++) {
            long pageStart = file.pcBase() + ((long) p << UnwindTable.PAGE_SHIFT);
            for (int i = pages[2 * p]; i < pages[2 * p] + pages[2 * p + 1]; i++) {
                long pc = pageStart + (rows[i] & 0xffff);
                long rule = rules[rows[i] >>> 16];
                if (!splitLow && pc > evalLow) { // the rule in effect at the loop's start, from there
                    out = add(pcs, rs, out, evalLow + bias, python(current));
                    splitLow = true;
                }
                if (!splitHigh && pc > evalHigh) {
                    out = add(pcs, rs, out, evalHigh + bias, current);
                    splitHigh = true;
                }
                splitLow |= pc == evalLow;
                splitHigh |= pc == evalHigh;
                current = rule;
                out = add(pcs, rs, out, pc + bias, pc >= evalLow && pc < evalHigh ? python(rule) : rule);
            }
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

    private static int add(long[] pcs, long[] rs, int out, long pc, long rule) {
        if (out > 0 && pcs[out - 1] == pc) {
            rs[out - 1] = rule; // a split at a row's own pc: the row's rule, made the loop's if inside it
            return out;
        }
        pcs[out] = pc;
        rs[out] = rule;
        return out + 1;
    }

    /** A CFA rule inside the loop as the loop's kind; anything else (a stop) unchanged. */
    private static long python(long rule) {
        int kind = UnwindRule.kind(rule);
        return kind == UnwindRule.KIND_CFA_RSP || kind == UnwindRule.KIND_CFA_RBP ? UnwindRule.pythonEval(rule) : rule;
    }
}
