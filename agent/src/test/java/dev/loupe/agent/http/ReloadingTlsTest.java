package dev.loupe.agent.http;

import dev.loupe.agent.sampling.Agent;
import dev.loupe.config.HttpSettings;
import dev.loupe.pprof.PprofFiles;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import okhttp3.tls.HandshakeCertificates;
import okhttp3.tls.HeldCertificate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * TLS on the TCP listener with certificates made here by okhttp-tls: real handshakes see the files' certificate,
 * a replaced pair from the next check on, a bad replacement never (it is counted); the token works over TLS and
 * plain HTTP does not reach the port.
 */
class ReloadingTlsTest {
    @TempDir
    Path dir;
    private final AtomicLong now = new AtomicLong(5_000_000_000_000L);
    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final HeldCertificate root = new HeldCertificate.Builder().certificateAuthority(0).commonName("loupe test CA").build();
    private Agent agent;
    private DebugHttpServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
        if (agent != null) {
            agent.stop();
        }
    }

    private HeldCertificate serverCertificate(String name) {
        return new HeldCertificate.Builder().commonName(name).addSubjectAlternativeName("127.0.0.1").signedBy(root).build();
    }

    /** The chain and key files, replaced as a deployment tool does it (written beside, renamed over). */
    private void write(Path certFile, Path keyFile, HeldCertificate chainOf, HeldCertificate keyOf) throws IOException {
        Path c = Files.writeString(dir.resolve("cert.tmp"), chainOf.certificatePem() + root.certificatePem());
        Path k = Files.writeString(dir.resolve("key.tmp"), keyOf.privateKeyPkcs8Pem());
        Files.setPosixFilePermissions(k, PosixFilePermissions.fromString("rw-------"));
        Files.move(c, certFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        Files.move(k, keyFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** A client that trusts the test CA only, with no session to resume: each handshake is a full one. */
    private SSLContext client() {
        return new HandshakeCertificates.Builder().addTrustedCertificate(root.certificate()).build().sslContext();
    }

    /** The subject the server presents in a new handshake. */
    private String handshake() throws IOException {
        InetSocketAddress a = server.address().orElseThrow();
        try (SSLSocket s = (SSLSocket) client().getSocketFactory().createSocket(a.getAddress(), a.getPort())) {
            s.startHandshake();
            return ((X509Certificate) s.getSession().getPeerCertificates()[0]).getSubjectX500Principal().getName();
        }
    }

    @Test
    void renewedCertificatesAreServedWithoutRestartAndBadOnesNever() throws Exception {
        Path certFile = dir.resolve("server.pem");
        Path keyFile = dir.resolve("server.key");
        HeldCertificate a = serverCertificate("loupe-a");
        write(certFile, keyFile, a, a);
        Path token = Files.writeString(dir.resolve("token"), "tls-token");
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-------"));
        agent = Fixture.agent(new Fixture.Latency());
        server = DebugHttpServer.start(new HttpSettings(Optional.of(new InetSocketAddress("127.0.0.1", 0)),
                HttpSettings.Profiles.ON, Optional.of(token), Optional.of(certFile), Optional.of(keyFile), Optional.empty()),
                agent, registry, now::get, 30_000);
        String base = server.baseUrl().orElseThrow();
        assertTrue(base.startsWith("https://127.0.0.1:"), base);
        assertEquals("CN=loupe-a", handshake());

        // The token over TLS, with the JDK's client verifying the certificate and its name (127.0.0.1).
        HttpClient https = HttpClient.newBuilder().sslContext(client()).build();
        HttpResponse<byte[]> profile = https.send(HttpRequest.newBuilder(URI.create(base + "/debug/pprof/latency?seconds=1"))
                .header("Authorization", "Bearer tls-token").build(), HttpResponse.BodyHandlers.ofByteArray());
        assertEquals(200, profile.statusCode());
        assertEquals(Duration.ofSeconds(1).toNanos(), PprofFiles.parse(profile.body()).getDurationNanos());
        assertEquals(401, https.send(HttpRequest.newBuilder(URI.create(base + "/debug/pprof/latency?seconds=1")).build(),
                HttpResponse.BodyHandlers.ofByteArray()).statusCode());
        // Plain HTTP to the TLS port gets no HTTP answer.
        String plain = base.replace("https://", "http://");
        assertThrows(IOException.class, () -> HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(plain + "/metrics"))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofByteArray()));

        HeldCertificate b = serverCertificate("loupe-b");
        write(certFile, keyFile, b, b);
        now.addAndGet(ReloadingTls.CHECK_INTERVAL_NANOS - 1);
        assertEquals("CN=loupe-a", handshake(), "not looked at again within the second");
        now.addAndGet(1);
        assertEquals("CN=loupe-b", handshake(), "the renewed pair from the next check on");
        assertEquals("CN=loupe-b", server.tls().certificate().getSubjectX500Principal().getName());

        // A certificate with another certificate's key: kept out, counted once however often it is looked at.
        HeldCertificate c = serverCertificate("loupe-c");
        write(certFile, keyFile, c, a);
        now.addAndGet(ReloadingTls.CHECK_INTERVAL_NANOS);
        assertEquals("CN=loupe-b", handshake());
        now.addAndGet(ReloadingTls.CHECK_INTERVAL_NANOS);
        assertEquals("CN=loupe-b", handshake());
        assertEquals(1.0, Fixture.metric(registry, "loupe_http_reload_failures_total{file=\"tls\"}"));
        // Not PEM at all: kept out too.
        Files.writeString(certFile, "not a certificate\n");
        now.addAndGet(ReloadingTls.CHECK_INTERVAL_NANOS);
        assertEquals("CN=loupe-b", handshake());
        assertEquals(2.0, Fixture.metric(registry, "loupe_http_reload_failures_total{file=\"tls\"}"));
        assertEquals(0.0, Fixture.metric(registry, "loupe_http_reload_failures_total{file=\"bearer_token\"}"));

        write(certFile, keyFile, c, c);
        now.addAndGet(ReloadingTls.CHECK_INTERVAL_NANOS);
        assertEquals("CN=loupe-c", handshake(), "a good pair after bad ones is taken");
    }

    @Test
    void aMismatchedPairStopsTheStart() throws Exception {
        Path certFile = dir.resolve("server.pem");
        Path keyFile = dir.resolve("server.key");
        write(certFile, keyFile, serverCertificate("one"), serverCertificate("two"));
        agent = Fixture.agent(new Fixture.Latency());
        IOException e = assertThrows(IOException.class, () -> DebugHttpServer.start(new HttpSettings(
                Optional.of(new InetSocketAddress("127.0.0.1", 0)), HttpSettings.Profiles.OFF, Optional.empty(),
                Optional.of(certFile), Optional.of(keyFile), Optional.empty()), agent, registry));
        assertEquals("http.tls-cert-file/http.tls-key-file: key " + keyFile + " is not the key of the first certificate in "
                + certFile, e.getMessage());
        Files.writeString(keyFile, "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n");
        e = assertThrows(IOException.class, () -> DebugHttpServer.start(new HttpSettings(
                Optional.of(new InetSocketAddress("127.0.0.1", 0)), HttpSettings.Profiles.OFF, Optional.empty(),
                Optional.of(certFile), Optional.of(keyFile), Optional.empty()), agent, registry));
        assertEquals("http.tls-cert-file/http.tls-key-file: key " + keyFile + " is not an unencrypted PKCS#8 PEM key "
                + "(\"BEGIN PRIVATE KEY\"; convert with: openssl pkcs8 -topk8 -nocrypt)", e.getMessage());
    }
}
