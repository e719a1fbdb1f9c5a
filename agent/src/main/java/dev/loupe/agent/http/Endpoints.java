package dev.loupe.agent.http;

import dev.loupe.agent.logging.RateLimitedLog;
import dev.loupe.agent.sampling.Agent;
import dev.loupe.agent.sampling.SideProfileSource;
import dev.loupe.bpf.SamplerStats;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.proto.Profile;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import jdk.net.ExtendedSocketOptions;
import jdk.net.UnixDomainPrincipal;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

import java.io.IOException;
import java.net.SocketAddress;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * What every listener serves, and the one difference between them: whether a profile request is let through
 * ({@link ProfileAccess}, per listener). Refusals come before anything else a profile request would do, so a
 * refused request never starts a capture.
 */
final class Endpoints extends Handler.Abstract {
    static final int MAX_SECONDS = 600;
    static final int MAX_CONCURRENT_PROFILES = 4;
    private static final String PPROF = "/debug/pprof";
    private static final System.Logger LOG = System.getLogger(DebugHttpServer.class.getName());

    private final Agent agent;
    private final PrometheusRegistry registry;
    private final Refusals refusals;
    private final Map<String, Refusals.Listener> listeners;
    private final Map<Refusals.Listener, ProfileAccess> access;
    private final Map<String, ProfileEndpoint> profiles = new LinkedHashMap<>();
    private final Semaphore profileSlots = new Semaphore(MAX_CONCURRENT_PROFILES);
    private final RateLimitedLog socketFetches;
    private final String notFound;

    /**
     * @param listeners each connector's name to its listener
     * @param access    who gets profiles on each listener
     */
    Endpoints(Agent agent, PrometheusRegistry registry, Refusals refusals, Map<String, Refusals.Listener> listeners,
              Map<Refusals.Listener, ProfileAccess> access, LongSupplier nanoTime) {
        this.agent = agent;
        this.registry = registry;
        this.refusals = refusals;
        this.listeners = Map.copyOf(listeners);
        this.access = Map.copyOf(access);
        this.socketFetches = new RateLimitedLog(LOG, System.Logger.Level.INFO, TimeUnit.SECONDS.toNanos(10), nanoTime);
        profiles.put(PPROF + "/profile", new ProfileEndpoint("profile", agent::capture, null));
        for (SideProfileSource side : agent.sideProfiles()) {
            profiles.put(PPROF + "/" + side.profileType(), new ProfileEndpoint(side.profileType(), side::capture, side::stored));
        }
        notFound = "not found; try " + String.join(", ", profiles.keySet()) + ", /healthz, /metrics\n";
    }

    /** A profile of the next {@code duration}: the agent's CPU profile, a side source's. */
    @FunctionalInterface
    interface Capture {
        Profile capture(Duration duration) throws InterruptedException;
    }

    /** A profile a source keeps, named by a query parameter ({@link SideProfileSource#stored}). */
    @FunctionalInterface
    interface Stored {
        Optional<Profile> stored(String parameter, String value);
    }

    /** {@code /debug/pprof/NAME}: {@code stored} is null when the source keeps none. */
    private record ProfileEndpoint(String name, Capture capture, Stored stored) {}

    @Override
    public boolean handle(Request request, Response response, Callback callback) throws Exception {
        String path = request.getHttpURI().getPath();
        if (path == null) {
            path = "/";
        }
        Refusals.Listener listener = listeners.get(request.getConnectionMetaData().getConnector().getName());
        if (path.equals(PPROF) || path.startsWith(PPROF + "/")) {
            Optional<Refusals.Reason> refused = access.get(listener).check(request.getHeaders().get(HttpHeader.AUTHORIZATION));
            if (refused.isPresent()) {
                Refusals.Reason r = refused.get();
                refusals.refused(listener, r, path, peer(request, listener));
                if (r.challenge != null) {
                    response.getHeaders().put(HttpHeader.WWW_AUTHENTICATE, r.challenge);
                }
                respond(response, callback, r.status, "text/plain; charset=utf-8", r.text + "\n");
                return true;
            }
            ProfileEndpoint endpoint = profiles.get(path);
            if (endpoint != null) {
                if (listener == Refusals.Listener.UNIX) {
                    socketFetches.log("http: " + path + " for " + peer(request, listener) + " over the Unix socket");
                }
                serveProfile(request, response, callback, endpoint);
                return true;
            }
        } else if (path.equals("/healthz")) {
            health(response, callback);
            return true;
        } else if (path.equals("/metrics")) {
            respond(response, callback, 200, DebugHttpServer.METRICS_FORMAT.getContentType(), DebugHttpServer.metricsText(registry));
            return true;
        }
        respond(response, callback, 404, "text/plain; charset=utf-8", notFound);
        return true;
    }

    /**
     * One profile request, served as the file {@code NAME.pb.gz}: GET only; {@code baseline=} or {@code window=} asks
     * the endpoint's stored profiles (when it has them) for one it keeps; otherwise {@code seconds=N} (default 30)
     * of its capture, at most {@value #MAX_CONCURRENT_PROFILES} captures at a time.
     */
    private void serveProfile(Request request, Response response, Callback callback, ProfileEndpoint endpoint) throws IOException {
        if (!"GET".equals(request.getMethod())) {
            response.getHeaders().put(HttpHeader.ALLOW, "GET");
            respond(response, callback, 405, "text/plain; charset=utf-8", "use GET\n");
            return;
        }
        String query = request.getHttpURI().getQuery();
        Optional<String[]> storedName = endpoint.stored() == null ? Optional.empty() : storedName(query);
        if (storedName.isPresent()) {
            String[] kv = storedName.get();
            Optional<Profile> kept;
            try {
                kept = endpoint.stored().stored(kv[0], kv[1]);
            } catch (IllegalArgumentException e) {
                respond(response, callback, 400, "text/plain; charset=utf-8", e.getMessage() + "\n");
                return;
            }
            if (kept.isEmpty()) {
                respond(response, callback, 404, "text/plain; charset=utf-8",
                        "no " + kv[0] + "=" + kv[1] + " " + endpoint.name() + " profile yet\n");
                return;
            }
            respondProfile(response, callback, endpoint.name() + "-" + kv[1].replaceAll("[^A-Za-z0-9_]", "_"), kept.get());
            return;
        }
        int seconds;
        try {
            seconds = parseSeconds(query);
        } catch (IllegalArgumentException e) {
            respond(response, callback, 400, "text/plain; charset=utf-8", e.getMessage() + "\n");
            return;
        }
        if (!profileSlots.tryAcquire()) {
            respond(response, callback, 429, "text/plain; charset=utf-8",
                    "too many profiles in progress (max " + MAX_CONCURRENT_PROFILES + ")\n");
            return;
        }
        Profile p;
        try {
            p = endpoint.capture().capture(Duration.ofSeconds(seconds));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            respond(response, callback, 503, "text/plain; charset=utf-8", "interrupted\n");
            return;
        } finally {
            profileSlots.release();
        }
        respondProfile(response, callback, endpoint.name(), p);
    }

    /** 200 with {@code p} gzipped, as the download {@code fileName.pb.gz}. */
    private static void respondProfile(Response response, Callback callback, String fileName, Profile p) throws IOException {
        response.getHeaders().put(HttpHeader.CONTENT_DISPOSITION, "attachment; filename=\"" + fileName + ".pb.gz\"");
        response.getHeaders().put("X-Content-Type-Options", "nosniff");
        respond(response, callback, 200, "application/octet-stream", PprofFiles.gzip(p));
    }

    private void health(Response response, Callback callback) {
        Agent.Status st = agent.status();
        SamplerStats s = st.sampler();
        String body = "{\"status\":\"" + (st.healthy() ? "ok" : "unhealthy") + "\",\"samples\":" + s.samples()
                + ",\"dropped\":" + s.dropped() + ",\"profiles_written\":" + st.profilesWritten()
                + ",\"sink_errors\":" + st.sinkErrors() + "}\n";
        respond(response, callback, st.healthy() ? 200 : 503, "application/json", body);
    }

    /** {@code baseline=NAME} or {@code window=NAME}: a profile the source keeps (the first such parameter). */
    static Optional<String[]> storedName(String rawQuery) {
        if (rawQuery == null) {
            return Optional.empty();
        }
        for (String kv : rawQuery.split("&")) {
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
    static int parseSeconds(String rawQuery) {
        if (rawQuery == null) {
            return 30;
        }
        for (String kv : rawQuery.split("&")) {
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

    /** Who is asking: the TCP peer's address, or the user (from SO_PEERCRED) on the Unix socket. */
    static String peer(Request request, Refusals.Listener listener) {
        if (listener == Refusals.Listener.UNIX) {
            EndPoint endPoint = request.getConnectionMetaData().getConnection().getEndPoint();
            if (endPoint.getTransport() instanceof SocketChannel channel) {
                try {
                    UnixDomainPrincipal who = channel.getOption(ExtendedSocketOptions.SO_PEERCRED);
                    return "user " + who.user().getName();
                } catch (IOException | UnsupportedOperationException e) {
                    return "an unknown user (" + e.getMessage() + ")";
                }
            }
            return "an unknown user";
        }
        SocketAddress remote = request.getConnectionMetaData().getRemoteSocketAddress();
        return String.valueOf(remote);
    }

    private static void respond(Response response, Callback callback, int code, String type, String body) {
        respond(response, callback, code, type, body.getBytes(StandardCharsets.UTF_8));
    }

    private static void respond(Response response, Callback callback, int code, String type, byte[] body) {
        response.setStatus(code);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, type);
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
        response.write(true, ByteBuffer.wrap(body), callback);
    }
}
