package dev.loupe.agent.latencydiff;

import dev.loupe.agent.regression.RegressionVerdict;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The comparison as a fixed-width table for people and CI logs: a header, one row per function (columns as wide
 * as their widest cell, text left-aligned, numbers right-aligned, "-" where a side has no calls) and a summary line.
 * Apart from the names, ASCII only, so a log in any encoding shows it unchanged.
 */
final class DiffTable {
    static final List<String> HEADER = List.of("VERDICT", "FUNCTION", "BINARY", "BASE CALLS", "CURRENT CALLS",
            "BASE P50", "CURRENT P50", "BASE P99", "CURRENT P99", "P50 RATIO", "P90 RATIO", "P99 RATIO");
    /** Columns 0..2 are text (left-aligned), the rest numbers. */
    private static final int TEXT_COLUMNS = 3;
    private static final String GAP = "  ";
    private static final String[] UNITS = {"ns", "us", "ms", "s"};
    private static final MathContext THREE_DIGITS = new MathContext(3);

    private DiffTable() {}

    /** The table and the summary, each line ending in a newline. */
    static String render(List<FunctionDiff> diffs, long minCalls, double threshold, double alpha) {
        List<List<String>> rows = new ArrayList<>(diffs.size() + 1);
        rows.add(HEADER);
        for (FunctionDiff d : diffs) {
            rows.add(cells(d));
        }
        int[] width = new int[HEADER.size()];
        for (List<String> r : rows) {
            for (int i = 0; i < width.length; i++) {
                width[i] = Math.max(width[i], r.get(i).length());
            }
        }
        StringBuilder b = new StringBuilder();
        for (List<String> r : rows) {
            for (int i = 0; i < width.length; i++) {
                String pad = " ".repeat(width[i] - r.get(i).length());
                b.append(i == 0 ? "" : GAP).append(i < TEXT_COLUMNS ? r.get(i) + pad : pad + r.get(i));
            }
            b.append('\n');
        }
        return b.append(summary(diffs, minCalls, threshold, alpha)).append('\n').toString();
    }

    static List<String> cells(FunctionDiff d) {
        boolean hasBase = d.base() != null;
        boolean hasCurrent = d.current() != null;
        return List.of(d.status().text(), d.key().function(), d.key().binary(),
                hasBase ? Long.toString(d.baseCalls()) : "-", hasCurrent ? Long.toString(d.currentCalls()) : "-",
                duration(d.baseQuantile(0.5)), duration(d.currentQuantile(0.5)),
                duration(d.baseQuantile(0.99)), duration(d.currentQuantile(0.99)),
                ratio(d.figure(RegressionVerdict::ratioP50)), ratio(d.figure(RegressionVerdict::ratioP90)),
                ratio(d.figure(RegressionVerdict::ratioP99)));
    }

    /** "3 functions: 1 regressed, ..." and what regressed means here. */
    static String summary(List<FunctionDiff> diffs, long minCalls, double threshold, double alpha) {
        Map<FunctionDiff.Status, Integer> counts = new EnumMap<>(FunctionDiff.Status.class);
        for (FunctionDiff d : diffs) {
            counts.merge(d.status(), 1, Integer::sum);
        }
        StringBuilder b = new StringBuilder();
        b.append(diffs.size()).append(diffs.size() == 1 ? " function: " : " functions: ");
        String sep = "";
        for (FunctionDiff.Status s : FunctionDiff.Status.values()) {
            b.append(sep).append(counts.getOrDefault(s, 0)).append(' ').append(s.text());
            sep = ", ";
        }
        return b.append(String.format(Locale.ROOT, " (regressed: rank test p < %s and p50 or p90 at least %sx the base's; "
                + "a verdict needs %d calls on each side)", plain(alpha), plain(threshold), minCalls)).toString();
    }

    /** Nanoseconds to three significant digits in the largest unit that keeps the number at least 1, e.g. 1.30ms. */
    static String duration(double nanos) {
        if (Double.isNaN(nanos)) {
            return "-";
        }
        int unit = 0;
        double value = round3(nanos);
        while (unit < UNITS.length - 1 && value >= 1000) {
            unit++;
            value = round3(nanos / Math.pow(1000, unit));
        }
        int decimals = unit == 0 || value >= 100 ? 0 : value >= 10 ? 1 : 2;
        return String.format(Locale.ROOT, "%." + decimals + "f", value) + UNITS[unit];
    }

    static String ratio(double r) {
        if (Double.isNaN(r)) {
            return "-";
        }
        return Double.isInfinite(r) ? "inf" : String.format(Locale.ROOT, "%.2f", r);
    }

    private static double round3(double v) {
        return v == 0 || Double.isInfinite(v) ? v : new BigDecimal(v).round(THREE_DIGITS).doubleValue();
    }

    private static String plain(double v) {
        return BigDecimal.valueOf(v).stripTrailingZeros().toPlainString();
    }
}
