package dev.loupe.agent.http;

import dev.loupe.agent.sampling.Agent;
import dev.loupe.config.HttpSettings;
import dev.loupe.pprof.PprofFiles;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static dev.loupe.agent.http.DebugHttpServerTest.assertText;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Who gets profiles over TCP, per http.profiles; what a refusal says and counts; /metrics and /healthz for all. */
class ProfileAccessTest {
    static final String OFF_TEXT = "profiles are not served on TCP (http.profiles: off): use the Unix socket (http.socket) "
            + "or set http.profiles: on with http.bearer-token-file\n";
    static final String NO_TOKEN_TEXT = "a bearer token is required: Authorization: Bearer <token>\n";
    static final String WRONG_TOKEN_TEXT = "the bearer token is not the one of http.bearer-token-file\n";

    @TempDir
    Path dir;
    private final HttpClient http = HttpClient.newHttpClient();
    private final Fixture.Latency latency = new Fixture.Latency();
    private final PrometheusRegistry registry = new PrometheusRegistry();
    private Agent agent;
    private DebugHttpServer server;
    private String base;

    private void start(HttpSettings settings) throws Exception {
        agent = Fixture.agent(latency);
        server = DebugHttpServer.start(settings, agent, registry);
        base = server.baseUrl().orElseThrow();
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
        agent.stop();
    }

    @Test
    void profilesOffOnTcpByDefault() throws Exception {
        start(Fixture.tcp(HttpSettings.Profiles.OFF, null));
        for (String path : new String[] {"/debug/pprof/profile?seconds=600", "/debug/pprof/latency?seconds=1",
                "/debug/pprof/latency?baseline=previous_build", "/debug/pprof/", "/debug/pprof/heap"}) {
            HttpResponse<byte[]> r = get(path, null);
            assertText(403, OFF_TEXT, r);
            assertEquals("", r.headers().firstValue("WWW-Authenticate").orElse(""));
        }
        // A token changes nothing when profiles are off; POST is refused the same way (access before method).
        assertText(403, OFF_TEXT, get("/debug/pprof/profile", "Bearer anything"));
        assertText(403, OFF_TEXT, http.send(HttpRequest.newBuilder(URI.create(base + "/debug/pprof/profile"))
                .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofByteArray()));
        assertEquals(0, latency.captures.get());
        assertEquals(200, get("/metrics", null).statusCode(), "Prometheus scrapes without a token");
        assertEquals(503, get("/healthz", null).statusCode(), "health for all (unhealthy: this agent never samples)");
        assertEquals(7.0, Fixture.metric(registry, "loupe_http_requests_refused_total{listener=\"tcp\",reason=\"profiles_off\"}"));
        assertEquals(0.0, Fixture.metric(registry, "loupe_http_requests_refused_total{listener=\"tcp\",reason=\"no_token\"}"));
        assertEquals(0.0, Fixture.metric(registry, "loupe_http_requests_refused_total{listener=\"tcp\",reason=\"wrong_token\"}"));
        String text = new String(DebugHttpServer.metricsText(registry), StandardCharsets.UTF_8);
        assertTrue(!text.contains("listener=\"unix\""), "no socket, no unix series:\n" + text);
        assertTrue(!text.contains("loupe_http_reload_failures_total"), "no watched files, no reload series:\n" + text);
    }

    @Test
    void bearerTokenOnTcp() throws Exception {
        Path token = Files.writeString(dir.resolve("token"), "c0ffee-token\n");
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-r-----"));
        start(Fixture.tcp(HttpSettings.Profiles.ON, token));

        HttpResponse<byte[]> none = get("/debug/pprof/latency?seconds=1", null);
        assertText(401, NO_TOKEN_TEXT, none);
        assertEquals("Bearer realm=\"loupe\"", none.headers().firstValue("WWW-Authenticate").orElse(""));
        HttpResponse<byte[]> basic = get("/debug/pprof/latency?seconds=1", "Basic YWxpY2U6c2VjcmV0");
        assertText(401, NO_TOKEN_TEXT, basic);
        HttpResponse<byte[]> wrong = get("/debug/pprof/latency?seconds=1", "Bearer c0ffee-tokem");
        assertText(401, WRONG_TOKEN_TEXT, wrong);
        assertEquals("Bearer realm=\"loupe\", error=\"invalid_token\"", wrong.headers().firstValue("WWW-Authenticate").orElse(""));
        assertText(401, WRONG_TOKEN_TEXT, get("/debug/pprof/profile", "Bearer c0ffee-token-and-more"));
        assertEquals(0, latency.captures.get(), "no refused request started a capture");

        HttpResponse<byte[]> right = get("/debug/pprof/latency?seconds=2", "Bearer c0ffee-token");
        assertEquals(200, right.statusCode());
        assertEquals(Duration.ofSeconds(2).toNanos(), PprofFiles.parse(right.body()).getDurationNanos());
        assertEquals(200, get("/debug/pprof/latency?baseline=previous_build", "bearer c0ffee-token").statusCode());
        assertEquals(1, latency.captures.get());
        assertEquals(200, get("/metrics", null).statusCode());

        assertEquals(2.0, Fixture.metric(registry, "loupe_http_requests_refused_total{listener=\"tcp\",reason=\"no_token\"}"));
        assertEquals(2.0, Fixture.metric(registry, "loupe_http_requests_refused_total{listener=\"tcp\",reason=\"wrong_token\"}"));
        assertEquals(0.0, Fixture.metric(registry, "loupe_http_requests_refused_total{listener=\"tcp\",reason=\"profiles_off\"}"));
        assertEquals(0.0, Fixture.metric(registry, "loupe_http_reload_failures_total{file=\"bearer_token\"}"));
        assertEquals(2, server.refusals().refusedCount(Refusals.Listener.TCP, Refusals.Reason.NO_TOKEN));
    }

    @Test
    void aRefusalComesBackAtOnceWithoutCapturing() throws Exception {
        Path token = Files.writeString(dir.resolve("token"), "t");
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-------"));
        start(Fixture.tcp(HttpSettings.Profiles.ON, token));
        long t0 = System.nanoTime();
        assertText(401, NO_TOKEN_TEXT, get("/debug/pprof/profile?seconds=600", null));
        assertText(401, WRONG_TOKEN_TEXT, get("/debug/pprof/profile?seconds=600", "Bearer u"));
        long tookMillis = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(tookMillis < 5_000, "two refusals of 600 s captures took " + tookMillis + " ms");
        assertEquals(0, latency.captures.get());
    }

    @Test
    void aTokenFileOthersCanReadStopsTheStart() throws Exception {
        Path token = Files.writeString(dir.resolve("token"), "t");
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-r--r--"));
        agent = Fixture.agent(latency);
        java.io.IOException e = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
                () -> DebugHttpServer.start(Fixture.tcp(HttpSettings.Profiles.ON, token), agent, registry));
        assertEquals("http.bearer-token-file: " + token + " is readable by every user (mode 0644): chmod o-rwx " + token,
                e.getMessage());
    }

    @Test
    void aTokenInClearOffLoopbackIsWarnedOfOnce() throws Exception {
        Path token = Files.writeString(dir.resolve("token"), "t");
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-------"));
        List<String> warnings = new ArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                if (r.getLevel() == java.util.logging.Level.WARNING) {
                    warnings.add(r.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.logging.Logger log = java.util.logging.Logger.getLogger(DebugHttpServer.class.getName());
        log.addHandler(capture);
        try {
            agent = Fixture.agent(latency);
            // Every interface: what a remote Prometheus and pprof user would be given; requests still go to 127.0.0.1.
            server = DebugHttpServer.start(new HttpSettings(Optional.of(new InetSocketAddress("0.0.0.0", 0)),
                    HttpSettings.Profiles.ON, Optional.of(token), Optional.empty(), Optional.empty(), Optional.empty()),
                    agent, registry);
            int port = server.address().orElseThrow().getPort();
            base = "http://127.0.0.1:" + port;
            assertEquals(200, get("/debug/pprof/latency?seconds=1", "Bearer t").statusCode());
            assertEquals(List.of("the bearer token travels in clear text to http://0.0.0.0:" + port + "/debug/pprof/ "
                    + "(http.profiles: on on a non-loopback address without http.tls-cert-file): anyone on the network "
                    + "path can read it"), warnings);
        } finally {
            log.removeHandler(capture);
        }
    }

    @Test
    void noWarningOnLoopback() throws Exception {
        Path token = Files.writeString(dir.resolve("token"), "t");
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-------"));
        List<java.util.logging.LogRecord> records = new ArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                records.add(r);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.logging.Logger log = java.util.logging.Logger.getLogger(DebugHttpServer.class.getName());
        log.addHandler(capture);
        try {
            start(Fixture.tcp(HttpSettings.Profiles.ON, token));
            assertEquals(200, get("/debug/pprof/latency?seconds=1", "Bearer t").statusCode());
        } finally {
            log.removeHandler(capture);
        }
        assertEquals(List.of(), records.stream().map(java.util.logging.LogRecord::getMessage).toList());
    }

    private HttpResponse<byte[]> get(String path, String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path));
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    }
}
