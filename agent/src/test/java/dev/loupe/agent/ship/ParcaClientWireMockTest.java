package dev.loupe.agent.ship;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.http.Fault;
import com.github.tomakehurst.wiremock.verification.LoggedRequest;
import dev.loupe.pprof.parca.WriteRawRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The client against WireMock over plaintext HTTP/2 with prior knowledge: the request on the wire, and
 * how each fault a Parca (or a proxy in front of it) can produce is classified.
 */
class ParcaClientWireMockTest {
    private static final String TOKEN = "s3cr3t-token-7f3a9c";

    @TempDir
    Path dir;
    WireMockServer wireMock;
    ParcaClient client;

    @BeforeEach
    void start() throws Exception {
        wireMock = new WireMockServer(options().bindAddress("127.0.0.1").dynamicPort());
        wireMock.start();
        Path tokenFile = dir.resolve("token");
        Files.writeString(tokenFile, TOKEN + "\n");
        client = ParcaClient.create(ParcaClientConfig.builder("127.0.0.1:" + wireMock.port())
                .insecure(true)
                .bearerTokenFile(tokenFile)
                .header("projectID", "proj-1")
                .timeout(Duration.ofMillis(700))
                .build());
        // WireMock's first answer in a JVM can take longer than the 700 ms timeout on a loaded machine:
        // one untimed exchange first, then a clean slate (no stubs, empty request journal).
        reply(aResponse().withStatus(200).withHeader("grpc-status", "0").withBody(new byte[5]));
        client.exchange(TestBatches.bytes(7), Duration.ofSeconds(30));
        wireMock.resetAll();
    }

    @AfterEach
    void stop() {
        client.close();
        wireMock.stop();
    }

    private void reply(com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder response) {
        wireMock.stubFor(post(urlEqualTo(ParcaClient.PATH)).willReturn(response));
    }

    private ParcaClient.Exchange send() {
        return client.exchange(TestBatches.bytes(7), client.config().timeout());
    }

    @Test
    void speaksH2cWithPriorKnowledgeAndFramesTheRequest() throws Exception {
        reply(aResponse().withStatus(200).withHeader("content-type", "application/grpc")
                .withHeader("grpc-status", "0").withBody(new byte[5]));
        var exchange = assertInstanceOf(ParcaClient.Exchange.Reply.class, send());
        assertEquals("h2_prior_knowledge", exchange.protocol(), "WireMock must have answered over h2c");
        assertEquals(SendResult.DELIVERED, ParcaClient.classify(exchange));

        List<LoggedRequest> requests = wireMock.findAll(postRequestedFor(urlEqualTo(ParcaClient.PATH)));
        assertEquals(1, requests.size());
        LoggedRequest r = requests.getFirst();
        assertEquals("HTTP/2.0", r.getProtocol());
        assertEquals("application/grpc", r.getHeader("content-type"));
        assertEquals("trailers", r.getHeader("te"));
        assertEquals("700m", r.getHeader("grpc-timeout"));
        assertEquals("Bearer " + TOKEN, r.getHeader("authorization"));
        assertEquals("proj-1", r.getHeader("projectid"));

        byte[] body = r.getBody();
        byte[] message = TestBatches.bytes(7);
        assertEquals(5 + message.length, body.length);
        assertEquals(0, body[0], "compressed flag");
        assertEquals(message.length, ByteBuffer.wrap(body, 1, 4).getInt(), "big-endian length");
        assertArrayEquals(message, Arrays.copyOfRange(body, 5, body.length));
        assertEquals(7, TestBatches.seqOf(WriteRawRequest.parseFrom(Arrays.copyOfRange(body, 5, body.length))));
    }

    @Test
    void http503WithoutGrpcStatusIsRetryable() {
        reply(aResponse().withStatus(503).withBody("upstream unavailable"));
        var exchange = assertInstanceOf(ParcaClient.Exchange.Reply.class, send());
        assertEquals(503, exchange.httpStatus());
        assertNull(exchange.grpcStatus());
        var result = assertInstanceOf(SendResult.Retryable.class, ParcaClient.classify(exchange));
        assertTrue(result.reason().contains("HTTP 503"), result.reason());
    }

    @Test
    void http404WithoutGrpcStatusIsPermanent() {
        reply(aResponse().withStatus(404));
        assertInstanceOf(SendResult.Rejected.class, ParcaClient.classify(send()));
    }

    @Test
    void unavailableAsTrailersOnlyIsRetryable() {
        reply(aResponse().withStatus(200).withHeader("content-type", "application/grpc")
                .withHeader("grpc-status", "14").withHeader("grpc-message", "store%20restarting"));
        var exchange = assertInstanceOf(ParcaClient.Exchange.Reply.class, send());
        assertTrue(exchange.trailersOnly());
        assertEquals("14", exchange.grpcStatus());
        var result = assertInstanceOf(SendResult.Retryable.class, ParcaClient.classify(exchange));
        assertEquals("grpc-status 14 UNAVAILABLE: store restarting", result.reason());
    }

    @Test
    void invalidArgumentIsPermanentWithTheServersDecodedMessage() {
        reply(aResponse().withStatus(200).withHeader("content-type", "application/grpc")
                .withHeader("grpc-status", "3")
                .withHeader("grpc-message", "invalid%20label%20name%20%22a-b%22%3A%20caf%C3%A9"));
        var result = assertInstanceOf(SendResult.Rejected.class, ParcaClient.classify(send()));
        assertEquals("grpc-status 3 INVALID_ARGUMENT: invalid label name \"a-b\": café", result.reason());
    }

    @Test
    void unauthenticatedIsPermanent() {
        reply(aResponse().withStatus(200).withHeader("content-type", "application/grpc")
                .withHeader("grpc-status", "16").withHeader("grpc-message", "bad token"));
        var result = assertInstanceOf(SendResult.Rejected.class, ParcaClient.classify(send()));
        assertTrue(result.reason().startsWith("grpc-status 16 UNAUTHENTICATED"), result.reason());
        assertFalse(result.reason().contains(TOKEN));
    }

    @Test
    void connectionResetByPeerOnAnOpenConnectionIsRetryable() {
        // Warm up first: WireMock's first answer in a JVM can take longer than the client's timeout.
        reply(aResponse().withStatus(200).withHeader("grpc-status", "0").withBody(new byte[5]));
        assertEquals(SendResult.DELIVERED, ParcaClient.classify(send()));
        reply(aResponse().withFault(Fault.CONNECTION_RESET_BY_PEER));
        var exchange = assertInstanceOf(ParcaClient.Exchange.TransportFailure.class, send());
        var result = assertInstanceOf(SendResult.Retryable.class, ParcaClient.classify(exchange));
        assertEquals("transport: SocketException: Connection reset", result.reason());
    }

    @Test
    void aStreamResetIsRetryable() {
        reply(aResponse().withFault(Fault.EMPTY_RESPONSE));
        var exchange = assertInstanceOf(ParcaClient.Exchange.TransportFailure.class, send());
        var result = assertInstanceOf(SendResult.Retryable.class, ParcaClient.classify(exchange));
        assertTrue(result.reason().contains("StreamResetException"), result.reason());
    }

    @Test
    void garbageFramesAreRetryable() {
        reply(aResponse().withFault(Fault.RANDOM_DATA_THEN_CLOSE));
        var result = assertInstanceOf(SendResult.Retryable.class, ParcaClient.classify(send()));
        assertTrue(result.reason().startsWith("transport:"), result.reason());
    }

    @Test
    void aConnectionResetByThePeerIsRetryable() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread resetter = Thread.ofPlatform().start(() -> {
                try (Socket s = server.accept()) {
                    s.getInputStream().read(new byte[24]); // the HTTP/2 connection preface
                    Thread.sleep(50);
                    s.setSoLinger(true, 0); // close with RST instead of FIN
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            try (ParcaClient resetClient = ParcaClient.create(ParcaClientConfig.builder("127.0.0.1:" + server.getLocalPort())
                    .insecure(true).build())) {
                var result = assertInstanceOf(SendResult.Retryable.class,
                        resetClient.writeRaw(TestBatches.bytes(1), Duration.ofSeconds(5)));
                assertEquals("transport: SocketException: Connection reset", result.reason());
            }
            resetter.join(5_000);
        }
    }

    @Test
    void slowResponsePastTheTimeoutIsRetryableAndReturnsInTime() {
        reply(aResponse().withStatus(200).withHeader("grpc-status", "0").withFixedDelay(5_000));
        long start = System.nanoTime();
        var exchange = send();
        long tookMillis = (System.nanoTime() - start) / 1_000_000;
        var result = assertInstanceOf(SendResult.Retryable.class, ParcaClient.classify(exchange), exchange.toString());
        assertTrue(result.reason().startsWith("transport:"), result.reason());
        assertTrue(tookMillis >= 600 && tookMillis < 3_000, "timed out after " + tookMillis + " ms, timeout 700 ms");
    }

    @Test
    void connectionRefusedIsRetryable() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        try (ParcaClient refused = ParcaClient.create(ParcaClientConfig.builder("127.0.0.1:" + closedPort)
                .insecure(true).build())) {
            var result = assertInstanceOf(SendResult.Retryable.class,
                    refused.writeRaw(TestBatches.bytes(1), Duration.ofSeconds(2)));
            assertTrue(result.reason().contains("ConnectException"), result.reason());
        }
    }

    @Test
    void oversizedRequestIsRejectedWithoutSending() throws Exception {
        try (ParcaClient small = ParcaClient.create(ParcaClientConfig.builder("127.0.0.1:" + wireMock.port())
                .insecure(true).maxMessageBytes(100).build())) {
            var result = assertInstanceOf(SendResult.Rejected.class,
                    small.writeRaw(TestBatches.bytes(1), Duration.ofSeconds(2)));
            assertTrue(result.reason().contains("over the limit of 100 bytes"), result.reason());
        }
        assertEquals(0, wireMock.findAll(postRequestedFor(urlEqualTo(ParcaClient.PATH))).size());
    }
}
