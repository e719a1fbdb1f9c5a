package dev.loupe.agent.http;

import dev.loupe.agent.tls.PemFiles;
import okhttp3.tls.HeldCertificate;

import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The TCP listener's server certificate from {@code http.tls-cert-file} (PEM chain, server first) and
 * {@code http.tls-key-file} (PEM PKCS#8), as a key manager that looks at both files again at most once a second,
 * when a handshake asks for the certificate: a renewed pair is served from the next handshake on, a bad one
 * (unreadable, not PEM, a key that is not the certificate's) keeps the pair before it, is logged once and counted.
 * Each pair has its own alias, so a handshake that began with one pair finishes with it. Thread-safe.
 */
final class ReloadingTls extends X509ExtendedKeyManager {
    static final long CHECK_INTERVAL_NANOS = 1_000_000_000L;
    private static final System.Logger LOG = System.getLogger(ReloadingTls.class.getName());

    /** One certificate chain and its key, named {@code alias}. */
    private record Pair(String alias, X509Certificate[] chain, PrivateKey key, FileStamp cert, FileStamp keyStamp) {}

    private final Path certFile;
    private final Path keyFile;
    private final LongSupplier nanoTime;
    private final Runnable reloadFailed;
    private volatile Pair current;
    private volatile Pair previous;
    private FileStamp[] refused;
    private long checkedAt;
    private int generation;

    private ReloadingTls(Path certFile, Path keyFile, LongSupplier nanoTime, Runnable reloadFailed) {
        this.certFile = certFile;
        this.keyFile = keyFile;
        this.nanoTime = nanoTime;
        this.reloadFailed = reloadFailed;
    }

    /** Reads the pair now (an error is the user's to fix before the agent starts). */
    static ReloadingTls open(Path certFile, Path keyFile, LongSupplier nanoTime, Runnable reloadFailed) throws IOException {
        ReloadingTls tls = new ReloadingTls(certFile, keyFile, nanoTime, reloadFailed);
        tls.current = tls.load(FileStamp.of(certFile), FileStamp.of(keyFile));
        tls.checkedAt = nanoTime.getAsLong();
        return tls;
    }

    /** A TLS context whose only key manager is this one (no client certificates asked for). */
    SSLContext sslContext() throws IOException {
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(new KeyManager[] {this}, null, null);
            return context;
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot set up TLS: " + e.getMessage(), e);
        }
    }

    /** The server certificate handshakes get now. */
    X509Certificate certificate() {
        return current.chain()[0];
    }

    private Pair load(FileStamp certStamp, FileStamp keyStamp) throws IOException {
        List<X509Certificate> chain = PemFiles.certificates(certFile);
        HeldCertificate held = PemFiles.held(chain, keyFile);
        PrivateKey key = held.keyPair().getPrivate();
        if (!matches(chain.getFirst(), key)) {
            throw new IOException("key " + keyFile + " is not the key of the first certificate in " + certFile);
        }
        return new Pair("loupe-" + generation++, chain.toArray(X509Certificate[]::new), key, certStamp, keyStamp);
    }

    /** The key signs what the certificate's public key verifies. */
    private static boolean matches(X509Certificate certificate, PrivateKey key) throws IOException {
        String algorithm = switch (key.getAlgorithm()) {
            case "RSA" -> "SHA256withRSA";
            case "EC" -> "SHA256withECDSA";
            case "Ed25519", "EdDSA" -> "Ed25519";
            default -> throw new IOException("key " + key.getAlgorithm() + " is neither RSA, EC nor Ed25519");
        };
        byte[] probe = "loupe key check".getBytes(StandardCharsets.US_ASCII);
        try {
            Signature sign = Signature.getInstance(algorithm);
            sign.initSign(key);
            sign.update(probe);
            byte[] signature = sign.sign();
            Signature verify = Signature.getInstance(algorithm);
            verify.initVerify(certificate.getPublicKey());
            verify.update(probe);
            return verify.verify(signature);
        } catch (GeneralSecurityException e) {
            return false; // e.g. an EC key beside an RSA certificate
        }
    }

    /** At most once per {@link #CHECK_INTERVAL_NANOS}: a changed pair of files replaces the current one if usable. */
    private synchronized void refreshIfDue() {
        long now = nanoTime.getAsLong();
        if (now - checkedAt < CHECK_INTERVAL_NANOS) {
            return;
        }
        checkedAt = now;
        FileStamp cert = stamp(certFile);
        FileStamp key = stamp(keyFile);
        Pair p = current;
        if (cert.sameVersion(p.cert()) && key.sameVersion(p.keyStamp())) {
            return;
        }
        if (refused != null && cert.sameVersion(refused[0]) && key.sameVersion(refused[1])) {
            return; // the same broken pair as last time: said once
        }
        try {
            if (cert == FileStamp.MISSING || key == FileStamp.MISSING) {
                throw new IOException("cannot read " + (cert == FileStamp.MISSING ? certFile : keyFile));
            }
            Pair next = load(cert, key);
            previous = p;
            current = next;
            refused = null;
            LOG.log(System.Logger.Level.INFO, "http TLS certificate reloaded from " + certFile + ": "
                    + next.chain()[0].getSubjectX500Principal().getName() + ", valid until " + next.chain()[0].getNotAfter().toInstant());
        } catch (IOException e) {
            refused = new FileStamp[] {cert, key};
            reloadFailed.run();
            LOG.log(System.Logger.Level.WARNING, "http.tls-cert-file/http.tls-key-file changed but cannot be used, the "
                    + "previous certificate stays in use: " + e.getMessage());
        }
    }

    private static FileStamp stamp(Path file) {
        try {
            return FileStamp.of(file);
        } catch (IOException e) {
            return FileStamp.MISSING;
        }
    }

    /** This pair's alias if its key fits the handshake's key type ({@code RSA}, {@code EC}, {@code RSASSA-PSS}, {@code EC_RSA}...). */
    private String alias(String keyType) {
        refreshIfDue();
        Pair p = current;
        String want = keyType.contains("_") ? keyType.substring(0, keyType.indexOf('_')) : keyType;
        String have = p.key().getAlgorithm();
        boolean fits = want.equals(have) || (want.equals("RSASSA-PSS") && have.equals("RSA"))
                || (want.equals("EdDSA") && have.equals("Ed25519"));
        return fits ? p.alias() : null;
    }

    private Pair pair(String alias) {
        Pair c = current;
        if (c.alias().equals(alias)) {
            return c;
        }
        Pair p = previous;
        return p != null && p.alias().equals(alias) ? p : null;
    }

    @Override
    public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
        return alias(keyType);
    }

    @Override
    public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
        return alias(keyType);
    }

    @Override
    public String[] getServerAliases(String keyType, Principal[] issuers) {
        String a = alias(keyType);
        return a == null ? null : new String[] {a};
    }

    @Override
    public X509Certificate[] getCertificateChain(String alias) {
        Pair p = pair(alias);
        return p == null ? null : p.chain().clone();
    }

    @Override
    public PrivateKey getPrivateKey(String alias) {
        Pair p = pair(alias);
        return p == null ? null : p.key();
    }

    @Override
    public String[] getClientAliases(String keyType, Principal[] issuers) {
        return null; // a server only
    }

    @Override
    public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
        return null;
    }

    @Override
    public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine engine) {
        return null;
    }
}
