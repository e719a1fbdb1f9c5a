package dev.loupe.config;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Where to send profiles over Parca's WriteRaw (parca-agent's flag names: {@code --remote-store-*}).
 *
 * @param address            host:port of the Parca server (or a proxy in front of it)
 * @param insecure           plaintext HTTP/2 (h2c) instead of TLS
 * @param insecureSkipVerify TLS without certificate verification (never the default)
 * @param bearerTokenFile    file holding the bearer token; the token itself never appears in flags or logs
 * @param caFile             extra CA certificates (PEM) to trust
 * @param certFile           client certificate (PEM) for mutual TLS, with {@code keyFile}
 * @param keyFile            client key (PEM)
 * @param headers            extra request headers, e.g. projectID
 * @param timeout            per request
 * @param batchMaxBytes      a request is split to stay under this size
 */
public record RemoteStore(String address, boolean insecure, boolean insecureSkipVerify, Optional<Path> bearerTokenFile,
                          Optional<Path> caFile, Optional<Path> certFile, Optional<Path> keyFile,
                          Map<String, String> headers, Duration timeout, long batchMaxBytes) {
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
    public static final long DEFAULT_BATCH_MAX_BYTES = 16L << 20;

    public RemoteStore {
        headers = java.util.Collections.unmodifiableMap(new TreeMap<>(headers));
    }

    static RemoteStore of(String address) {
        return new RemoteStore(address, false, false, Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty(),
                Map.of(), DEFAULT_TIMEOUT, DEFAULT_BATCH_MAX_BYTES);
    }
}
