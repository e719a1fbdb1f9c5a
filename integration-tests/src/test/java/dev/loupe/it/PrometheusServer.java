package dev.loupe.it;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Debian's Prometheus ({@code /usr/bin/prometheus}) on a free loopback port with a TSDB of its own: scrapes the
 * given agents' /metrics (job {@code loupe}), evaluates the given rule files and sends alerts to one Alertmanager,
 * again at every evaluation while they fire.
 */
public final class PrometheusServer implements AutoCloseable {
    static final Path BINARY = Path.of("/usr/bin/prometheus");
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * @param agents       HOST:PORT of each agent's HTTP endpoint
     * @param scrapeEvery  scrape interval (and timeout)
     * @param evaluateEvery rule evaluation interval
     * @param ruleFiles    rule files, as {@code rule_files:} lists them
     * @param alertmanager HOST:PORT of the Alertmanager
     */
    public record Config(List<String> agents, Duration scrapeEvery, Duration evaluateEvery, List<Path> ruleFiles,
                         String alertmanager) {
        String yaml() {
            return "global:\n"
                    + "  scrape_interval: " + seconds(scrapeEvery) + "\n"
                    + "  scrape_timeout: " + seconds(scrapeEvery) + "\n"
                    + "  evaluation_interval: " + seconds(evaluateEvery) + "\n"
                    + "rule_files:\n"
                    + ruleFiles.stream().map(f -> "  - '" + f + "'\n").collect(Collectors.joining())
                    + "alerting:\n"
                    + "  alertmanagers:\n"
                    + "    - static_configs:\n"
                    + "        - targets: ['" + alertmanager + "']\n"
                    + "scrape_configs:\n"
                    + "  - job_name: loupe\n"
                    + "    static_configs:\n"
                    + "      - targets: [" + agents.stream().map(a -> "'" + a + "'").collect(Collectors.joining(", ")) + "]\n";
        }

        private static String seconds(Duration d) {
            if (d.toMillis() % 1000 != 0 || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("whole seconds only: " + d);
            }
            return d.toSeconds() + "s";
        }
    }

    /** One series of a query's result: its labels and value (an instant vector's sample). */
    public record Sample(Map<String, String> labels, double value) {}

    private final ServerProcess server;

    private PrometheusServer(ServerProcess server) {
        this.server = server;
    }

    /** Starts it in a new directory under {@code parent}; returns once {@code /-/ready} says so. */
    public static PrometheusServer start(Path parent, Config config) throws IOException, InterruptedException {
        ServerProcess.requireInstalled(BINARY, "prometheus");
        Path dir = Files.createTempDirectory(parent, "prometheus");
        Path file = Files.writeString(dir.resolve("prometheus.yml"), config.yaml());
        String address = "127.0.0.1:" + FreePort.next();
        List<String> cmd = List.of(BINARY.toString(), "--config.file=" + file, "--storage.tsdb.path=" + dir.resolve("tsdb"),
                "--web.listen-address=" + address, "--storage.tsdb.retention.time=1d", "--log.level=info",
                // A firing alert is sent again each evaluation, not each minute: an alert that fires before the
                // Alertmanager is discovered (a few seconds after start) is dropped, and would otherwise wait a minute.
                "--rules.alert.resend-delay=" + Config.seconds(config.evaluateEvery()));
        return new PrometheusServer(ServerProcess.start("prometheus", dir, cmd, "http://" + address, Duration.ofSeconds(60)));
    }

    /** An instant query ({@code /api/v1/query}) now; fails unless it yields a vector. */
    public List<Sample> query(String promql) throws IOException, InterruptedException {
        return vector(promql, server.get("/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8)));
    }

    /** An instant query evaluated at {@code time}. */
    public List<Sample> query(String promql, Instant time) throws IOException, InterruptedException {
        return vector(promql, server.get("/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8)
                + "&time=" + time.toEpochMilli() / 1000.0));
    }

    /**
     * A range query ({@code /api/v1/query_range}) from {@code start} to now, one point a {@code step}: each series'
     * labels and its values in order, as "t+SECONDS=VALUE" (seconds after {@code start}), for failure messages.
     */
    public Map<Map<String, String>, List<String>> range(String promql, Instant start, Duration step)
            throws IOException, InterruptedException {
        double from = start.toEpochMilli() / 1000.0;
        String body = server.get("/api/v1/query_range?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8)
                + "&start=" + from + "&end=" + Instant.now().toEpochMilli() / 1000.0 + "&step=" + step.toMillis() / 1000.0);
        Map<Map<String, String>, List<String>> series = new java.util.LinkedHashMap<>();
        for (JsonNode r : JSON.readTree(body).path("data").path("result")) {
            Map<String, String> labels = new TreeMap<>();
            r.get("metric").fields().forEachRemaining(e -> labels.put(e.getKey(), e.getValue().asText()));
            List<String> values = new ArrayList<>();
            for (JsonNode v : r.get("values")) {
                values.add(String.format(java.util.Locale.ROOT, "t+%.0f=%s", v.get(0).asDouble() - from, v.get(1).asText()));
            }
            series.put(labels, values);
        }
        return series;
    }

    private static List<Sample> vector(String promql, String body) throws IOException {
        JsonNode data = JSON.readTree(body).path("data");
        if (!data.path("resultType").asText().equals("vector")) {
            throw new IllegalStateException("not a vector: " + promql + " -> " + body);
        }
        List<Sample> samples = new ArrayList<>();
        for (JsonNode r : data.get("result")) {
            Map<String, String> labels = new TreeMap<>();
            r.get("metric").fields().forEachRemaining(e -> labels.put(e.getKey(), e.getValue().asText()));
            samples.add(new Sample(labels, Double.parseDouble(r.get("value").get(1).asText())));
        }
        return samples;
    }

    /** The rules loaded ({@code /api/v1/rules}): rule name (alert or recorded series) to its health ("ok", "err", "unknown"). */
    public Map<String, String> rules() throws IOException, InterruptedException {
        Map<String, String> rules = new TreeMap<>();
        for (JsonNode group : JSON.readTree(server.get("/api/v1/rules")).path("data").path("groups")) {
            for (JsonNode rule : group.path("rules")) {
                rules.put(rule.get("name").asText(), rule.path("health").asText());
            }
        }
        return rules;
    }

    public String log() {
        return server.log();
    }

    @Override
    public void close() throws InterruptedException {
        server.close();
    }
}
