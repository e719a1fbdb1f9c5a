package dev.loupe.agent.http;

import dev.loupe.agent.sampling.Agent;
import dev.loupe.agent.sampling.Clocks;
import dev.loupe.agent.sampling.SampleSource;
import dev.loupe.agent.sampling.SideProfileSource;
import dev.loupe.bpf.RawSample;
import dev.loupe.bpf.SamplerStats;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.Symbolizer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The two profile endpoints, CPU and a side source's, through one handler: methods, parameters, stored profiles, file names. */
class DebugHttpServerTest {
    private final HttpClient http = HttpClient.newHttpClient();
    private Agent agent;
    private DebugHttpServer server;
    private String base;

    @BeforeEach
    void start() throws Exception {
        agent = new Agent(19, Duration.ofHours(1), new NoSamples(), new NoSymbols(), List.of(), Clocks.system(),
                Agent.Options.defaults(Map.of("node", "test-node")));
        agent.addSideProfiles(new Latency());
        server = DebugHttpServer.start(new InetSocketAddress("127.0.0.1", 0), agent, new PrometheusRegistry());
        base = "http://127.0.0.1:" + server.address().getPort();
    }

    @AfterEach
    void stop() {
        server.close();
        agent.stop();
    }

    @Test
    void capturesOfTheNextSeconds() throws Exception {
        HttpResponse<byte[]> cpu = get("/debug/pprof/profile?seconds=1");
        assertEquals(200, cpu.statusCode());
        assertEquals("attachment; filename=\"profile.pb.gz\"", cpu.headers().firstValue("Content-Disposition").orElse(""));
        assertEquals("nosniff", cpu.headers().firstValue("X-Content-Type-Options").orElse(""));
        PprofFiles.parse(cpu.body());
        // The CPU endpoint keeps no profiles: baseline= is no stored name there.
        assertEquals(200, get("/debug/pprof/profile?baseline=previous_build&seconds=1").statusCode());

        HttpResponse<byte[]> latency = get("/debug/pprof/latency?seconds=2");
        assertEquals(200, latency.statusCode());
        assertEquals("attachment; filename=\"latency.pb.gz\"", latency.headers().firstValue("Content-Disposition").orElse(""));
        assertEquals(Duration.ofSeconds(2).toNanos(), PprofFiles.parse(latency.body()).getDurationNanos());
    }

    @Test
    void storedProfilesByName() throws Exception {
        HttpResponse<byte[]> kept = get("/debug/pprof/latency?baseline=previous_build");
        assertEquals(200, kept.statusCode());
        assertEquals("attachment; filename=\"latency-previous_build.pb.gz\"", kept.headers().firstValue("Content-Disposition").orElse(""));
        assertEquals(7, PprofFiles.parse(kept.body()).getDurationNanos());
        assertText(404, "no window=current latency profile yet\n", get("/debug/pprof/latency?window=current"));
        assertText(400, "no baseline named nightly\n", get("/debug/pprof/latency?baseline=nightly"));
    }

    @Test
    void refusals() throws Exception {
        for (String path : List.of("/debug/pprof/profile", "/debug/pprof/latency")) {
            assertText(400, "seconds must be a whole number, got \"abc\"\n", get(path + "?seconds=abc"));
            assertText(400, "seconds must be between 1 and 600, got 0\n", get(path + "?seconds=0"));
            HttpResponse<byte[]> post = http.send(HttpRequest.newBuilder(URI.create(base + path))
                    .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofByteArray());
            assertText(405, "use GET\n", post);
        }
    }

    private HttpResponse<byte[]> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private static void assertText(int code, String text, HttpResponse<byte[]> r) {
        assertEquals(code + " " + text, r.statusCode() + " " + new String(r.body(), java.nio.charset.StandardCharsets.UTF_8));
    }

    /** A side source whose capture lasts no time and says how long it was asked for; it keeps one baseline. */
    private static final class Latency implements SideProfileSource {
        @Override
        public String profileType() {
            return "latency";
        }

        @Override
        public String seriesName() {
            return "latency";
        }

        @Override
        public Optional<Profile> interval(long timeNanos, long durationNanos) {
            return Optional.empty();
        }

        @Override
        public Profile capture(Duration duration) {
            return Profile.newBuilder().setDurationNanos(duration.toNanos()).build();
        }

        @Override
        public Optional<Profile> stored(String parameter, String value) {
            if (parameter.equals("baseline") && value.equals("previous_build")) {
                return Optional.of(Profile.newBuilder().setDurationNanos(7).build());
            }
            if (parameter.equals("window") && value.equals("current")) {
                return Optional.empty();
            }
            throw new IllegalArgumentException("no " + parameter + " named " + value);
        }

        @Override
        public void registerMetrics(PrometheusRegistry registry) {
        }

        @Override
        public void close() {
        }
    }

    private static final class NoSamples implements SampleSource {
        @Override
        public int poll(Duration timeout, Consumer<RawSample> sink) {
            return 0;
        }

        @Override
        public SamplerStats stats() {
            return SamplerStats.EMPTY;
        }

        @Override
        public void close() {
        }
    }

    private static final class NoSymbols implements Symbolizer {
        @Override
        public int symbolizeUser(int pid, long processStartNs, long[] addrs, int count, List<Frame> out) {
            return 0;
        }

        @Override
        public void symbolizeKernel(long[] addrs, int count, List<Frame> out) {
        }

        @Override
        public Stats stats() {
            return null;
        }

        @Override
        public void close() {
        }
    }
}
