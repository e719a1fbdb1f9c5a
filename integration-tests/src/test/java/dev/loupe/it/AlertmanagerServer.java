package dev.loupe.it;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Debian's Alertmanager ({@code /usr/bin/prometheus-alertmanager}) on a free loopback port, clustering off, its
 * storage in a directory of its own; every alert goes to a receiver that sends nothing, grouped and passed on within
 * a second so an alert Prometheus sends is in {@code /api/v2/alerts} at once.
 */
public final class AlertmanagerServer implements AutoCloseable {
    static final Path BINARY = Path.of("/usr/bin/prometheus-alertmanager");
    private static final ObjectMapper JSON = new ObjectMapper();
    static final String CONFIG = """
            route:
              receiver: discard
              group_by: ['...']
              group_wait: 1s
              group_interval: 1s
              repeat_interval: 1h
            receivers:
              - name: discard
            """;

    /** One alert of {@code /api/v2/alerts}: its labels, annotations and {@code status.state}. */
    public record Alert(Map<String, String> labels, Map<String, String> annotations, String state) {
        public String label(String name) {
            return labels.get(name);
        }
    }

    private final ServerProcess server;
    private final String address;

    private AlertmanagerServer(ServerProcess server, String address) {
        this.server = server;
        this.address = address;
    }

    /** Starts it in a new directory under {@code parent}; returns once {@code /-/ready} says so. */
    public static AlertmanagerServer start(Path parent) throws IOException, InterruptedException {
        ServerProcess.requireInstalled(BINARY, "prometheus-alertmanager");
        Path dir = Files.createTempDirectory(parent, "alertmanager");
        Path config = Files.writeString(dir.resolve("alertmanager.yml"), CONFIG);
        String address = "127.0.0.1:" + FreePort.next();
        List<String> cmd = List.of(BINARY.toString(), "--config.file=" + config, "--storage.path=" + dir.resolve("data"),
                "--web.listen-address=" + address, "--cluster.listen-address=", "--log.level=info");
        return new AlertmanagerServer(ServerProcess.start("alertmanager", dir, cmd, "http://" + address, Duration.ofSeconds(60)),
                address);
    }

    /** HOST:PORT, for Prometheus' {@code alerting:} section. */
    public String address() {
        return address;
    }

    /** Every alert it holds now (active, suppressed or unprocessed; resolved ones are not listed). */
    public List<Alert> alerts() throws IOException, InterruptedException {
        JsonNode array = JSON.readTree(server.get("/api/v2/alerts"));
        List<Alert> alerts = new ArrayList<>();
        for (JsonNode a : array) {
            alerts.add(new Alert(strings(a.get("labels")), strings(a.get("annotations")),
                    a.path("status").path("state").asText()));
        }
        return alerts;
    }

    /** The alerts named {@code alertname} whose labels include all of {@code labels}. */
    public List<Alert> alerts(String alertname, Map<String, String> labels) throws IOException, InterruptedException {
        List<Alert> matching = new ArrayList<>();
        for (Alert a : alerts()) {
            if (alertname.equals(a.label("alertname")) && a.labels().entrySet().containsAll(labels.entrySet())) {
                matching.add(a);
            }
        }
        return matching;
    }

    public String log() {
        return server.log();
    }

    private static Map<String, String> strings(JsonNode object) {
        Map<String, String> m = new TreeMap<>();
        object.fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue().asText()));
        return m;
    }

    @Override
    public void close() throws InterruptedException {
        server.close();
    }
}
