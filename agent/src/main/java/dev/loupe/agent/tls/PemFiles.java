package dev.loupe.agent.tls;

import okhttp3.tls.Certificates;
import okhttp3.tls.HeldCertificate;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;

/** Certificates and keys from PEM files: the JDK reads certificates, okhttp-tls reads the PKCS#8 key. */
public final class PemFiles {
    private PemFiles() {}

    /** Every certificate in a PEM (or DER) file, in file order; at least one. */
    public static List<X509Certificate> certificates(Path file) throws IOException {
        List<X509Certificate> out = new ArrayList<>();
        try (InputStream in = Files.newInputStream(file)) {
            for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                out.add((X509Certificate) c);
            }
        } catch (CertificateException e) {
            throw new IOException("certificate file " + file + " is not PEM X.509: " + e.getMessage(), e);
        }
        if (out.isEmpty()) {
            throw new IOException("certificate file " + file + " holds no certificate");
        }
        return out;
    }

    /**
     * The chain's first certificate with the private key of {@code keyFile} (unencrypted PKCS#8 PEM). The key's
     * text never appears in a message.
     */
    public static HeldCertificate held(List<X509Certificate> chain, Path keyFile) throws IOException {
        String keyPem = Files.readString(keyFile, StandardCharsets.US_ASCII);
        try {
            return HeldCertificate.decode(Certificates.certificatePem(chain.getFirst()) + keyPem);
        } catch (IllegalArgumentException e) {
            // Not e.getMessage(): it could quote the key.
            throw new IOException("key " + keyFile + " is not an unencrypted PKCS#8 PEM key "
                    + "(\"BEGIN PRIVATE KEY\"; convert with: openssl pkcs8 -topk8 -nocrypt)");
        }
    }
}
