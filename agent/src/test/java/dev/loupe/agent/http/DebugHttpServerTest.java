package dev.loupe.agent.http;

import dev.loupe.agent.sampling.Agent;
import dev.loupe.config.HttpSettings;
import dev.loupe.pprof.PprofFiles;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The endpoints on TCP with profiles served to all (http.profiles: unauthenticated): the two profile endpoints, CPU
 * and a side source's, through one handler (methods, parameters, stored profiles, file names, the capture limit),
 * the 404 listing, a capture longer than the idle timeout, and a start that says nothing through Jetty's loggers.
 */
class DebugHttpServerTest {
    private final HttpClient http = HttpClient.newHttpClient();
    private final Fixture.Latency latency = new Fixture.Latency();
    private Agent agent;
    private DebugHttpServer server;
    private String base;

    private void start(long idleTimeoutMillis) throws Exception {
        agent = Fixture.agent(latency);
        server = DebugHttpServer.start(Fixture.tcp(HttpSettings.Profiles.UNAUTHENTICATED, null), agent,
                new PrometheusRegistry(), System::nanoTime, idleTimeoutMillis);
        base = server.baseUrl().orElseThrow();
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
        if (agent != null) {
            agent.stop();
        }
    }

    @Test
    void capturesOfTheNextSeconds() throws Exception {
        start(30_000);
        HttpResponse<byte[]> cpu = get("/debug/pprof/profile?seconds=1");
        assertEquals(200, cpu.statusCode());
        assertEquals("attachment; filename=\"profile.pb.gz\"", cpu.headers().firstValue("Content-Disposition").orElse(""));
        assertEquals("nosniff", cpu.headers().firstValue("X-Content-Type-Options").orElse(""));
        assertEquals("application/octet-stream", cpu.headers().firstValue("Content-Type").orElse(""));
        assertEquals(1_000_000_000L, PprofFiles.parse(cpu.body()).getDurationNanos(), 200_000_000L);
        // The CPU endpoint keeps no profiles: baseline= is no stored name there.
        assertEquals(200, get("/debug/pprof/profile?baseline=previous_build&seconds=1").statusCode());

        HttpResponse<byte[]> latencyProfile = get("/debug/pprof/latency?seconds=2");
        assertEquals(200, latencyProfile.statusCode());
        assertEquals("attachment; filename=\"latency.pb.gz\"", latencyProfile.headers().firstValue("Content-Disposition").orElse(""));
        assertEquals(Duration.ofSeconds(2).toNanos(), PprofFiles.parse(latencyProfile.body()).getDurationNanos());
        assertEquals(1, latency.captures.get());
    }

    @Test
    void storedProfilesByName() throws Exception {
        start(30_000);
        HttpResponse<byte[]> kept = get("/debug/pprof/latency?baseline=previous_build");
        assertEquals(200, kept.statusCode());
        assertEquals("attachment; filename=\"latency-previous_build.pb.gz\"", kept.headers().firstValue("Content-Disposition").orElse(""));
        assertEquals(7, PprofFiles.parse(kept.body()).getDurationNanos());
        assertText(404, "no window=current latency profile yet\n", get("/debug/pprof/latency?window=current"));
        assertText(400, "no baseline named nightly\n", get("/debug/pprof/latency?baseline=nightly"));
        assertEquals(0, latency.captures.get(), "a stored profile is no capture");
    }

    @Test
    void badRequests() throws Exception {
        start(30_000);
        for (String path : List.of("/debug/pprof/profile", "/debug/pprof/latency")) {
            assertText(400, "seconds must be a whole number, got \"abc\"\n", get(path + "?seconds=abc"));
            assertText(400, "seconds must be between 1 and 600, got 0\n", get(path + "?seconds=0"));
            assertText(400, "seconds must be between 1 and 600, got 601\n", get(path + "?seconds=601"));
            HttpResponse<byte[]> post = http.send(HttpRequest.newBuilder(URI.create(base + path))
                    .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofByteArray());
            assertText(405, "use GET\n", post);
            assertEquals("GET", post.headers().firstValue("Allow").orElse(""));
        }
        String listing = "not found; try /debug/pprof/profile, /debug/pprof/latency, /healthz, /metrics\n";
        assertText(404, listing, get("/"));
        assertText(404, listing, get("/debug/pprof/heap"));
        assertText(404, listing, get("/healthz/more"));
        assertEquals(0, latency.captures.get());
        HttpResponse<byte[]> health = get("/healthz");
        // The agent here never starts its sampling loop: unhealthy.
        assertEquals("503 {\"status\":\"unhealthy\",\"samples\":0,\"dropped\":0,\"profiles_written\":0,\"sink_errors\":0}\n",
                health.statusCode() + " " + new String(health.body(), java.nio.charset.StandardCharsets.UTF_8));
        assertEquals("", health.headers().firstValue("Server").orElse(""), "no Server: Jetty(version) header");
    }

    @Test
    void atMostFourCapturesAtOnce() throws Exception {
        start(30_000);
        CountDownLatch release = new CountDownLatch(1);
        latency.hold = release;
        List<CompletableFuture<HttpResponse<byte[]>>> held = new ArrayList<>();
        for (int i = 0; i < Endpoints.MAX_CONCURRENT_PROFILES; i++) {
            held.add(http.sendAsync(HttpRequest.newBuilder(URI.create(base + "/debug/pprof/latency?seconds=1")).build(),
                    HttpResponse.BodyHandlers.ofByteArray()));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (latency.captures.get() < Endpoints.MAX_CONCURRENT_PROFILES && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(Endpoints.MAX_CONCURRENT_PROFILES, latency.captures.get(), "four captures in progress");
        assertText(429, "too many profiles in progress (max 4)\n", get("/debug/pprof/profile?seconds=1"));
        assertEquals(200, get("/metrics").statusCode(), "quick requests still have threads");
        release.countDown();
        for (CompletableFuture<HttpResponse<byte[]>> f : held) {
            assertEquals(200, f.get(20, TimeUnit.SECONDS).statusCode());
        }
        latency.hold = null;
        assertEquals(200, get("/debug/pprof/latency?seconds=1").statusCode(), "slots are given back");
    }

    @Test
    void aCaptureOutlastsTheIdleTimeout() throws Exception {
        start(1_000);
        HttpResponse<byte[]> cpu = get("/debug/pprof/profile?seconds=3");
        assertEquals(200, cpu.statusCode());
        assertEquals(3_000_000_000L, PprofFiles.parse(cpu.body()).getDurationNanos(), 500_000_000L);
    }

    @Test
    void jettySaysNothingAtInfoOnStartAndStop() throws Exception {
        List<String> records = new ArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getLoggerName() != null && r.getLoggerName().startsWith("org.eclipse.jetty")
                        && r.getLevel().intValue() >= java.util.logging.Level.INFO.intValue()) {
                    records.add(r.getLevel() + " " + r.getLoggerName() + ": " + r.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger root = Logger.getLogger("");
        root.addHandler(capture);
        try {
            start(30_000);
            assertEquals(200, get("/metrics").statusCode());
            server.close();
            server = null;
        } finally {
            root.removeHandler(capture);
        }
        assertEquals(List.of(), records);
        assertEquals(java.util.logging.Level.WARNING, Logger.getLogger("org.eclipse.jetty").getLevel());
    }

    @Test
    void closeCutsOffACaptureInProgress() throws Exception {
        start(30_000);
        latency.hold = new CountDownLatch(1); // never released: only close() ends this capture
        CompletableFuture<HttpResponse<byte[]>> held = http.sendAsync(HttpRequest.newBuilder(
                URI.create(base + "/debug/pprof/latency?seconds=600")).build(), HttpResponse.BodyHandlers.ofByteArray());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (latency.captures.get() == 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(1, latency.captures.get(), "the capture began");
        long t0 = System.nanoTime();
        server.close();
        server = null;
        long closeMillis = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(closeMillis < 10_000, "close took " + closeMillis + " ms with a 600 s capture in progress");
        // The client hears at once: the interrupted capture's 503, or its connection closed (the JDK client then
        // retries the GET once, and finds the port closed).
        String outcome;
        try {
            HttpResponse<byte[]> r = held.get(10, TimeUnit.SECONDS);
            outcome = r.statusCode() + " " + new String(r.body(), java.nio.charset.StandardCharsets.UTF_8);
        } catch (java.util.concurrent.ExecutionException e) {
            outcome = e.getCause() instanceof java.io.IOException ? "cut" : "unexpected: " + e.getCause();
        }
        assertTrue(outcome.equals("503 interrupted\n") || outcome.equals("cut"), outcome);
    }

    @Test
    void aPortInUseIsSaidWithTheOptionToChange() throws Exception {
        agent = Fixture.agent(latency);
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            java.io.IOException e = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
                    () -> DebugHttpServer.start(new HttpSettings(java.util.Optional.of(new java.net.InetSocketAddress("127.0.0.1", port)),
                            HttpSettings.Profiles.OFF, java.util.Optional.empty(), java.util.Optional.empty(),
                            java.util.Optional.empty(), java.util.Optional.empty()), agent, new PrometheusRegistry()));
            assertEquals("cannot serve HTTP on 127.0.0.1:" + port + ": Failed to bind to /127.0.0.1:" + port
                    + " (set http.address or --http off)", e.getMessage());
        }
    }

    private HttpResponse<byte[]> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    static void assertText(int code, String text, HttpResponse<byte[]> r) {
        assertEquals(code + " " + text, r.statusCode() + " " + new String(r.body(), java.nio.charset.StandardCharsets.UTF_8));
        assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"), r.headers().toString());
    }
}
