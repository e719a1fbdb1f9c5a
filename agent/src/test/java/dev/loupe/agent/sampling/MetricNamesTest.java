package dev.loupe.agent.sampling;

import dev.loupe.agent.sink.ProfileBatch;
import dev.loupe.agent.sink.ProfileSink;
import dev.loupe.agent.sink.RemoteSinkStats;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.loupe.agent.sampling.AgentClocksAndSinksTest.metricsOf;
import static dev.loupe.agent.sampling.AgentTest.FakeSource;
import static dev.loupe.agent.sampling.AgentTest.ManualClock;
import static dev.loupe.agent.sampling.AgentTest.MemorySink;
import static dev.loupe.agent.sampling.AgentTest.agent;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The names users' dashboards and rules depend on: every family the sampling loop registers, with its type
 * and label names, exactly as the hand-written renderer wrote them before the client library.
 */
public class MetricNamesTest {
    static final Pattern TYPE = Pattern.compile("(?m)^# TYPE (\\S+) (\\S+)$");
    static final Pattern SAMPLE = Pattern.compile("(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{([^}]*)\\})? \\S+$");

    /** Family name → "type label,label" (labels sorted; {@code le} is left out), from exposition text. */
    public static Map<String, String> families(String text) {
        Map<String, String> types = new TreeMap<>();
        Matcher t = TYPE.matcher(text);
        while (t.find()) {
            types.put(t.group(1), t.group(2));
        }
        Map<String, TreeSet<String>> labels = new TreeMap<>();
        Matcher s = SAMPLE.matcher(text);
        while (s.find()) {
            String name = s.group(1);
            String family = types.containsKey(name) ? name : name.replaceAll("_(bucket|sum|count)$", "");
            TreeSet<String> names = labels.computeIfAbsent(family, k -> new TreeSet<>());
            if (s.group(2) != null) {
                for (String pair : s.group(2).split(",(?=[a-zA-Z_]+=\")")) {
                    String label = pair.substring(0, pair.indexOf('='));
                    if (!label.equals("le")) {
                        names.add(label);
                    }
                }
            }
        }
        Map<String, String> out = new TreeMap<>();
        types.forEach((name, type) -> out.put(name, (type + " " + String.join(",", labels.getOrDefault(name, new TreeSet<>()))).trim()));
        return out;
    }

    @Test
    void theSamplingLoopsFamiliesKeepTheirNamesTypesAndLabels() throws Exception {
        ProfileSink remote = new ProfileSink() {
            @Override
            public String name() {
                return "parca";
            }

            @Override
            public void write(ProfileBatch batch) {}

            @Override
            public Optional<RemoteSinkStats> remoteStats() {
                return Optional.of(new RemoteSinkStats(1, 2, 3, 4, 5, 6, 7, 8_500_000_000L, 9, 10, 11));
            }
        };
        Agent agent = agent(19, Duration.ofSeconds(10), new FakeSource(), List.of(new MemorySink(), remote), new ManualClock());
        String text = metricsOf(agent);
        Map<String, String> expected = new LinkedHashMap<>();
        for (String c : List.of("loupe_samples_total", "loupe_samples_idle_total", "loupe_samples_filtered_total",
                "loupe_samples_outside_pid_namespace_total",
                "loupe_user_stack_read_errors_total", "loupe_user_stack_truncated_total", "loupe_kernel_stack_errors_total",
                "loupe_samples_processed_total", "loupe_profiles_written_total", "loupe_sink_errors_total",
                "loupe_poll_errors_total",
                "loupe_unwind_fp_fallback_samples_total", "loupe_unwind_stopped_stacks_total",
                "loupe_unwind_table_frames_total", "loupe_unwind_fp_frames_total", "loupe_unwind_fp_no_fde_frames_total",
                "loupe_process_exits_total", "loupe_process_exits_dropped_total", "loupe_unwind_vma_lookups_total",
                "loupe_unwind_vma_lookup_failures_total", "loupe_unwind_file_table_misses_total")) {
            expected.put(c, "counter");
        }
        expected.put("loupe_samples_dropped_total", "counter reason");
        for (String c : List.of("loupe_sink_intervals_written_total", "loupe_sink_intervals_failed_total",
                "loupe_sink_intervals_dropped_total", "loupe_sink_bytes_written_total", "loupe_remote_batches_sent_total",
                "loupe_remote_bytes_sent_total", "loupe_remote_send_failures_total", "loupe_remote_retries_total",
                "loupe_remote_batches_rejected_total", "loupe_remote_batches_dropped_total", "loupe_remote_bytes_dropped_total",
                "loupe_series_dropped_by_relabel_total")) {
            expected.put(c, "counter sink");
        }
        for (String g : List.of("loupe_sink_queue_intervals", "loupe_spool_batches", "loupe_spool_bytes",
                "loupe_spool_oldest_age_seconds")) {
            expected.put(g, "gauge sink");
        }
        // The fake symbolizer has no stats, so no loupe_symbolizer_* families here (as before): the real
        // agent's are pinned by HttpAndSignalTest.
        expected.put("loupe_up", "gauge");
        expected.put("loupe_process_states", "gauge holder");
        assertEquals(new TreeMap<>(expected), families(text), text);
        assertEquals(List.of("cgroups", "exits_pending", "labels"),
                text.lines().filter(l -> l.startsWith("loupe_process_states{"))
                        .map(l -> l.replaceAll(".*holder=\"([^\"]+)\".*", "$1")).toList(),
                "the loop's own holders (the fake symbolizer has no stats; no unwind tables here)");
        // Label values as before: one series per sink by its name, the drop reasons by theirs.
        assertEquals(List.of("loupe_sink_queue_intervals{sink=\"memory\"} 0.0", "loupe_sink_queue_intervals{sink=\"parca\"} 0.0"),
                text.lines().filter(l -> l.startsWith("loupe_sink_queue_intervals{")).toList());
        assertEquals(List.of("loupe_spool_oldest_age_seconds{sink=\"parca\"} 8.5"),
                text.lines().filter(l -> l.startsWith("loupe_spool_oldest_age_seconds{")).toList());
        assertEquals(List.of("loupe_series_dropped_by_relabel_total{sink=\"parca\"} 11.0"),
                text.lines().filter(l -> l.startsWith("loupe_series_dropped_by_relabel_total{")).toList());
        assertEquals(List.of("consumer_failed", "ring_buffer_full", "undecodable"),
                text.lines().filter(l -> l.startsWith("loupe_samples_dropped_total{"))
                        .map(l -> l.replaceAll(".*reason=\"([^\"]+)\".*", "$1")).toList());
    }

    @Test
    void labelValuesAreEscapedAsTheFormatRequires() throws Exception {
        ProfileSink odd = new ProfileSink() {
            @Override
            public String name() {
                return "a\"b\\c\nd";
            }

            @Override
            public void write(ProfileBatch batch) {}
        };
        Agent agent = agent(19, Duration.ofSeconds(10), new FakeSource(), List.of(odd), new ManualClock());
        String text = metricsOf(agent);
        assertEquals(List.of("loupe_sink_queue_intervals{sink=\"a\\\"b\\\\c\\nd\"} 0.0"),
                text.lines().filter(l -> l.startsWith("loupe_sink_queue_intervals{")).toList(), text);
    }
}
