package dev.loupe.agent.ship;

import dev.loupe.agent.relabel.Relabeling;
import dev.loupe.pprof.Label;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.ProfileBuilder;
import dev.loupe.pprof.proto.Profile;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Each process's series labels: its cgroup labels lifted from its samples, then the user's relabel rules. */
class WriteRawEncoderTest {
    private static final String ID = "c0ffee".repeat(10) + "abcd";
    private static final Map<String, String> CPU = Map.of("__name__", "parca_agent_cpu", "node", "n1");
    private static final Map<String, String> EXTERNAL = Map.of("region", "eu");

    /** One interval of four processes: a service, a container, sshd and a user's unit. */
    private static Profile host() {
        ProfileBuilder b = new ProfileBuilder(10_101_010L, 1_763_000_000_000_000_000L);
        long nginx = b.mapping(0x400000, 0x500000, 0, "/usr/sbin/nginx", "beef", true);
        long loc = b.location(nginx, 0x401000, "main", null);
        b.addSample(new long[] {loc}, 4, List.of(Label.num("pid", 101), Label.str("comm", "nginx"),
                Label.str("systemd_unit", "nginx.service")));
        b.addSample(new long[] {loc}, 3, List.of(Label.num("pid", 102), Label.str("comm", "app"),
                Label.str("systemd_unit", "docker-" + ID + ".scope"), Label.str("container_id", ID)));
        b.addSample(new long[] {loc}, 2, List.of(Label.num("pid", 103), Label.str("comm", "sshd"),
                Label.str("systemd_unit", "ssh.service")));
        b.addSample(new long[] {loc}, 1, List.of(Label.num("pid", 104), Label.str("comm", "bash"),
                Label.str("systemd_unit", "user@1000.service"), Label.str("systemd_user_unit", "shell.service")));
        return b.build(1_763_000_010_000_000_000L);
    }

    private static Optional<String> executable(int pid) {
        return pid == 101 ? Optional.of("/usr/sbin/nginx") : Optional.empty();
    }

    private static WriteRawEncoder encoder(List<Map<String, Object>> rules) {
        return new WriteRawEncoder(EXTERNAL, Relabeling.parse(rules), 16 << 20, WriteRawEncoderTest::executable);
    }

    private static Map<String, Map<String, String>> byPid(List<WriteRawEncoder.Series> series) {
        Map<String, Map<String, String>> out = new TreeMap<>();
        for (WriteRawEncoder.Series s : series) {
            Map<String, String> onTheWire = new TreeMap<>();
            s.message().getLabels().getLabelsList().forEach(l -> onTheWire.put(l.getName(), l.getValue()));
            assertEquals(s.labels(), onTheWire, "the message carries the labels the series names");
            out.put(s.labels().get("pid"), s.labels());
        }
        return out;
    }

    @Test
    void withoutRulesEachProcessCarriesItsUnitAndContainer() {
        WriteRawEncoder enc = encoder(List.of());
        assertEquals(Map.of(
                "101", Map.of("__name__", "parca_agent_cpu", "node", "n1", "region", "eu", "pid", "101", "comm", "nginx",
                        "executable", "/usr/sbin/nginx", "build_id", "beef", "systemd_unit", "nginx.service"),
                "102", Map.of("__name__", "parca_agent_cpu", "node", "n1", "region", "eu", "pid", "102", "comm", "app",
                        "systemd_unit", "docker-" + ID + ".scope", "container_id", ID),
                "103", Map.of("__name__", "parca_agent_cpu", "node", "n1", "region", "eu", "pid", "103", "comm", "sshd",
                        "systemd_unit", "ssh.service"),
                "104", Map.of("__name__", "parca_agent_cpu", "node", "n1", "region", "eu", "pid", "104", "comm", "bash",
                        "systemd_unit", "user@1000.service", "systemd_user_unit", "shell.service")),
                byPid(enc.series(host(), CPU)));
        assertEquals(0, enc.seriesDroppedByRelabel());
    }

    @Test
    void keepDropReplaceAndLabeldropGiveExactLabelSets() {
        WriteRawEncoder enc = encoder(List.of(
                Map.of("action", "drop", "source_labels", List.of("comm"), "regex", "sshd"),
                Map.of("source_labels", List.of("container_id"), "regex", "(.{12}).*", "target_label", "container"),
                Map.of("source_labels", List.of("systemd_unit"), "regex", "(.+)\\.service", "target_label", "__tmp_unit"),
                Map.of("source_labels", List.of("__tmp_unit"), "target_label", "service"),
                Map.of("action", "labeldrop", "regex", "container_id|systemd_user_unit|executable"),
                Map.of("action", "keep", "source_labels", List.of("region", "node"), "regex", "eu;n1")));
        List<WriteRawEncoder.Series> series = enc.series(host(), CPU);
        assertEquals(Map.of(
                "101", Map.of("__name__", "parca_agent_cpu", "node", "n1", "region", "eu", "pid", "101", "comm", "nginx",
                        "build_id", "beef", "systemd_unit", "nginx.service", "service", "nginx"),
                "102", Map.of("__name__", "parca_agent_cpu", "node", "n1", "region", "eu", "pid", "102", "comm", "app",
                        "systemd_unit", "docker-" + ID + ".scope", "container", ID.substring(0, 12)),
                "104", Map.of("__name__", "parca_agent_cpu", "node", "n1", "region", "eu", "pid", "104", "comm", "bash",
                        "systemd_unit", "user@1000.service", "service", "user@1000")),
                byPid(series), "sshd dropped; __tmp_unit (a __ name) not sent");
        assertEquals(1, enc.seriesDroppedByRelabel());
        Map<String, Long> samples = new HashMap<>();
        for (WriteRawEncoder.Series s : series) {
            Profile p = PprofFiles.parse(s.message().getSamples(0).getRawProfile().toByteArray());
            samples.put(s.labels().get("pid"), p.getSample(0).getValue(0));
        }
        assertEquals(Map.of("101", 4L, "102", 3L, "104", 1L), samples, "each series keeps its own process's profile");

        enc.series(host(), CPU);
        assertEquals(2, enc.seriesDroppedByRelabel(), "counted every interval");
    }

    @Test
    void aKeepRuleThatMatchesNothingDropsEverySeries() {
        WriteRawEncoder enc = encoder(List.of(Map.of("action", "keep", "source_labels", List.of("container_id"),
                "regex", ".+")));
        assertEquals(List.of("102"), enc.series(host(), CPU).stream().map(s -> s.labels().get("pid")).toList());
        assertEquals(3, enc.seriesDroppedByRelabel());
    }

    @Test
    void aSeriesLeftWithNoLabelIsDropped() {
        WriteRawEncoder enc = encoder(List.of(Map.of("action", "labelkeep", "regex", "__.+")));
        assertEquals(List.of(), enc.series(host(), Map.of("node", "n1"), true), "only __ names would be left");
        assertEquals(4, enc.seriesDroppedByRelabel());
    }

    @Test
    void theHostWideLatencySeriesIsRelabelledToo() {
        Map<String, String> latency = Map.of("__name__", "loupe_latency", "node", "n1");
        WriteRawEncoder enc = encoder(List.of(
                Map.of("action", "replace", "target_label", "region", "replacement", "us"),
                Map.of("action", "drop", "source_labels", List.of("__name__"), "regex", "parca_agent_cpu")));
        List<WriteRawEncoder.Series> series = enc.series(host(), latency, false);
        assertEquals(List.of(Map.of("__name__", "loupe_latency", "node", "n1", "region", "us")),
                series.stream().map(WriteRawEncoder.Series::labels).toList());
        assertEquals(List.of(), enc.series(host(), CPU, false));
        assertEquals(1, enc.seriesDroppedByRelabel());
    }
}
