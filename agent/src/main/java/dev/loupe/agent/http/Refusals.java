package dev.loupe.agent.http;

import dev.loupe.agent.logging.RateLimitedLog;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * Requests refused, by listener and reason, as {@code loupe_http_requests_refused_total}; each logged at warning,
 * at most one line a minute (with how many more). Also the token and TLS files that changed but could not be
 * used, as {@code loupe_http_reload_failures_total}. Thread-safe.
 */
final class Refusals {
    /** Where a request came in. */
    enum Listener {
        TCP("tcp"), UNIX("unix");

        final String label;

        Listener(String label) {
            this.label = label;
        }
    }

    /** Why a request was refused: its status, its one-line text/plain body and, for 401, its challenge. */
    enum Reason {
        PROFILES_OFF("profiles_off", 403, null, "profiles are not served on TCP (http.profiles: off): use the Unix "
                + "socket (http.socket) or set http.profiles: on with http.bearer-token-file"),
        NO_TOKEN("no_token", 401, "Bearer realm=\"loupe\"", "a bearer token is required: Authorization: Bearer <token>"),
        WRONG_TOKEN("wrong_token", 401, "Bearer realm=\"loupe\", error=\"invalid_token\"", "the bearer token is not the "
                + "one of http.bearer-token-file");

        final String label;
        final int status;
        /** {@code WWW-Authenticate}, null for 403. */
        final String challenge;
        final String text;

        Reason(String label, int status, String challenge, String text) {
            this.label = label;
            this.status = status;
            this.challenge = challenge;
            this.text = text;
        }
    }

    /** A file the endpoint re-reads when it changes. */
    enum WatchedFile {
        BEARER_TOKEN("bearer_token"), TLS("tls");

        final String label;

        WatchedFile(String label) {
            this.label = label;
        }
    }

    private static final long LOG_PERIOD_NANOS = TimeUnit.MINUTES.toNanos(1);
    private final LongAdder[][] refused = new LongAdder[Listener.values().length][Reason.values().length];
    private final LongAdder[] reloadFailures = new LongAdder[WatchedFile.values().length];
    private final RateLimitedLog log;

    Refusals(LongSupplier nanoTime) {
        for (LongAdder[] row : refused) {
            for (int i = 0; i < row.length; i++) {
                row[i] = new LongAdder();
            }
        }
        for (int i = 0; i < reloadFailures.length; i++) {
            reloadFailures[i] = new LongAdder();
        }
        log = new RateLimitedLog(System.getLogger(DebugHttpServer.class.getName()), System.Logger.Level.WARNING,
                LOG_PERIOD_NANOS, nanoTime);
    }

    void refused(Listener listener, Reason reason, String path, String peer) {
        refused[listener.ordinal()][reason.ordinal()].increment();
        log.log("http: refused " + path + " from " + peer + " on " + listener.label + ": " + reason.label + " (" + reason.status + ")");
    }

    long refusedCount(Listener listener, Reason reason) {
        return refused[listener.ordinal()][reason.ordinal()].sum();
    }

    void reloadFailed(WatchedFile file) {
        reloadFailures[file.ordinal()].increment();
    }

    long reloadFailures(WatchedFile file) {
        return reloadFailures[file.ordinal()].sum();
    }

    /** Every reason for each open listener, and every watched file in use, from 0 on. */
    void register(PrometheusRegistry registry, Set<Listener> listeners, Set<WatchedFile> watched) {
        Set<Listener> open = listeners.isEmpty() ? EnumSet.noneOf(Listener.class) : EnumSet.copyOf(listeners);
        CounterWithCallback.builder().name("loupe_http_requests_refused_total")
                .help("HTTP requests refused (401, 403), by listener (tcp, unix) and reason (profiles_off, no_token, wrong_token).")
                .labelNames("listener", "reason")
                .callback(cb -> {
                    for (Listener l : open) {
                        for (Reason r : Reason.values()) {
                            cb.call(refusedCount(l, r), l.label, r.label);
                        }
                    }
                })
                .register(registry);
        if (watched.isEmpty()) {
            return;
        }
        Set<WatchedFile> files = EnumSet.copyOf(watched);
        CounterWithCallback.builder().name("loupe_http_reload_failures_total")
                .help("New versions of http.bearer-token-file (bearer_token) or the TLS certificate and key (tls) that "
                        + "could not be used; the previous one stays in use.")
                .labelNames("file")
                .callback(cb -> {
                    for (WatchedFile f : files) {
                        cb.call(reloadFailures(f), f.label);
                    }
                })
                .register(registry);
    }
}
