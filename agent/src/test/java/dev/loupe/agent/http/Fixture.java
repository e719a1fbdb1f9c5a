package dev.loupe.agent.http;

import dev.loupe.agent.sampling.Agent;
import dev.loupe.agent.sampling.Clocks;
import dev.loupe.agent.sampling.SampleSource;
import dev.loupe.agent.sampling.SideProfileSource;
import dev.loupe.bpf.RawSample;
import dev.loupe.bpf.SamplerStats;
import dev.loupe.config.HttpSettings;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.Symbolizer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the http tests share: an agent that samples nothing (its CPU capture is a real, empty profile window) with
 * a latency side source that counts its captures, settings, and a raw HTTP/1.1 exchange over a Unix socket.
 */
final class Fixture {
    private Fixture() {}

    static Agent agent(Latency latency) {
        Agent agent = new Agent(19, Duration.ofHours(1), new NoSamples(), new NoSymbols(), List.of(), Clocks.system(),
                Agent.Options.defaults(Map.of("node", "test-node")));
        agent.addSideProfiles(latency);
        return agent;
    }

    static HttpSettings tcp(HttpSettings.Profiles profiles, Path tokenFile) {
        return new HttpSettings(Optional.of(new InetSocketAddress("127.0.0.1", 0)), profiles, Optional.ofNullable(tokenFile),
                Optional.empty(), Optional.empty(), Optional.empty());
    }

    /** The value of one series in the registry's exposition text; fails when it is not there. */
    static double metric(PrometheusRegistry registry, String series) throws IOException {
        String text = new String(DebugHttpServer.metricsText(registry), StandardCharsets.UTF_8);
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(series) + " (\\S+)$").matcher(text);
        if (!m.find()) {
            throw new AssertionError(series + " not in:\n" + text);
        }
        return Double.parseDouble(m.group(1));
    }

    /** A status line, headers and body, as read off the wire. */
    record RawResponse(int status, String head, byte[] body) {
        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    /** {@code GET path} over the Unix socket at {@code socket}, HTTP/1.1 with Connection: close, read to EOF. */
    static RawResponse getOverSocket(Path socket, String path) throws IOException {
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(socket));
            ch.write(ByteBuffer.wrap(("GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII)));
            java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
            ByteBuffer buf = ByteBuffer.allocate(8192);
            while (ch.read(buf) >= 0) {
                all.write(buf.array(), 0, buf.position());
                buf.clear();
            }
            byte[] bytes = all.toByteArray();
            int end = indexOf(bytes, "\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            if (end < 0) {
                throw new AssertionError("no header end in " + new String(bytes, StandardCharsets.ISO_8859_1));
            }
            String head = new String(bytes, 0, end, StandardCharsets.ISO_8859_1);
            byte[] body = Arrays.copyOfRange(bytes, end + 4, bytes.length);
            if (head.toLowerCase(java.util.Locale.ROOT).contains("transfer-encoding: chunked")) {
                body = dechunk(body);
            }
            return new RawResponse(Integer.parseInt(head.substring(9, 12)), head, body);
        }
    }

    private static byte[] dechunk(byte[] body) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        int i = 0;
        while (true) {
            int eol = indexOf(Arrays.copyOfRange(body, i, body.length), "\r\n".getBytes(StandardCharsets.US_ASCII)) + i;
            int size = Integer.parseInt(new String(body, i, eol - i, StandardCharsets.US_ASCII).trim(), 16);
            if (size == 0) {
                return out.toByteArray();
            }
            out.write(body, eol + 2, size);
            i = eol + 2 + size + 2;
        }
    }

    private static int indexOf(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /**
     * A side source whose capture says how long it was asked for (and lasts no time unless held); it counts its
     * captures and keeps one baseline.
     */
    static final class Latency implements SideProfileSource {
        final AtomicInteger captures = new AtomicInteger();
        /** Captures wait for it when set: to hold slots. */
        volatile CountDownLatch hold;

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
        public Profile capture(Duration duration) throws InterruptedException {
            captures.incrementAndGet();
            CountDownLatch h = hold;
            if (h != null && !h.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never released the capture");
            }
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
            try {
                Thread.sleep(Math.min(timeout.toMillis(), 20)); // as a ring buffer with nothing in it waits
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
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
