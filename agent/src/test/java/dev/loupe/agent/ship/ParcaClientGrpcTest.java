package dev.loupe.agent.ship;

import com.google.protobuf.ByteString;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.parca.ExecutableInfo;
import dev.loupe.pprof.parca.LabelSet;
import dev.loupe.pprof.parca.RawProfileSeries;
import dev.loupe.pprof.parca.RawSample;
import dev.loupe.pprof.parca.WriteRawRequest;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.TlsServerCredentials;
import okhttp3.tls.HeldCertificate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The client against grpc-java's server: an independent implementation of the protocol and of Parca's checks. */
class ParcaClientGrpcTest {
    private static final String TOKEN = "tok-91b2c7e4";
    private static final Metadata.Key<String> PROJECT = Metadata.Key.of("projectid", Metadata.ASCII_STRING_MARSHALLER);

    @TempDir
    Path dir;
    ParcaStandIn standIn;

    @AfterEach
    void stop() throws Exception {
        if (standIn != null) {
            standIn.close();
        }
    }

    private ParcaClient plaintextClient() throws IOException {
        Path tokenFile = dir.resolve("token");
        Files.writeString(tokenFile, "  " + TOKEN + "\n");
        return ParcaClient.create(ParcaClientConfig.builder(standIn.address()).insecure(true)
                .bearerTokenFile(tokenFile).header("projectID", "p-7").build());
    }

    @Test
    void aValidRequestIsDecodedValidatedAndConfirmedWithStatusInTrailers() throws Exception {
        standIn = new ParcaStandIn().start();
        try (ParcaClient client = plaintextClient()) {
            var exchange = assertInstanceOf(ParcaClient.Exchange.Reply.class,
                    client.exchange(TestBatches.bytes(3), Duration.ofSeconds(5)));
            assertEquals("h2_prior_knowledge", exchange.protocol());
            assertEquals(200, exchange.httpStatus());
            assertEquals("0", exchange.grpcStatus());
            assertFalse(exchange.trailersOnly(), "grpc-java sends OK in trailers after the message");
            assertEquals(SendResult.DELIVERED, ParcaClient.classify(exchange));
            assertEquals(SendResult.DELIVERED, client.writeRaw(TestBatches.request(4)));
        }
        var accepted = standIn.accepted();
        assertEquals(2, accepted.size());
        assertEquals(3, TestBatches.seqOf(accepted.get(0).request()));
        assertEquals(TestBatches.request(3), accepted.get(0).request());
        assertEquals("Bearer " + TOKEN, accepted.get(0).headers().get(ParcaStandIn.AUTHORIZATION));
        assertEquals("p-7", accepted.get(0).headers().get(PROJECT));
    }

    @Test
    void unavailableInRealTrailersAndAsTrailersOnlyAreBothRetryable() throws Exception {
        standIn = new ParcaStandIn().start();
        try (ParcaClient client = plaintextClient()) {
            standIn.answer((r, h) -> new ParcaStandIn.Answer(Status.UNAVAILABLE.withDescription("compacting, try later"), true));
            var inTrailers = assertInstanceOf(ParcaClient.Exchange.Reply.class,
                    client.exchange(TestBatches.bytes(1), Duration.ofSeconds(5)));
            assertFalse(inTrailers.trailersOnly());
            assertEquals("14", inTrailers.grpcStatus());
            assertEquals(new SendResult.Retryable("grpc-status 14 UNAVAILABLE: compacting, try later"),
                    ParcaClient.classify(inTrailers));

            standIn.answer((r, h) -> new ParcaStandIn.Answer(Status.RESOURCE_EXHAUSTED.withDescription("50% full"), false));
            var trailersOnly = assertInstanceOf(ParcaClient.Exchange.Reply.class,
                    client.exchange(TestBatches.bytes(1), Duration.ofSeconds(5)));
            assertTrue(trailersOnly.trailersOnly());
            assertEquals(new SendResult.Retryable("grpc-status 8 RESOURCE_EXHAUSTED: 50% full"),
                    ParcaClient.classify(trailersOnly));
        }
        assertTrue(standIn.accepted().isEmpty());
    }

    @Test
    void parcasRulesRejectBadRequestsAsInvalidArgumentWithTheReason() throws Exception {
        standIn = new ParcaStandIn().start();
        byte[] profile = PprofFiles.gzip(TestBatches.profile(1));
        try (ParcaClient client = plaintextClient()) {
            assertRejected(client, series(profile, 0, "node", "a"), "series[0]: labels lack __name__");
            assertRejected(client, series(profile, 0, "__name__", "parca_agent_cpu", "build-id", "x"),
                    "invalid label name \"build-id\"");
            assertRejected(client, series(profile, 0, "__name__", "parca_agent_cpu", "pid", "1", "pid", "2"),
                    "duplicate label name \"pid\"");
            assertRejected(client, series(profile, 2, "__name__", "parca_agent_cpu"),
                    "2 executable_info for 1 mappings");
            byte[] noTime = PprofFiles.gzip(TestBatches.profile(1).toBuilder().setTimeNanos(0).build());
            assertRejected(client, series(noTime, 0, "__name__", "parca_agent_cpu"), "time_nanos is 0");
            assertEquals(SendResult.DELIVERED, client.writeRaw(series(profile, 1, "__name__", "parca_agent_cpu")));
        }
        assertEquals(5, standIn.rejections().size());
        assertEquals(1, standIn.accepted().size());
    }

    private static void assertRejected(ParcaClient client, WriteRawRequest request, String expected) {
        var result = assertInstanceOf(SendResult.Rejected.class, client.writeRaw(request));
        assertTrue(result.reason().startsWith("grpc-status 3 INVALID_ARGUMENT: "), result.reason());
        assertTrue(result.reason().contains(expected), result.reason());
    }

    private static WriteRawRequest series(byte[] rawProfile, int executableInfos, String... labels) {
        LabelSet.Builder set = LabelSet.newBuilder();
        for (int i = 0; i < labels.length; i += 2) {
            set.addLabels(TestBatches.label(labels[i], labels[i + 1]));
        }
        RawSample.Builder sample = RawSample.newBuilder().setRawProfile(ByteString.copyFrom(rawProfile));
        for (int i = 0; i < executableInfos; i++) {
            sample.addExecutableInfo(ExecutableInfo.newBuilder().setElfType(2));
        }
        return WriteRawRequest.newBuilder()
                .addSeries(RawProfileSeries.newBuilder().setLabels(set).addSamples(sample)).build();
    }

    @Test
    void aWrongTokenIsUnauthenticatedAndPermanent() throws Exception {
        standIn = new ParcaStandIn().start();
        standIn.answer((r, h) -> ("Bearer right").equals(h.get(ParcaStandIn.AUTHORIZATION)) ? ParcaStandIn.Answer.OK
                : new ParcaStandIn.Answer(Status.UNAUTHENTICATED.withDescription("invalid token"), false));
        try (ParcaClient client = plaintextClient()) {
            assertEquals(new SendResult.Rejected("grpc-status 16 UNAUTHENTICATED: invalid token"),
                    client.writeRaw(TestBatches.request(1)));
        }
        Files.writeString(dir.resolve("right"), "right");
        try (ParcaClient client = ParcaClient.create(ParcaClientConfig.builder(standIn.address()).insecure(true)
                .bearerTokenFile(dir.resolve("right")).build())) {
            assertEquals(SendResult.DELIVERED, client.writeRaw(TestBatches.request(1)));
        }
    }

    @Test
    void tlsWithVerificationAndClientCertificates() throws Exception {
        HeldCertificate ca = new HeldCertificate.Builder().certificateAuthority(0).commonName("loupe test CA").build();
        HeldCertificate server = new HeldCertificate.Builder().commonName("parca").addSubjectAlternativeName("localhost")
                .addSubjectAlternativeName("127.0.0.1").signedBy(ca).build();
        HeldCertificate client = new HeldCertificate.Builder().commonName("agent").signedBy(ca).build();
        HeldCertificate rsaClient = new HeldCertificate.Builder().commonName("agent-rsa").rsa2048().signedBy(ca).build();
        Path caPem = write("ca.pem", ca.certificatePem());
        Path serverPem = write("server.pem", server.certificatePem());
        Path serverKey = write("server.key", server.privateKeyPkcs8Pem());
        Path clientPem = write("client.pem", client.certificatePem() + ca.certificatePem());
        Path clientKey = write("client.key", client.privateKeyPkcs8Pem());
        Path rsaPem = write("rsa.pem", rsaClient.certificatePem());
        Path rsaPkcs1 = write("rsa-pkcs1.key", rsaClient.privateKeyPkcs1Pem());

        standIn = new ParcaStandIn(TlsServerCredentials.newBuilder()
                .keyManager(serverPem.toFile(), serverKey.toFile())
                .trustManager(caPem.toFile())
                .clientAuth(TlsServerCredentials.ClientAuth.REQUIRE)
                .build()).start();
        String address = "localhost:" + standIn.port();

        try (ParcaClient mtls = ParcaClient.create(ParcaClientConfig.builder(address)
                .caFile(caPem).clientCertificate(clientPem, clientKey).build())) {
            var exchange = assertInstanceOf(ParcaClient.Exchange.Reply.class,
                    mtls.exchange(TestBatches.bytes(1), Duration.ofSeconds(5)));
            assertEquals("h2", exchange.protocol(), "ALPN chose HTTP/2");
            assertEquals(SendResult.DELIVERED, ParcaClient.classify(exchange));
        }
        try (ParcaClient platformTrust = ParcaClient.create(ParcaClientConfig.builder(address)
                .clientCertificate(clientPem, clientKey).build())) {
            var result = assertInstanceOf(SendResult.Retryable.class,
                    platformTrust.writeRaw(TestBatches.bytes(2), Duration.ofSeconds(5)));
            assertTrue(result.reason().contains("SSLHandshakeException"), "verification is on: " + result.reason());
        }
        try (ParcaClient noClientCert = ParcaClient.create(ParcaClientConfig.builder(address).caFile(caPem).build())) {
            assertInstanceOf(SendResult.Retryable.class, noClientCert.writeRaw(TestBatches.bytes(3), Duration.ofSeconds(5)),
                    "the server requires a client certificate");
        }
        try (ParcaClient skipVerify = ParcaClient.create(ParcaClientConfig.builder("127.0.0.1:" + standIn.port())
                .insecureSkipVerify(true).clientCertificate(clientPem, clientKey).build())) {
            assertEquals(SendResult.DELIVERED, skipVerify.writeRaw(TestBatches.bytes(4), Duration.ofSeconds(5)));
        }
        assertEquals(2, standIn.accepted().size());

        IOException pkcs1 = assertThrows(IOException.class, () -> ParcaClient.create(ParcaClientConfig.builder(address)
                .caFile(caPem).clientCertificate(rsaPem, rsaPkcs1).build()));
        assertTrue(pkcs1.getMessage().contains("PKCS#8"), pkcs1.getMessage());
        assertFalse(pkcs1.getMessage().contains(rsaClient.privateKeyPkcs1Pem().lines().skip(1).findFirst().orElseThrow()));
    }

    private Path write(String name, String content) throws IOException {
        return Files.writeString(dir.resolve(name), content);
    }
}
