package dev.loupe.agent.http;

import dev.loupe.agent.sampling.Agent;
import dev.loupe.config.HttpSettings;
import dev.loupe.pprof.PprofFiles;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Unix socket listener: its file (mode, what may be there before, gone after), and everything served on it. */
class UnixSocketTest {
    @TempDir
    Path dir;
    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final Fixture.Latency latency = new Fixture.Latency();
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

    /** TCP with profiles off (the service's default) beside the socket. */
    private DebugHttpServer start(Path socket) throws IOException {
        if (agent == null) {
            agent = Fixture.agent(latency);
            agent.start();
        }
        return DebugHttpServer.start(new HttpSettings(Optional.of(new InetSocketAddress("127.0.0.1", 0)),
                HttpSettings.Profiles.OFF, Optional.empty(), Optional.empty(), Optional.empty(), Optional.of(socket)),
                agent, registry);
    }

    @Test
    void servesEverythingWithoutATokenOnA0660Socket() throws Exception {
        Path socket = dir.resolve("loupe.sock");
        server = start(socket);
        assertEquals(Optional.of(socket), server.socket());
        assertTrue(UnixSocketFile.isSocket(socket));
        assertEquals("rw-rw----", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS)));

        Fixture.RawResponse health = awaitHealthy(socket);
        assertEquals(200, health.status(), health.head());
        assertTrue(health.text().startsWith("{\"status\":\"ok\","), health.text());

        Fixture.RawResponse cpu = Fixture.getOverSocket(socket, "/debug/pprof/profile?seconds=1");
        assertEquals(200, cpu.status(), cpu.head());
        assertTrue(cpu.head().contains("Content-Disposition: attachment; filename=\"profile.pb.gz\""), cpu.head());
        assertEquals(1_000_000_000L, PprofFiles.parse(cpu.body()).getDurationNanos(), 200_000_000L);
        Fixture.RawResponse lat = Fixture.getOverSocket(socket, "/debug/pprof/latency?seconds=3");
        assertEquals(200, lat.status(), lat.head());
        assertEquals(Duration.ofSeconds(3).toNanos(), PprofFiles.parse(lat.body()).getDurationNanos());
        Fixture.RawResponse kept = Fixture.getOverSocket(socket, "/debug/pprof/latency?baseline=previous_build");
        assertEquals(7, PprofFiles.parse(kept.body()).getDurationNanos());
        Fixture.RawResponse metrics = Fixture.getOverSocket(socket, "/metrics");
        assertEquals(200, metrics.status());
        assertTrue(metrics.text().contains("loupe_http_requests_refused_total{listener=\"unix\",reason=\"no_token\"} 0.0\n"),
                metrics.text());
        assertEquals(404, Fixture.getOverSocket(socket, "/nothing").status());

        // The same profile path on TCP is refused: the socket is the way in.
        java.net.http.HttpResponse<String> viaTcp = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest
                .newBuilder(java.net.URI.create(server.baseUrl().orElseThrow() + "/debug/pprof/profile")).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertEquals(403, viaTcp.statusCode());
        assertEquals(0.0, Fixture.metric(registry, "loupe_http_requests_refused_total{listener=\"unix\",reason=\"profiles_off\"}"));
        assertEquals(1.0, Fixture.metric(registry, "loupe_http_requests_refused_total{listener=\"tcp\",reason=\"profiles_off\"}"));
        assertEquals(1, latency.captures.get());

        server.close();
        server = null;
        assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "the socket file is removed at close");
    }

    @Test
    void aStaleSocketIsReplaced() throws Exception {
        Path socket = dir.resolve("stale.sock");
        // What a crash leaves: a bound socket file whose listener is gone.
        ServerSocketChannel dead = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        dead.bind(UnixDomainSocketAddress.of(socket));
        dead.close();
        assertTrue(UnixSocketFile.isSocket(socket));
        // Binding over the file would fail (EADDRINUSE): the start removed it and bound a new one.
        server = start(socket);
        assertEquals("rw-rw----", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS)));
        assertEquals(200, awaitHealthy(socket).status());
    }

    @Test
    void refusesWhatIsNotAStaleSocket() throws Exception {
        Path file = Files.writeString(dir.resolve("regular"), "not a socket");
        IOException e = assertThrows(IOException.class, () -> start(file));
        assertEquals("http.socket " + file + ": " + file + " exists and is not a socket: remove it or choose another "
                + "http.socket", e.getMessage());
        assertEquals("not a socket", Files.readString(file), "left alone");

        Path live = dir.resolve("live.sock");
        try (ServerSocketChannel other = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            other.bind(UnixDomainSocketAddress.of(live));
            e = assertThrows(IOException.class, () -> start(live));
            assertEquals("http.socket " + live + ": another process serves " + live + " (is another loupe running?)",
                    e.getMessage());
            try (SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(live))) {
                assertTrue(c.isConnected(), "the other listener's socket is still there");
            }
        }

        Path nowhere = dir.resolve("no-such-dir").resolve("loupe.sock");
        e = assertThrows(IOException.class, () -> start(nowhere));
        assertEquals("http.socket " + nowhere + ": directory " + nowhere.getParent() + " does not exist (the service's "
                + "RuntimeDirectory=loupe makes /run/loupe)", e.getMessage());
    }

    /** The agent's loop has polled once (its first poll marks it healthy within a few ms). */
    private static Fixture.RawResponse awaitHealthy(Path socket) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        Fixture.RawResponse r = Fixture.getOverSocket(socket, "/healthz");
        while (r.status() != 200 && System.nanoTime() < deadline) {
            Thread.sleep(20);
            r = Fixture.getOverSocket(socket, "/healthz");
        }
        return r;
    }
}
