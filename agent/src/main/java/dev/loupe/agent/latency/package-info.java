/**
 * Function latency: resolves {@code --probe} patterns to uprobes, attaches them through {@code bpf}'s
 * {@code LatencyProbes}, and turns the kernel's histograms and groups into metrics and a per-interval
 * latency profile (a side profile of {@code sampling}), whose calls feed the regression baselines. May import
 * {@code sampling}, {@code regression} (fine buckets, baselines), {@code labels} (unit and container of a
 * process) and the leaves.
 */
package dev.loupe.agent.latency;
