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
    public RemoteStore {
        headers = java.util.Collections.unmodifiableMap(new TreeMap<>(headers));
    }

    /** The remote-store options, checked together; empty when no address is set. */
    static Optional<RemoteStore> from(OptionValues v, String sourceName) throws ConfigException {
        int line = v.line("remote-store");
        boolean insecure = v.get(Options.REMOTE_STORE_INSECURE);
        boolean skipVerify = v.get(Options.REMOTE_STORE_INSECURE_SKIP_VERIFY);
        Optional<Path> token = v.get(Options.REMOTE_STORE_BEARER_TOKEN_FILE);
        Optional<Path> ca = v.get(Options.REMOTE_STORE_CA_FILE);
        Optional<Path> cert = v.get(Options.REMOTE_STORE_CERT_FILE);
        Optional<Path> key = v.get(Options.REMOTE_STORE_KEY_FILE);
        Map<String, String> headers = v.get(Options.REMOTE_STORE_HEADERS);
        Optional<String> address = v.get(Options.REMOTE_STORE_ADDRESS);
        if (address.isEmpty()) {
            if (line > 0 && (insecure || skipVerify || token.isPresent() || ca.isPresent() || cert.isPresent()
                    || !headers.isEmpty())) {
                throw new ConfigException(sourceName, line, "remote-store: address is missing (host:port of Parca)");
            }
            return Optional.empty();
        }
        if (cert.isPresent() != key.isPresent()) {
            throw new ConfigException(sourceName, line, "remote-store: cert-file and key-file go together (mutual TLS needs both)");
        }
        if (insecure && (skipVerify || ca.isPresent() || cert.isPresent())) {
            throw new ConfigException(sourceName, line, "remote-store: insecure (plaintext) cannot be combined with TLS settings");
        }
        return Optional.of(new RemoteStore(address.get(), insecure, skipVerify, token, ca, cert, key, headers,
                v.get(Options.REMOTE_STORE_TIMEOUT), v.get(Options.REMOTE_STORE_BATCH_MAX_BYTES)));
    }
}
