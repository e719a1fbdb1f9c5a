package dev.loupe.config;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The local HTTP endpoint: a TCP listener ({@code http.address}) that always serves {@code /metrics} and
 * {@code /healthz} and serves profiles ({@code /debug/pprof/*}) as {@code http.profiles} says, optionally over
 * TLS; and a Unix domain socket ({@code http.socket}) that serves everything to whoever the file system lets
 * connect.
 *
 * @param address         the TCP listener; empty = none ({@code off})
 * @param profiles        who gets profiles over TCP
 * @param bearerTokenFile the token {@link Profiles#ON} asks for (present exactly then)
 * @param tlsCertFile     PEM certificate chain (leaf first); present with {@code tlsKeyFile}: TCP speaks only TLS
 * @param tlsKeyFile      PEM PKCS#8 private key of the chain's first certificate
 * @param socket          the Unix domain socket; empty = none ({@code off})
 */
public record HttpSettings(Optional<InetSocketAddress> address, Profiles profiles, Optional<Path> bearerTokenFile,
                           Optional<Path> tlsCertFile, Optional<Path> tlsKeyFile, Optional<Path> socket) {

    /** {@code http.profiles}: who gets {@code /debug/pprof/*} over TCP (the Unix socket serves them to all it admits). */
    public enum Profiles {
        /** Not over TCP: 403 (use the Unix socket). */
        OFF("off"),
        /** To requests that carry the bearer token of {@code http.bearer-token-file}. */
        ON("on"),
        /** To every request, no token: only on a loopback address ({@code ./loupe run}'s default). */
        UNAUTHENTICATED("unauthenticated");

        private final String word;

        Profiles(String word) {
            this.word = word;
        }

        /** As written in YAML and flags. */
        public String word() {
            return word;
        }

        static Profiles parse(String text) {
            for (Profiles p : values()) {
                if (p.word.equals(text.trim())) {
                    return p;
                }
            }
            throw new IllegalArgumentException("must be off, on or unauthenticated, got \"" + text + "\"");
        }
    }

    /** TLS on the TCP listener. */
    public boolean tls() {
        return tlsCertFile.isPresent();
    }

    /** The http options, checked together. */
    static HttpSettings from(OptionValues v, String sourceName) throws ConfigException {
        int section = v.line("http");
        Optional<InetSocketAddress> address = v.get(Options.HTTP);
        Profiles profiles = v.get(Options.HTTP_PROFILES);
        Optional<Path> token = v.get(Options.HTTP_BEARER_TOKEN_FILE);
        Optional<Path> cert = v.get(Options.HTTP_TLS_CERT_FILE);
        Optional<Path> key = v.get(Options.HTTP_TLS_KEY_FILE);
        if (profiles == Profiles.ON && token.isEmpty()) {
            throw new ConfigException(sourceName, line(v, section, "http.profiles"), "http.profiles: on needs http.bearer-token-file "
                    + "(--http-bearer-token-file FILE: the token clients send as 'Authorization: Bearer <token>')");
        }
        if (profiles != Profiles.ON && token.isPresent()) {
            throw new ConfigException(sourceName, line(v, section, "http.bearer-token-file"), "http.bearer-token-file is set but http.profiles is "
                    + profiles.word() + ": the token is only asked for with http.profiles: on");
        }
        if (profiles == Profiles.UNAUTHENTICATED && address.isPresent() && !loopback(address.get())) {
            throw new ConfigException(sourceName, line(v, section, "http.profiles"), "http.profiles: unauthenticated serves every process's stacks "
                    + "without a token, so only on a loopback address, not http.address " + address.get().getHostString()
                    + ":" + address.get().getPort() + " (use http.profiles: on with http.bearer-token-file, or off; "
                    + "./loupe run adds --http-profiles unauthenticated unless given --http-profiles or --config)");
        }
        if (cert.isPresent() != key.isPresent()) {
            throw new ConfigException(sourceName, line(v, section, cert.isPresent() ? "http.tls-cert-file" : "http.tls-key-file"),
                    "http.tls-cert-file and http.tls-key-file go together "
                    + "(TLS needs the certificate and its key)");
        }
        return new HttpSettings(address, profiles, token, cert, key, v.get(Options.HTTP_SOCKET));
    }

    /** The key's line in the file, else the section's (a flag set it). */
    private static int line(OptionValues v, int section, String key) {
        int line = v.line(key);
        return line > 0 ? line : section;
    }

    /** An IP literal (or a resolved name) on the loopback interface: 127.0.0.0/8 or ::1. */
    public static boolean loopback(InetSocketAddress address) {
        return !address.isUnresolved() && address.getAddress().isLoopbackAddress();
    }
}
