/**
 * The statistics of latency regression: a fine latency histogram with 8 linear sub-buckets per power of
 * two, the kernel's layout ({@link dev.loupe.agent.regression.FineHistogram}), and the verdict that compares a
 * current window's histogram with a baseline's (quantile ratios and a one-sided rank test,
 * {@link dev.loupe.agent.regression.LatencyComparison} → {@link dev.loupe.agent.regression.RegressionVerdict}).
 * Pure computation: imports nothing of the agent.
 */
package dev.loupe.agent.regression;
