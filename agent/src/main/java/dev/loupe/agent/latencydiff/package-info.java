/**
 * {@code loupe latency-diff}: two latency profiles compared per (binary, function) with the agent's regression
 * method, for gating a canary or CI stage. Reads the profiles ({@link dev.loupe.agent.latencydiff.LatencyProfileReader}:
 * each function's fine histogram rebuilt from the {@code le_ns} labels), pairs the functions and judges each
 * ({@link dev.loupe.agent.latencydiff.FunctionDiff}), and prints a table or JSON; its command line and exit codes
 * are {@link dev.loupe.agent.latencydiff.LatencyDiffCommand}'s. May import {@code regression} and the leaves
 * (config, pprof); nothing of the agent imports it but the root.
 */
package dev.loupe.agent.latencydiff;
