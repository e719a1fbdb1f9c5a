package dev.loupe.agent.regression;

/**
 * One function's current window against one of its baselines.
 *
 * @param buildId         the current build (whose window was compared)
 * @param baselineBuildId the baseline's build: the previous build's, or {@code buildId} for {@link BaselineKind#TRAILING}
 * @param baseline        the baseline's quantiles
 * @param current         the current window's quantiles (the same for every baseline of a function)
 */
public record FunctionStatus(FunctionKey function, BaselineKind kind, String buildId, String baselineBuildId,
                             RegressionVerdict verdict, LatencyQuantiles baseline, LatencyQuantiles current) {}
