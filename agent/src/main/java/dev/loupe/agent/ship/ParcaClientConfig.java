package dev.loupe.agent.ship;

import dev.loupe.config.RemoteStore;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Where and how the Parca client connects. Holds file paths, never secrets: the bearer token is read
 * from its file by {@link ParcaClient#create}, and {@link #toString()} shows header names only.
 */
public final class ParcaClientConfig {
    /** Parca's server-side limit on one gRPC message. */
    public static final int PARCA_MAX_MESSAGE_BYTES = 64 << 20;
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);

    /** The client settings of the configured remote store (both {@code loupe run}'s sink and the relay's). */
    public static ParcaClientConfig of(RemoteStore store) {
        Builder b = builder(store.address())
                .insecure(store.insecure())
                .insecureSkipVerify(store.insecureSkipVerify())
                .timeout(store.timeout());
        store.caFile().ifPresent(b::caFile);
        if (store.certFile().isPresent()) {
            b.clientCertificate(store.certFile().get(), store.keyFile().orElseThrow());
        }
        store.bearerTokenFile().ifPresent(b::bearerTokenFile);
        store.headers().forEach(b::header);
        return b.build();
    }

    private static final Pattern HEADER_NAME = Pattern.compile("[!#$%&'*+.^_`|~0-9a-z-]+");
    /** Set by the client itself: a user header with one of these names would break the protocol. */
    private static final Set<String> RESERVED = Set.of("content-type", "te", "grpc-timeout", "grpc-encoding",
            "grpc-accept-encoding", "content-length", "host", "connection", "transfer-encoding", "upgrade");

    private final String host;
    private final int port;
    private final boolean insecure;
    private final boolean insecureSkipVerify;
    private final Path caFile;
    private final Path certFile;
    private final Path keyFile;
    private final Path bearerTokenFile;
    private final Map<String, String> headers;
    private final Duration timeout;
    private final int maxMessageBytes;

    private ParcaClientConfig(Builder b) {
        HostPort hp = HostPort.parse(b.address);
        this.host = hp.host;
        this.port = hp.port;
        this.insecure = b.insecure;
        this.insecureSkipVerify = b.insecureSkipVerify;
        this.caFile = b.caFile;
        this.certFile = b.certFile;
        this.keyFile = b.keyFile;
        this.bearerTokenFile = b.bearerTokenFile;
        this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(b.headers));
        this.timeout = b.timeout;
        this.maxMessageBytes = b.maxMessageBytes;
        if (insecure && (insecureSkipVerify || caFile != null || certFile != null || keyFile != null)) {
            throw new IllegalArgumentException("remote store: TLS options (CA, client certificate, skip-verify) "
                    + "contradict insecure (plaintext HTTP/2)");
        }
        if ((certFile == null) != (keyFile == null)) {
            throw new IllegalArgumentException("remote store: a client certificate needs both the certificate file "
                    + "and the key file");
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("remote store: timeout must be > 0, got " + timeout);
        }
        if (maxMessageBytes <= 5) {
            throw new IllegalArgumentException("remote store: max message bytes must be > 5, got " + maxMessageBytes);
        }
    }

    /** {@code address} is {@code host:port} as parca-agent takes it, e.g. {@code parca:7070} or {@code [::1]:7070}. */
    public static Builder builder(String address) {
        return new Builder(address);
    }

    public String host() {
        return host;
    }

    public int port() {
        return port;
    }

    /** Plaintext HTTP/2 with prior knowledge (what Parca itself serves); otherwise TLS with ALPN h2. */
    public boolean insecure() {
        return insecure;
    }

    /** TLS without checking the server's certificate or name (parca-agent's --remote-store-insecure-skip-verify). */
    public boolean insecureSkipVerify() {
        return insecureSkipVerify;
    }

    public Optional<Path> caFile() {
        return Optional.ofNullable(caFile);
    }

    public Optional<Path> certFile() {
        return Optional.ofNullable(certFile);
    }

    public Optional<Path> keyFile() {
        return Optional.ofNullable(keyFile);
    }

    public Optional<Path> bearerTokenFile() {
        return Optional.ofNullable(bearerTokenFile);
    }

    /** Extra request headers (lower-case names), e.g. {@code projectid}. */
    public Map<String, String> headers() {
        return headers;
    }

    /** Per request; sent as grpc-timeout and enforced on the whole call. */
    public Duration timeout() {
        return timeout;
    }

    /** A request body above this is rejected locally (never sent, never retried). */
    public int maxMessageBytes() {
        return maxMessageBytes;
    }

    @Override
    public String toString() {
        return "ParcaClientConfig[address=" + HostPort.format(host, port)
                + ", " + (insecure ? "plaintext h2c" : insecureSkipVerify ? "TLS without verification" : "TLS")
                + (caFile != null ? ", ca=" + caFile : "")
                + (certFile != null ? ", cert=" + certFile + ", key=" + keyFile : "")
                + (bearerTokenFile != null ? ", bearerTokenFile=" + bearerTokenFile : "")
                + ", headers=" + headers.keySet()
                + ", timeout=" + timeout + "]";
    }

    public static final class Builder {
        private final String address;
        private boolean insecure;
        private boolean insecureSkipVerify;
        private Path caFile;
        private Path certFile;
        private Path keyFile;
        private Path bearerTokenFile;
        private final Map<String, String> headers = new LinkedHashMap<>();
        private Duration timeout = DEFAULT_TIMEOUT;
        private int maxMessageBytes = PARCA_MAX_MESSAGE_BYTES;

        private Builder(String address) {
            this.address = address;
        }

        public Builder insecure(boolean insecure) {
            this.insecure = insecure;
            return this;
        }

        public Builder insecureSkipVerify(boolean skip) {
            this.insecureSkipVerify = skip;
            return this;
        }

        /** PEM file of the certificate authorities to trust instead of the platform's. */
        public Builder caFile(Path caFile) {
            this.caFile = caFile;
            return this;
        }

        /** Client certificate (PEM, leaf first, then intermediates) and its PKCS#8 PEM private key, for mTLS. */
        public Builder clientCertificate(Path certFile, Path keyFile) {
            this.certFile = certFile;
            this.keyFile = keyFile;
            return this;
        }

        /** File holding the bearer token (surrounding whitespace is ignored). */
        public Builder bearerTokenFile(Path file) {
            this.bearerTokenFile = file;
            return this;
        }

        public Builder header(String name, String value) {
            String lower = name.toLowerCase(Locale.ROOT);
            if (!HEADER_NAME.matcher(lower).matches()) {
                throw new IllegalArgumentException("remote store: invalid header name \"" + name + "\"");
            }
            if (RESERVED.contains(lower)) {
                throw new IllegalArgumentException("remote store: header \"" + name + "\" is set by the gRPC client");
            }
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c < 0x20 && c != '\t' || c == 0x7f) {
                    throw new IllegalArgumentException("remote store: header \"" + name + "\" has a control character");
                }
            }
            headers.put(lower, value);
            return this;
        }

        public Builder timeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        public Builder maxMessageBytes(int max) {
            this.maxMessageBytes = max;
            return this;
        }

        public ParcaClientConfig build() {
            if (bearerTokenFile != null && headers.containsKey("authorization")) {
                throw new IllegalArgumentException("remote store: both a bearer token file and an authorization header");
            }
            return new ParcaClientConfig(this);
        }
    }

    private record HostPort(String host, int port) {
        static HostPort parse(String address) {
            if (address == null || address.isBlank()) {
                throw new IllegalArgumentException("remote store: empty address");
            }
            String host;
            String portText;
            if (address.startsWith("[")) {
                int close = address.indexOf(']');
                if (close < 0 || close + 1 >= address.length() || address.charAt(close + 1) != ':') {
                    throw new IllegalArgumentException("remote store: address \"" + address + "\" is not [host]:port");
                }
                host = address.substring(1, close);
                portText = address.substring(close + 2);
            } else {
                int colon = address.lastIndexOf(':');
                if (colon <= 0 || address.indexOf(':') != colon) {
                    throw new IllegalArgumentException("remote store: address \"" + address
                            + "\" is not host:port (IPv6 as [addr]:port)");
                }
                host = address.substring(0, colon);
                portText = address.substring(colon + 1);
            }
            int port;
            try {
                port = Integer.parseInt(portText);
            } catch (NumberFormatException e) {
                port = -1;
            }
            if (port < 1 || port > 65535 || host.isEmpty() || host.contains("/")) {
                throw new IllegalArgumentException("remote store: address \"" + address + "\" is not host:port");
            }
            return new HostPort(host, port);
        }

        static String format(String host, int port) {
            return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
        }
    }
}
