package dev.loupe.agent.ship;

import dev.loupe.agent.tls.PemFiles;
import okhttp3.tls.HandshakeCertificates;
import okhttp3.tls.HeldCertificate;

import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509ExtendedTrustManager;
import javax.net.ssl.X509TrustManager;
import java.io.IOException;
import java.net.Socket;
import java.security.GeneralSecurityException;
import java.nio.file.Path;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.List;

/** The TLS side of the Parca client from PEM files: trusted CAs, and the client certificate for mTLS. */
final class TlsFiles {
    private TlsFiles() {}

    /** The socket factory and trust manager for OkHttp. */
    record Tls(SSLSocketFactory socketFactory, X509TrustManager trustManager) {}

    static Tls tls(ParcaClientConfig config) throws IOException {
        HandshakeCertificates certificates = handshakeCertificates(config);
        if (!config.insecureSkipVerify()) {
            return new Tls(certificates.sslSocketFactory(), certificates.trustManager());
        }
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            X509TrustManager trustAll = new TrustAnyServer();
            context.init(new KeyManager[] {certificates.keyManager()}, new TrustManager[] {trustAll}, null);
            return new Tls(context.getSocketFactory(), trustAll);
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot set up TLS: " + e.getMessage(), e);
        }
    }

    /**
     * Accepts any server certificate: what --remote-store-insecure-skip-verify asks for. (okhttp-tls's
     * insecure hosts match the reverse-resolved peer name, which fails for IP addresses.)
     */
    private static final class TrustAnyServer extends X509ExtendedTrustManager {
        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) {}

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {}

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) {}

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
            throw new CertificateException("a client does not check clients");
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
            throw new CertificateException("a client does not check clients");
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            throw new CertificateException("a client does not check clients");
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return new X509Certificate[0];
        }
    }

    static HandshakeCertificates handshakeCertificates(ParcaClientConfig config) throws IOException {
        HandshakeCertificates.Builder b = new HandshakeCertificates.Builder();
        if (config.caFile().isPresent()) {
            // Like Go's tls.Config.RootCAs: a given CA file replaces the platform's roots.
            for (X509Certificate ca : certificates(config.caFile().get())) {
                b.addTrustedCertificate(ca);
            }
        } else {
            b.addPlatformTrustedCertificates();
        }
        if (config.certFile().isPresent()) {
            List<X509Certificate> chain = certificates(config.certFile().get());
            HeldCertificate held = PemFiles.held(chain, config.keyFile().orElseThrow());
            b.heldCertificate(held, chain.subList(1, chain.size()).toArray(X509Certificate[]::new));
        }
        return b.build();
    }

    /** Every certificate in a PEM (or DER) file; at least one. */
    static List<X509Certificate> certificates(Path file) throws IOException {
        return PemFiles.certificates(file);
    }
}
