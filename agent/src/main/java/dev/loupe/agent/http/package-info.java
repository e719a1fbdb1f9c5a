/**
 * The local HTTP endpoint ({@code /debug/pprof/profile}, {@code /debug/pprof/latency}, {@code /healthz},
 * {@code /metrics}) on Jetty: a TCP listener whose profiles are off, behind a bearer token (optionally over TLS) or
 * loopback-only, and a Unix socket whose file mode decides who reads them. May import {@code sampling},
 * {@code sink}, {@code unwind}, {@code logging}, {@code tls} and the leaves; nothing imports it but the root.
 */
package dev.loupe.agent.http;
