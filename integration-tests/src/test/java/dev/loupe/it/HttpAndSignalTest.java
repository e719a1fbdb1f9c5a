package dev.loupe.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The local HTTP endpoint as go tool pprof uses it, /healthz, /metrics, and SIGTERM's final flush. */
class HttpAndSignalTest {
    @TempDir
    Path dir;

    @Test
    void goToolPprofReadsLiveProfileAndSigtermFlushesPartialInterval() throws Exception {
        Path bin = Targets.build("callchain.c", dir, "served", "-fno-omit-frame-pointer");
        Process target = Targets.start(bin);
        Path out = dir.resolve("profiles");
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String base = "http://127.0.0.1:" + port;
        HttpClient http = HttpClient.newHttpClient();
        try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(target.pid()), "--frequency", "99",
                "--interval", "120s", "--output", out.toString(), "--http", "127.0.0.1:" + port,
                "--http-profiles", "unauthenticated")) {
            agent.awaitSampling(Duration.ofSeconds(30));
            // ./loupe run's convenience, said once at start: every local user may read these profiles.
            String warning = "WARNING dev.loupe.agent.http.DebugHttpServer: profiles on " + base + "/debug/pprof/ are served to "
                    + "every local user without a token (http.profiles: unauthenticated); the service serves them on its "
                    + "Unix socket (http.socket) only\n";
            assertEquals(1, agent.log().split(java.util.regex.Pattern.quote(warning), -1).length - 1, agent.log());

            HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(base + "/healthz")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, health.statusCode(), health.body());
            assertTrue(health.body().contains("\"status\":\"ok\""), health.body());

            String top = PprofTool.run("-top", "-seconds=3", base + "/debug/pprof/profile");
            assertTrue(top.contains("hot_a") && top.contains("middle"), top);

            HttpResponse<String> bad = http.send(HttpRequest.newBuilder(URI.create(base + "/debug/pprof/profile?seconds=abc")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(400, bad.statusCode());

            HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertTrue(metrics.body().matches("(?s).*\\nloupe_samples_total [1-9][0-9]*\\.0\\n.*"), metrics.body());
            assertTrue(metrics.body().contains("loupe_samples_dropped_total{reason=\"ring_buffer_full\"} 0.0\n"), metrics.body());
            assertTrue(metrics.body().matches("(?s).*\\nloupe_symbolizer_binaries [1-9][0-9]*\\.0\\n.*"), metrics.body());
            // The real agent's symbolizer and unwind families, with the names, types and labels of before.
            java.util.Map<String, String> families = dev.loupe.agent.sampling.MetricNamesTest.families(metrics.body());
            java.util.Map<String, String> expected = new java.util.TreeMap<>(java.util.Map.ofEntries(
                    java.util.Map.entry("loupe_symbolizer_processes", "gauge"),
                    java.util.Map.entry("loupe_symbolizer_binaries", "gauge"),
                    java.util.Map.entry("loupe_symbolizer_bad_binaries_total", "counter"),
                    java.util.Map.entry("loupe_symbolizer_unresolved_frames_total", "counter"),
                    java.util.Map.entry("loupe_symbolizer_maps_reads_total", "counter"),
                    java.util.Map.entry("loupe_symbolizer_maps_read_failures_total", "counter"),
                    java.util.Map.entry("loupe_unwind_tables_built_total", "counter"),
                    java.util.Map.entry("loupe_unwind_tables_loaded", "gauge"),
                    java.util.Map.entry("loupe_unwind_table_rows", "gauge"),
                    java.util.Map.entry("loupe_unwind_table_bytes", "gauge"),
                    java.util.Map.entry("loupe_unwind_table_evictions_total", "counter"),
                    java.util.Map.entry("loupe_unwind_processes", "gauge"),
                    java.util.Map.entry("loupe_unwind_table_failures_total", "counter reason"),
                    java.util.Map.entry("loupe_unwind_registration_delay_seconds", "histogram"),
                    java.util.Map.entry("loupe_unwind_mappings", "gauge"),
                    java.util.Map.entry("loupe_unwind_mappings_capacity", "gauge"),
                    java.util.Map.entry("loupe_unwind_mappings_allocated_total", "counter"),
                    java.util.Map.entry("loupe_unwind_mapping_space_full_total", "counter"),
                    java.util.Map.entry("loupe_unwind_registrations_total", "counter"),
                    java.util.Map.entry("loupe_unwind_exits_released_total", "counter"),
                    java.util.Map.entry("loupe_process_exits_total", "counter"),
                    java.util.Map.entry("loupe_process_exits_dropped_total", "counter"),
                    java.util.Map.entry("loupe_unwind_files", "gauge"),
                    java.util.Map.entry("loupe_unwind_files_capacity", "gauge"),
                    java.util.Map.entry("loupe_unwind_file_loads_total", "counter"),
                    java.util.Map.entry("loupe_unwind_vma_lookups_total", "counter"),
                    java.util.Map.entry("loupe_unwind_vma_lookup_failures_total", "counter"),
                    java.util.Map.entry("loupe_unwind_file_table_misses_total", "counter"),
                    java.util.Map.entry("loupe_symbolizer_frames_from_sampled_mappings_total", "counter"),
                    java.util.Map.entry("loupe_symbolizer_mappings_from_own_root_total", "counter"),
                    java.util.Map.entry("loupe_process_states", "gauge holder")));
            expected.forEach((name, kind) -> assertEquals(kind, families.get(name), name + " in:\n" + metrics.body()));
            assertTrue(metrics.body().contains("loupe_unwind_registration_delay_seconds_bucket{le=\"0.01\"} "), metrics.body());
            assertTrue(metrics.body().contains("loupe_unwind_registration_delay_seconds_bucket{le=\"+Inf\"} "), metrics.body());
            // The exposition format as Prometheus itself checks it.
            Path scraped = java.nio.file.Files.writeString(dir.resolve("metrics.txt"), metrics.body());
            assertEquals(List.of(), MetricsLint.problems(scraped), "promtool has no complaints");

            agent.terminate(); // SIGTERM
            int exit = agent.awaitExit(Duration.ofSeconds(30));
            assertTrue(exit == 0 || exit == 143, "exit " + exit + "\n" + agent.log());
        } finally {
            Targets.kill(target);
        }
        List<Path> files = Profiles.files(out);
        assertEquals(1, files.size(), "the partial interval flushed on SIGTERM: " + files);
        var profile = Profiles.checked(files.get(0));
        assertTrue(profile.getDurationNanos() > 0 && profile.getDurationNanos() < 120_000_000_000L);
        assertTrue(Profiles.stacks(profile).stream().anyMatch(s -> s.startsWith("hot_a", "middle", "outer", "main")));
    }
}
