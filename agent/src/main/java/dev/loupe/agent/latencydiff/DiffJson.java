package dev.loupe.agent.latencydiff;

import dev.loupe.agent.regression.RegressionVerdict;

import java.util.List;

/**
 * The comparison as a JSON array for scripts, one object per function and line, in the table's order. Quantiles
 * are whole nanoseconds; a side without calls has null quantiles and 0 calls; ratios, p-value and reason are
 * null without a verdict (a side missing, or NaN). ASCII only: other characters are escaped.
 */
final class DiffJson {
    private DiffJson() {}

    static String render(List<FunctionDiff> diffs) {
        StringBuilder b = new StringBuilder("[\n");
        for (int i = 0; i < diffs.size(); i++) {
            object(b, diffs.get(i));
            b.append(i + 1 < diffs.size() ? ",\n" : "\n");
        }
        return b.append("]\n").toString();
    }

    private static void object(StringBuilder b, FunctionDiff d) {
        RegressionVerdict v = d.verdict();
        b.append("{\"function\":").append(string(d.key().function()))
                .append(",\"binary\":").append(string(d.key().binary()))
                .append(",\"verdict\":").append(string(d.status().text()))
                .append(",\"base_calls\":").append(d.baseCalls())
                .append(",\"current_calls\":").append(d.currentCalls());
        for (double q : new double[] {0.5, 0.9, 0.99}) {
            String name = "p" + Math.round(q * 100);
            b.append(",\"base_").append(name).append("_ns\":").append(nanos(d.baseQuantile(q)))
                    .append(",\"current_").append(name).append("_ns\":").append(nanos(d.currentQuantile(q)));
        }
        b.append(",\"ratio_p50\":").append(number(d.figure(RegressionVerdict::ratioP50)))
                .append(",\"ratio_p90\":").append(number(d.figure(RegressionVerdict::ratioP90)))
                .append(",\"ratio_p99\":").append(number(d.figure(RegressionVerdict::ratioP99)))
                .append(",\"p_value\":").append(number(d.figure(RegressionVerdict::pValue)))
                .append(",\"reason\":").append(v == null ? "null" : string(v.reason()))
                .append('}');
    }

    private static String nanos(double v) {
        return Double.isFinite(v) ? Long.toString(Math.round(v)) : "null";
    }

    private static String number(double v) {
        return Double.isFinite(v) ? Double.toString(v) : "null";
    }

    /** A JSON string literal: quotes, backslashes and control characters escaped. */
    static String string(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20 || c >= 0x7f) { // ASCII out, whatever the terminal's or log's encoding
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
