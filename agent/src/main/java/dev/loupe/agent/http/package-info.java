/**
 * The local HTTP endpoint ({@code /debug/pprof/profile}, {@code /debug/pprof/latency}, {@code /healthz},
 * {@code /metrics}). May import {@code sampling}, {@code sink}, {@code unwind} and the leaves; nothing
 * imports it but the root.
 */
package dev.loupe.agent.http;
