package dev.loupe.agent.http;

import dev.loupe.agent.sampling.Agent;
import dev.loupe.config.HttpSettings;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.eclipse.jetty.server.ConnectionFactory;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.SslConnectionFactory;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.unixdomain.server.UnixDomainServerConnector;
import org.eclipse.jetty.util.ssl.SslContextFactory;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The local HTTP endpoint, on Jetty (core handlers, no servlets), with up to two listeners:
 * <ul>
 *   <li>TCP ({@code http.address}, optionally TLS only): {@code /metrics} and {@code /healthz} for anyone (Prometheus
 *       scrapes them); {@code /debug/pprof/*} as {@code http.profiles} says: refused (403), to bearer-token holders,
 *       or to everyone on a loopback address;</li>
 *   <li>a Unix domain socket ({@code http.socket}, mode 0660): everything, with no token: the socket file's owner
 *       and group decide who connects.</li>
 * </ul>
 * The endpoints ({@link Endpoints}): {@code /debug/pprof/profile?seconds=N} (a CPU profile of the next N seconds, as
 * {@code go tool pprof URL} expects), {@code /debug/pprof/<side profile type>} (latency: {@code ?seconds=N},
 * {@code ?baseline=previous_build|trailing}, {@code ?window=current}), {@code /healthz}, {@code /metrics}. Refusals
 * are counted in {@code loupe_http_requests_refused_total} ({@link Refusals}); the token file ({@link BearerToken})
 * and the TLS files ({@link ReloadingTls}) are re-read when they change.
 */
public final class DebugHttpServer implements AutoCloseable {
    static final PrometheusTextFormatWriter METRICS_FORMAT = PrometheusTextFormatWriter.create();
    static final String TCP = "tcp";
    static final String UNIX = "unix";
    /** Jetty's threads: an acceptor and a selector per listener, four captures, and the rest for quick requests. */
    private static final int MAX_THREADS = 16;
    private static final System.Logger LOG = System.getLogger(DebugHttpServer.class.getName());
    /** A strong reference: java.util.logging keeps loggers weakly, and a collected logger forgets its level. */
    private static final Logger JETTY_LOG = Logger.getLogger("org.eclipse.jetty");

    private final Server server;
    private final ServerConnector tcp;
    private final UnixDomainServerConnector unix;
    private final Refusals refusals;
    private final ReloadingTls tls;

    private DebugHttpServer(Server server, ServerConnector tcp, UnixDomainServerConnector unix, Refusals refusals, ReloadingTls tls) {
        this.server = server;
        this.tcp = tcp;
        this.unix = unix;
        this.refusals = refusals;
        this.tls = tls;
    }

    /**
     * Serves {@code agent}'s profiles and health, and {@code registry}'s metrics (the components registered them;
     * the refusal counters are added to it), on the listeners {@code settings} names. Throws with a message for the
     * user when a file (token, certificate, socket path) or an address is not usable; nothing is left open then.
     */
    public static DebugHttpServer start(HttpSettings settings, Agent agent, PrometheusRegistry registry) throws IOException {
        return start(settings, agent, registry, System::nanoTime, 30_000);
    }

    /** With the clock of the once-a-second file checks, and the connections' idle timeout. */
    static DebugHttpServer start(HttpSettings settings, Agent agent, PrometheusRegistry registry, LongSupplier nanoTime,
                                 long idleTimeoutMillis) throws IOException {
        quietJetty();
        Refusals refusals = new Refusals(nanoTime);
        Map<Refusals.Listener, ProfileAccess> access = new EnumMap<>(Refusals.Listener.class);
        Set<Refusals.WatchedFile> watched = EnumSet.noneOf(Refusals.WatchedFile.class);
        ReloadingTls tls = null;
        if (settings.address().isPresent()) {
            access.put(Refusals.Listener.TCP, switch (settings.profiles()) {
                case OFF -> new ProfileAccess.Off();
                case UNAUTHENTICATED -> new ProfileAccess.Open();
                case ON -> {
                    Path file = settings.bearerTokenFile().orElseThrow();
                    watched.add(Refusals.WatchedFile.BEARER_TOKEN);
                    try {
                        yield new ProfileAccess.Token(BearerToken.open(file, nanoTime,
                                () -> refusals.reloadFailed(Refusals.WatchedFile.BEARER_TOKEN)));
                    } catch (IOException e) {
                        throw new IOException("http.bearer-token-file: " + e.getMessage(), e);
                    }
                }
            });
            if (settings.tls()) {
                watched.add(Refusals.WatchedFile.TLS);
                try {
                    tls = ReloadingTls.open(settings.tlsCertFile().orElseThrow(), settings.tlsKeyFile().orElseThrow(),
                            nanoTime, () -> refusals.reloadFailed(Refusals.WatchedFile.TLS));
                } catch (IOException e) {
                    throw new IOException("http.tls-cert-file/http.tls-key-file: " + e.getMessage(), e);
                }
            }
        }
        if (settings.socket().isPresent()) {
            access.put(Refusals.Listener.UNIX, new ProfileAccess.Open());
            try {
                UnixSocketFile.prepare(settings.socket().get());
            } catch (IOException e) {
                throw new IOException("http.socket " + settings.socket().get() + ": " + e.getMessage(), e);
            }
        }

        QueuedThreadPool threads = new QueuedThreadPool(MAX_THREADS, 2);
        threads.setName("loupe-http");
        threads.setDaemon(true);
        threads.setReservedThreads(0);
        Server server = new Server(threads);
        server.setStopTimeout(0);
        ErrorHandler errors = new ErrorHandler();
        errors.setShowStacks(false);
        errors.setShowCauses(false);
        server.setErrorHandler(errors);
        HttpConfiguration http = new HttpConfiguration();
        http.setSendServerVersion(false);
        http.setSendXPoweredBy(false);

        Map<String, Refusals.Listener> byConnector = new HashMap<>();
        ServerConnector tcp = null;
        if (settings.address().isPresent()) {
            ConnectionFactory[] factories;
            if (tls != null) {
                SslContextFactory.Server ssl = new SslContextFactory.Server();
                ssl.setSslContext(tls.sslContext());
                factories = new ConnectionFactory[] {new SslConnectionFactory(ssl, "http/1.1"), new HttpConnectionFactory(http)};
            } else {
                factories = new ConnectionFactory[] {new HttpConnectionFactory(http)};
            }
            tcp = new ServerConnector(server, 1, 1, factories);
            InetSocketAddress a = settings.address().get();
            tcp.setHost(a.getHostString());
            tcp.setPort(a.getPort());
            tcp.setName(TCP);
            tcp.setIdleTimeout(idleTimeoutMillis);
            server.addConnector(tcp);
            byConnector.put(TCP, Refusals.Listener.TCP);
        }
        UnixDomainServerConnector unix = null;
        if (settings.socket().isPresent()) {
            unix = new UnixDomainServerConnector(server, 1, 1, new HttpConnectionFactory(http));
            unix.setUnixDomainPath(settings.socket().get());
            unix.setName(UNIX);
            unix.setIdleTimeout(idleTimeoutMillis);
            server.addConnector(unix);
            byConnector.put(UNIX, Refusals.Listener.UNIX);
        }
        server.setHandler(new Endpoints(agent, registry, refusals, byConnector, access, nanoTime));
        try {
            if (tcp != null) {
                openTcp(tcp, settings.address().get());
            }
            server.start();
            if (unix != null) {
                UnixSocketFile.restrict(settings.socket().get());
            }
        } catch (Exception e) {
            stopQuietly(server);
            throw new IOException(startError(settings, e), e);
        }
        refusals.register(registry, access.keySet(), watched);
        DebugHttpServer s = new DebugHttpServer(server, tcp, unix, refusals, tls);
        s.warnings(settings);
        return s;
    }

    /** Binds the TCP port before the rest starts, so that a port in use is said as such. */
    private static void openTcp(ServerConnector tcp, InetSocketAddress a) throws IOException {
        try {
            tcp.open();
        } catch (IOException e) {
            throw new IOException("cannot serve HTTP on " + hostPort(a) + ": " + e.getMessage() + " (set http.address or --http off)", e);
        }
    }

    private static String startError(HttpSettings settings, Exception e) {
        if (e instanceof IOException io && io.getMessage() != null && io.getMessage().startsWith("cannot serve HTTP on ")) {
            return io.getMessage();
        }
        String why = e.getMessage() == null ? e.toString() : e.getMessage();
        return "cannot serve HTTP" + settings.socket().map(p -> " on " + p + ": " + why + " (set http.socket or --http-socket off)")
                .orElse(": " + why);
    }

    /** Once at start: what a user should know about who can read profiles. */
    private void warnings(HttpSettings settings) {
        if (tcp == null) {
            return;
        }
        String url = (tls != null ? "https" : "http") + "://" + hostPort(address().orElseThrow()) + "/debug/pprof/";
        if (settings.profiles() == HttpSettings.Profiles.UNAUTHENTICATED) {
            LOG.log(System.Logger.Level.WARNING, "profiles on " + url + " are served to every local user without a token "
                    + "(http.profiles: unauthenticated); the service serves them on its Unix socket (http.socket) only");
        }
        if (settings.profiles() == HttpSettings.Profiles.ON && tls == null && !HttpSettings.loopback(settings.address().get())) {
            LOG.log(System.Logger.Level.WARNING, "the bearer token travels in clear text to " + url + " (http.profiles: on "
                    + "on a non-loopback address without http.tls-cert-file): anyone on the network path can read it");
        }
    }

    static String hostPort(InetSocketAddress a) {
        String host = a.getHostString();
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
    }

    /** Jetty's start and stop lines (version banner, each connector) are noise in the agent's log; warnings stay. */
    private static void quietJetty() {
        synchronized (DebugHttpServer.class) {
            if (JETTY_LOG.getLevel() == null) {
                JETTY_LOG.setLevel(Level.WARNING);
            }
        }
    }

    /** The TCP listener's bound address (the real port when 0 was asked for); empty without one. */
    public Optional<InetSocketAddress> address() {
        if (tcp == null) {
            return Optional.empty();
        }
        return Optional.of(new InetSocketAddress(tcp.getHost(), tcp.getLocalPort()));
    }

    /** Where the TCP listener is, as a URL base ({@code http://127.0.0.1:7071}, {@code https://...}); empty without one. */
    public Optional<String> baseUrl() {
        return address().map(a -> (tls != null ? "https" : "http") + "://" + hostPort(a));
    }

    /** The Unix socket's path; empty without one. */
    public Optional<Path> socket() {
        return Optional.ofNullable(unix).map(UnixDomainServerConnector::getUnixDomainPath);
    }

    Refusals refusals() {
        return refusals;
    }

    /** The TLS key manager; null without TLS. */
    ReloadingTls tls() {
        return tls;
    }

    /** The registry's metrics in Prometheus' text format (0.0.4), as /metrics serves them. */
    public static byte[] metricsText(PrometheusRegistry registry) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream(8192);
        METRICS_FORMAT.write(out, registry.scrape());
        return out.toByteArray();
    }

    private static void stopQuietly(Server server) {
        try {
            server.stop();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.DEBUG, "http: stopping after a failed start: " + e);
        }
    }

    /** Stops both listeners (captures in progress are cut off) and removes the socket file. */
    @Override
    public void close() {
        stopQuietly(server);
    }
}
