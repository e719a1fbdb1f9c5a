/**
 * Function latency: resolves {@code --probe} patterns to uprobes, attaches them through {@code bpf}'s
 * {@code LatencyProbes}, and turns the kernel's histograms and groups into metrics and a per-interval
 * latency profile (a side profile of {@code sampling}). May import {@code sampling}, {@code regression} (the
 * fine buckets' bounds) and the leaves.
 */
package dev.loupe.agent.latency;
