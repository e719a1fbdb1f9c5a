/**
 * Latency regression, from statistics to the agent's verdicts: a fine latency histogram with 8 linear
 * sub-buckets per power of two, the kernel's layout ({@link dev.loupe.agent.regression.FineHistogram}); the verdict that compares a
 * current window's histogram with a baseline's (quantile ratios and a one-sided rank test,
 * {@link dev.loupe.agent.regression.LatencyComparison} → {@link dev.loupe.agent.regression.RegressionVerdict});
 * and each probed function's baselines, persisted, with their verdicts on /metrics and their latency profiles
 * ({@link dev.loupe.agent.regression.RegressionTracker}, BPF-free, on an injected wall clock). May import
 * {@code files} (durable writes) and the leaves ({@code pprof}); nothing else of the agent.
 */
package dev.loupe.agent.regression;
