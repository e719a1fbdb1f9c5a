package dev.loupe.agent.latencydiff;

import dev.loupe.agent.regression.FineHistogram;
import dev.loupe.agent.regression.FunctionKey;
import dev.loupe.agent.regression.LatencyComparison;
import dev.loupe.agent.regression.RegressionVerdict;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.ToDoubleFunction;

/**
 * One function of either profile: its latencies on each side (null on a side that has none of its calls) and,
 * when both sides have it, the verdict.
 */
record FunctionDiff(FunctionKey key, FineHistogram base, FineHistogram current, RegressionVerdict verdict) {
    /** What the row says, in the order rows are listed. */
    enum Status {
        REGRESSED("regressed"),
        NOT_REGRESSED("not regressed"),
        TOO_FEW_CALLS("too few calls"),
        ONLY_IN_BASE("only in base"),
        ONLY_IN_CURRENT("only in current");

        private final String text;

        Status(String text) {
            this.text = text;
        }

        /** As printed. */
        String text() {
            return text;
        }
    }

    /** By status, then function name, then binary: one function's binaries side by side. */
    private static final Comparator<FunctionDiff> ORDER = Comparator.comparing(FunctionDiff::status)
            .thenComparing(d -> d.key().function()).thenComparing(d -> d.key().binary());

    /** Every function of either side, judged where both have it, regressed first, then by name. */
    static List<FunctionDiff> compare(Map<FunctionKey, FineHistogram> base, Map<FunctionKey, FineHistogram> current,
            LatencyComparison comparison) {
        TreeSet<FunctionKey> keys = new TreeSet<>(base.keySet());
        keys.addAll(current.keySet());
        List<FunctionDiff> diffs = new ArrayList<>(keys.size());
        for (FunctionKey k : keys) {
            FineHistogram b = base.get(k);
            FineHistogram c = current.get(k);
            diffs.add(new FunctionDiff(k, b, c, b != null && c != null ? comparison.compare(b, c) : null));
        }
        diffs.sort(ORDER);
        return diffs;
    }

    Status status() {
        if (current == null) {
            return Status.ONLY_IN_BASE;
        }
        if (base == null) {
            return Status.ONLY_IN_CURRENT;
        }
        return switch (verdict.outcome()) {
            case REGRESSED -> Status.REGRESSED;
            case NOT_REGRESSED -> Status.NOT_REGRESSED;
            case TOO_FEW_CALLS -> Status.TOO_FEW_CALLS;
        };
    }

    /** The base side's q-quantile in nanoseconds, NaN without calls. */
    double baseQuantile(double q) {
        return base == null ? Double.NaN : base.quantile(q);
    }

    double currentQuantile(double q) {
        return current == null ? Double.NaN : current.quantile(q);
    }

    long baseCalls() {
        return base == null ? 0 : base.totalCount();
    }

    long currentCalls() {
        return current == null ? 0 : current.totalCount();
    }

    /** One of the verdict's figures (a ratio such as {@link RegressionVerdict#ratioP50}, or the p-value), NaN without a verdict. */
    double figure(ToDoubleFunction<RegressionVerdict> which) {
        return verdict == null ? Double.NaN : which.applyAsDouble(verdict);
    }
}
