package dev.loupe.agent.ship;

import dev.loupe.agent.logging.LogCapture;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder;
import com.github.tomakehurst.wiremock.http.Fault;
import com.github.tomakehurst.wiremock.stubbing.ServeEvent;
import dev.loupe.pprof.parca.WriteRawRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.random.RandomGenerator;
import java.util.stream.LongStream;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.binaryEqualTo;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static com.github.tomakehurst.wiremock.stubbing.Scenario.STARTED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Spool + DeliveryLoop + ParcaClient against Parca stand-ins that go away, come back, and misbehave. */
class ShipEndToEndTest {
    private static final DeliveryLoop.Backoff FAST = new DeliveryLoop.Backoff(Duration.ofMillis(20), Duration.ofMillis(200));

    @TempDir
    Path root;
    final List<AutoCloseable> cleanup = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : cleanup.reversed()) {
            c.close();
        }
    }

    /** A delivery loop on its own thread; closing it stops the loop and joins the thread. */
    private DeliveryLoop startLoop(Spool spool, ParcaClient client) {
        DeliveryLoop loop = new DeliveryLoop(spool, (batch, timeout) -> client.writeRaw(batch.payload(), timeout),
                FAST, client.config().timeout(), System::nanoTime, DeliveryLoop.Sleeper.SYSTEM, RandomGenerator.getDefault());
        Thread t = Thread.ofPlatform().name("test-ship").start(loop);
        cleanup.add(() -> {
            loop.stop();
            t.join(10_000);
            assertFalse(t.isAlive(), "delivery loop did not stop");
        });
        return loop;
    }

    private ParcaClient client(String address) throws Exception {
        ParcaClient client = ParcaClient.create(ParcaClientConfig.builder(address).insecure(true)
                .timeout(Duration.ofMillis(800)).build());
        cleanup.add(client);
        return client;
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(10);
        }
    }

    private static List<Long> seqs(ParcaStandIn standIn) {
        return standIn.accepted().stream().map(r -> TestBatches.seqOf(r.request())).toList();
    }

    private static List<Long> range(long from, long to) {
        return LongStream.rangeClosed(from, to).boxed().toList();
    }

    @Test
    void anOutageLosesNothingAndDuplicatesNothing() throws Exception {
        ParcaStandIn standIn = new ParcaStandIn().start();
        cleanup.add(standIn);
        Spool spool = Spool.open(root, "parca", 64 << 20);
        cleanup.add(spool);
        DeliveryLoop loop = startLoop(spool, client(standIn.address()));

        for (long i = 1; i <= 5; i++) {
            spool.append(Map.of(), TestBatches.bytes(i));
        }
        await("the first 5 batches", () -> standIn.accepted().size() == 5);

        standIn.stop();
        long beforeSixth = 0;
        long afterSixth = 0;
        for (long i = 6; i <= 15; i++) {
            if (i == 6) {
                beforeSixth = System.nanoTime();
            }
            spool.append(Map.of(), TestBatches.bytes(i));
            if (i == 6) {
                afterSixth = System.nanoTime();
            }
            Thread.sleep(20);
        }
        await("failed attempts while the store is away", () -> loop.stats().failedAttempts() >= 3);
        assertEquals(5, standIn.accepted().size());
        assertEquals(10, spool.stats().batches(), "everything sent during the outage is spooled");
        long least = System.nanoTime() - afterSixth;
        long oldest = spool.stats().oldestAgeNanos();
        long most = System.nanoTime() - beforeSixth;
        assertTrue(least <= oldest && oldest <= most, "the oldest batch is the 6th, appended between " + least + " and " + most
                + " ns ago: " + oldest);

        standIn.start();
        for (long i = 16; i <= 20; i++) {
            spool.append(Map.of(), TestBatches.bytes(i));
        }
        await("all 20 batches", () -> standIn.accepted().size() >= 20 && spool.stats().batches() == 0);
        // The spool is empty, so the loop has nothing left to send; stopping the store waits for the calls it has
        // begun, so a late duplicate is among the accepted when they are compared.
        standIn.stop();
        assertEquals(range(1, 20), seqs(standIn), "every batch once, in order");
        DeliveryLoop.Stats stats = loop.stats();
        assertEquals(20, stats.delivered());
        assertTrue(stats.retries() >= 1, stats.toString());
        assertEquals(0, stats.rejected());
        assertEquals(0, spool.stats().droppedBatches());
        assertTrue(standIn.rejections().isEmpty(), standIn.rejections().toString());
    }

    @Test
    void aRestartReplaysWhatWasLeftInOrder() throws Exception {
        ParcaStandIn standIn = new ParcaStandIn().start();
        cleanup.add(standIn);
        standIn.stop();
        ParcaClient client = client(standIn.address());

        try (Spool first = Spool.open(root, "parca", 64 << 20)) {
            DeliveryLoop loop = new DeliveryLoop(first, (b, t) -> client.writeRaw(b.payload(), t), FAST,
                    Duration.ofMillis(800), System::nanoTime, DeliveryLoop.Sleeper.SYSTEM, RandomGenerator.getDefault());
            Thread t = Thread.ofPlatform().start(loop);
            for (long i = 1; i <= 6; i++) {
                first.append(Map.of("n", Long.toString(i)), TestBatches.bytes(i));
            }
            await("attempts against the absent store", () -> loop.stats().failedAttempts() >= 2);
            loop.stop();
            t.join(10_000);
            assertFalse(t.isAlive());
            var drained = loop.drainOnce(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500));
            assertEquals(new DeliveryLoop.DrainResult(0, 0, 6), drained, "the stop's last attempt fails: all stays");
        }
        // What a SIGKILL in the middle of the next append leaves behind.
        Path torn = root.resolve("parca/00000000000000000007.batch.tmp");
        Files.write(torn, Arrays.copyOf(TestBatches.bytes(99), 40));

        standIn.start();
        Spool second = Spool.open(root, "parca", 64 << 20);
        cleanup.add(second);
        assertFalse(Files.exists(torn));
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L), second.sequences());
        startLoop(second, client);
        second.append(Map.of(), TestBatches.bytes(7));
        second.append(Map.of(), TestBatches.bytes(8));
        await("all 8 batches", () -> standIn.accepted().size() >= 8 && second.stats().batches() == 0);
        standIn.stop(); // waits for the calls it has begun: nothing is accepted after this
        assertEquals(range(1, 8), seqs(standIn));
    }

    @Test
    void wireMockFaultsAreRetriedOrQuarantinedAndTheTokenNeverLogged() throws Exception {
        String token = "tkn-" + Long.toHexString(System.nanoTime()) + "-never-logged";
        Path tokenFile = Files.writeString(root.resolve("token"), token + "\n");
        WireMockServer wireMock = new WireMockServer(options().bindAddress("127.0.0.1").dynamicPort());
        wireMock.start();
        cleanup.add(wireMock::stop);

        // Batch 1 meets every transient fault in turn (503, UNAVAILABLE, connection reset, stream reset,
        // garbage, too slow, RESOURCE_EXHAUSTED), then succeeds.
        byte[] one = frame(TestBatches.bytes(1));
        List<ResponseDefinitionBuilder> faults = List.of(
                aResponse().withStatus(503).withBody("no healthy upstream"),
                grpc(14, "shutting down"),
                aResponse().withFault(Fault.CONNECTION_RESET_BY_PEER),
                aResponse().withFault(Fault.EMPTY_RESPONSE),
                aResponse().withFault(Fault.RANDOM_DATA_THEN_CLOSE),
                grpc(0, null).withFixedDelay(3_000),
                grpc(8, "ingest queue full"),
                grpc(0, null));
        for (int i = 0; i < faults.size(); i++) {
            wireMock.stubFor(post(urlEqualTo(ParcaClient.PATH)).withRequestBody(binaryEqualTo(one))
                    .inScenario("batch 1").whenScenarioStateIs(i == 0 ? STARTED : "attempt " + i)
                    .willSetStateTo("attempt " + (i + 1)).willReturn(faults.get(i)));
        }
        wireMock.stubFor(post(urlEqualTo(ParcaClient.PATH)).withRequestBody(binaryEqualTo(frame(TestBatches.bytes(2))))
                .willReturn(grpc(3, "label name \"a-b\" is invalid")));
        wireMock.stubFor(post(urlEqualTo(ParcaClient.PATH)).withRequestBody(binaryEqualTo(frame(TestBatches.bytes(3))))
                .willReturn(grpc(16, "token expired")));
        wireMock.stubFor(post(urlEqualTo(ParcaClient.PATH)).withRequestBody(binaryEqualTo(frame(TestBatches.bytes(4))))
                .willReturn(grpc(0, null)));

        try (LogCapture ours = new LogCapture("dev.loupe"); LogCapture okhttp = new LogCapture("okhttp3")) {
            ParcaClientConfig config = ParcaClientConfig.builder("127.0.0.1:" + wireMock.port()).insecure(true)
                    .bearerTokenFile(tokenFile).header("projectID", "p1").timeout(Duration.ofMillis(500)).build();
            ParcaClient client = ParcaClient.create(config);
            cleanup.add(client);
            System.getLogger("dev.loupe.agent.ship.test").log(System.Logger.Level.INFO, "config " + config + ", " + client);
            Spool spool = Spool.open(root, "parca", 64 << 20);
            cleanup.add(spool);
            DeliveryLoop loop = startLoop(spool, client);
            for (long i = 1; i <= 4; i++) {
                spool.append(Map.of(), TestBatches.bytes(i));
            }
            await("the spool to empty", () -> spool.stats().batches() == 0);

            List<ServeEvent> events = new ArrayList<>(wireMock.getAllServeEvents());
            events.sort((a, b) -> a.getRequest().getLoggedDate().compareTo(b.getRequest().getLoggedDate()));
            List<Long> sent = events.stream().map(e -> seqOfFrame(e.getRequest().getBody())).toList();
            assertEquals(List.of(1L, 1L, 1L, 1L, 1L, 1L, 1L, 1L, 2L, 3L, 4L), sent, "batch 1 retried until accepted, then order kept");
            for (ServeEvent e : events) {
                assertEquals("Bearer " + token, e.getRequest().getHeader("authorization"));
            }
            assertEquals(new DeliveryLoop.Stats(2, TestBatches.bytes(1).length + TestBatches.bytes(4).length, 9, 7, 2),
                    loop.stats());
            assertEquals("grpc-status 3 INVALID_ARGUMENT: label name \"a-b\" is invalid\n",
                    Files.readString(root.resolve("parca/quarantine/00000000000000000002.reason")));
            assertEquals("grpc-status 16 UNAUTHENTICATED: token expired\n",
                    Files.readString(root.resolve("parca/quarantine/00000000000000000003.reason")));
            assertEquals(TestBatches.request(3), WriteRawRequest.parseFrom(
                    payloadOf(Files.readAllBytes(root.resolve("parca/quarantine/00000000000000000003.batch")))));

            String logs = ours.text() + okhttp.text();
            assertTrue(logs.contains("UNAUTHENTICATED: token expired"), logs);
            assertTrue(logs.contains(tokenFile.toString()), "the config names the file: " + logs);
            assertTrue(logs.contains("HEADERS"), "OkHttp's frame log was captured too: " + okhttp.text());
            assertFalse(logs.contains(token), "the bearer token is never logged");
            assertFalse(logs.contains(token.substring(4, 14)), "not even part of it");
            assertFalse(logs.contains("p1]") || logs.contains("=p1"), "header values are not logged either");
        }
    }

    private static ResponseDefinitionBuilder grpc(int status, String message) {
        var r = aResponse().withStatus(200).withHeader("content-type", "application/grpc")
                .withHeader("grpc-status", Integer.toString(status));
        return message == null ? r.withBody(new byte[5])
                : r.withHeader("grpc-message", java.net.URLEncoder.encode(message, java.nio.charset.StandardCharsets.UTF_8)
                        .replace("+", "%20"));
    }

    private static byte[] frame(byte[] message) {
        return ByteBuffer.allocate(5 + message.length).put((byte) 0).putInt(message.length).put(message).array();
    }

    private static long seqOfFrame(byte[] body) {
        try {
            return TestBatches.seqOf(WriteRawRequest.parseFrom(Arrays.copyOfRange(body, 5, body.length)));
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static byte[] payloadOf(byte[] batchFile) throws Exception {
        return BatchFile.decode(1, batchFile).payload();
    }
}
