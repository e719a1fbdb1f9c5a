package dev.loupe.agent.regression;

/**
 * What {@link LatencyComparison} found: the current window's quantiles over the baseline's (NaN when a side has
 * no calls), the rank test's one-sided p-value (NaN when not computed), calls on each side, the outcome and why.
 */
public record RegressionVerdict(
        Outcome outcome,
        double ratioP50,
        double ratioP90,
        double ratioP99,
        double pValue,
        long baselineCalls,
        long currentCalls,
        String reason) {

    public enum Outcome {
        /** Slower, significantly and by at least the threshold. */
        REGRESSED,
        /** Enough calls on both sides, and not (significantly and sufficiently) slower. */
        NOT_REGRESSED,
        /** Fewer than the minimum calls on either side: no verdict either way. */
        TOO_FEW_CALLS
    }

    public boolean regressed() {
        return outcome == Outcome.REGRESSED;
    }
}
