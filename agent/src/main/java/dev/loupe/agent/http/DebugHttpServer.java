package dev.loupe.agent.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.loupe.agent.sampling.Agent;
import dev.loupe.agent.sampling.SideProfileSource;
import dev.loupe.bpf.SamplerStats;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.proto.Profile;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;

/**
 * Local HTTP endpoint (127.0.0.1 by default):
 * <ul>
 *   <li>{@code /debug/pprof/profile?seconds=N}: a CPU profile of the next N seconds (default 30), the
 *       convention {@code go tool pprof URL} understands;</li>
 *   <li>{@code /healthz}: 200 while the sampling loop is polling, 503 otherwise;</li>
 *   <li>{@code /debug/pprof/latency?baseline=previous_build|trailing} and {@code ?window=current}: the latency
 *       profiles the regression baselines keep ({@link SideProfileSource#stored}), 404 while there is none.</li>
 *   <li>{@code /debug/pprof/latency?seconds=N} (with probes; any {@link SideProfileSource}): that profile
 *       over the next N seconds;</li>
 *   <li>{@code /metrics}: sampler and agent counters in Prometheus text format, and the side sources'
 *       metrics (function latency histograms).</li>
 * </ul>
 */
public final class DebugHttpServer implements AutoCloseable {
    static final int MAX_SECONDS = 600;
    private static final int MAX_CONCURRENT_PROFILES = 4;
    private final HttpServer server;
    private final ExecutorService executor;
    private final Agent agent;
    private final PrometheusRegistry registry;
    private static final PrometheusTextFormatWriter METRICS_FORMAT = PrometheusTextFormatWriter.create();
    private final Semaphore profileSlots = new Semaphore(MAX_CONCURRENT_PROFILES);

    private DebugHttpServer(HttpServer server, ExecutorService executor, Agent agent, PrometheusRegistry registry) {
        this.server = server;
        this.executor = executor;
        this.agent = agent;
        this.registry = registry;
    }

    /** Serves {@code agent}'s profiles and health, and {@code registry}'s metrics (the components registered them). */
    public static DebugHttpServer start(InetSocketAddress address, Agent agent, PrometheusRegistry registry) throws IOException {
        HttpServer server = HttpServer.create(address, 16);
        ExecutorService executor = Executors.newFixedThreadPool(MAX_CONCURRENT_PROFILES + 2, r -> {
            Thread t = new Thread(r, "loupe-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        DebugHttpServer s = new DebugHttpServer(server, executor, agent, registry);
        server.createContext("/debug/pprof/profile", ex -> s.serveProfile(ex, "profile", agent::capture, null));
        for (SideProfileSource side : agent.sideProfiles()) {
            server.createContext("/debug/pprof/" + side.profileType(),
                    ex -> s.serveProfile(ex, side.profileType(), side::capture, side::stored));
        }
        server.createContext("/healthz", s::health);
        server.createContext("/metrics", s::metrics);
        server.createContext("/", ex -> respond(ex, 404, "text/plain", "not found; try /debug/pprof/profile, /healthz, /metrics\n"));
        server.start();
        return s;
    }

    public InetSocketAddress address() {
        return server.getAddress();
    }

    /** A profile of the next {@code duration}: the agent's CPU profile, a side source's. */
    @FunctionalInterface
    private interface Capture {
        Profile capture(Duration duration) throws InterruptedException;
    }

    /** A profile a source keeps, named by a query parameter ({@link SideProfileSource#stored}). */
    @FunctionalInterface
    private interface Stored {
        Optional<Profile> stored(String parameter, String value);
    }

    /**
     * One profile request, served as the file {@code NAME.pb.gz}: GET only; {@code baseline=} or {@code window=} asks
     * {@code stored} (when the endpoint has one) for a profile it keeps; otherwise {@code seconds=N} (default 30) of
     * {@code capture}, at most {@value #MAX_CONCURRENT_PROFILES} captures at a time.
     */
    private void serveProfile(HttpExchange ex, String name, Capture capture, Stored stored) throws IOException {
        try (ex) {
            if (!"GET".equals(ex.getRequestMethod())) {
                respond(ex, 405, "text/plain", "use GET\n");
                return;
            }
            Optional<String[]> storedName = stored == null ? Optional.empty() : storedName(ex.getRequestURI());
            if (storedName.isPresent()) {
                String[] kv = storedName.get();
                Optional<Profile> kept;
                try {
                    kept = stored.stored(kv[0], kv[1]);
                } catch (IllegalArgumentException e) {
                    respond(ex, 400, "text/plain", e.getMessage() + "\n");
                    return;
                }
                if (kept.isEmpty()) {
                    respond(ex, 404, "text/plain", "no " + kv[0] + "=" + kv[1] + " " + name + " profile yet\n");
                    return;
                }
                respondProfile(ex, name + "-" + kv[1].replaceAll("[^A-Za-z0-9_]", "_"), kept.get());
                return;
            }
            int seconds;
            try {
                seconds = parseSeconds(ex.getRequestURI());
            } catch (IllegalArgumentException e) {
                respond(ex, 400, "text/plain", e.getMessage() + "\n");
                return;
            }
            if (!profileSlots.tryAcquire()) {
                respond(ex, 429, "text/plain", "too many profiles in progress (max " + MAX_CONCURRENT_PROFILES + ")\n");
                return;
            }
            Profile p;
            try {
                p = capture.capture(Duration.ofSeconds(seconds));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                respond(ex, 503, "text/plain", "interrupted\n");
                return;
            } finally {
                profileSlots.release();
            }
            respondProfile(ex, name, p);
        }
    }

    /** 200 with {@code p} gzipped, as the download {@code fileName.pb.gz}. */
    private static void respondProfile(HttpExchange ex, String fileName, Profile p) throws IOException {
        ex.getResponseHeaders().add("Content-Disposition", "attachment; filename=\"" + fileName + ".pb.gz\"");
        ex.getResponseHeaders().add("X-Content-Type-Options", "nosniff");
        respond(ex, 200, "application/octet-stream", PprofFiles.gzip(p));
    }

    /** {@code baseline=NAME} or {@code window=NAME}: a profile the source keeps (the first such parameter). */
    static Optional<String[]> storedName(URI uri) {
        String q = uri.getRawQuery();
        if (q == null) {
            return Optional.empty();
        }
        for (String kv : q.split("&")) {
            for (String key : new String[] {"baseline", "window"}) {
                if (kv.startsWith(key + "=")) {
                    return Optional.of(new String[] {key,
                            URLDecoder.decode(kv.substring(key.length() + 1), StandardCharsets.UTF_8)});
                }
            }
        }
        return Optional.empty();
    }

    /** Go's convention: {@code seconds} defaults to 30. */
    static int parseSeconds(URI uri) {
        String q = uri.getRawQuery();
        if (q == null) {
            return 30;
        }
        for (String kv : q.split("&")) {
            if (kv.startsWith("seconds=")) {
                String v = kv.substring(8);
                int s;
                try {
                    s = Integer.parseInt(v);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("seconds must be a whole number, got \"" + v + "\"");
                }
                if (s < 1 || s > MAX_SECONDS) {
                    throw new IllegalArgumentException("seconds must be between 1 and " + MAX_SECONDS + ", got " + s);
                }
                return s;
            }
        }
        return 30;
    }

    private void health(HttpExchange ex) throws IOException {
        try (ex) {
            Agent.Status st = agent.status();
            SamplerStats s = st.sampler();
            String body = "{\"status\":\"" + (st.healthy() ? "ok" : "unhealthy") + "\",\"samples\":" + s.samples()
                    + ",\"dropped\":" + s.dropped() + ",\"profiles_written\":" + st.profilesWritten()
                    + ",\"sink_errors\":" + st.sinkErrors() + "}\n";
            respond(ex, st.healthy() ? 200 : 503, "application/json", body);
        }
    }

    private void metrics(HttpExchange ex) throws IOException {
        try (ex) {
            respond(ex, 200, METRICS_FORMAT.getContentType(), metricsText(registry));
        }
    }

    /** The registry's metrics in Prometheus' text format (0.0.4), as /metrics serves them. */
    public static byte[] metricsText(PrometheusRegistry registry) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream(8192);
        METRICS_FORMAT.write(out, registry.scrape());
        return out.toByteArray();
    }

    private static void respond(HttpExchange ex, int code, String type, String body) throws IOException {
        respond(ex, code, type, body.getBytes(StandardCharsets.UTF_8));
    }

    private static void respond(HttpExchange ex, int code, String type, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", type);
        ex.sendResponseHeaders(code, body.length == 0 ? -1 : body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
