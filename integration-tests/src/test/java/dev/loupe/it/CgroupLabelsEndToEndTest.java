package dev.loupe.it;

import dev.loupe.agent.ship.ParcaStandIn;
import dev.loupe.pprof.parca.RawProfileSeries;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A real process in a real cgroup named as Docker's systemd driver names a container's
 * ({@code docker-ID.scope}, made here in the host's cgroup v2 hierarchy): the packaged agent labels its
 * samples with the container id and the unit, and the series it ships carry them after the config file's
 * relabel rules.
 */
class CgroupLabelsEndToEndTest {
    @TempDir
    Path dir;

    /** Where cgroup v2 is mounted ({@code /sys/fs/cgroup}, or {@code /sys/fs/cgroup/unified} on hybrid hosts). */
    private static Path cgroup2Mount() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/mounts"))) {
            String[] f = line.split(" ");
            if (f.length > 2 && f[2].equals("cgroup2")) {
                return Path.of(f[1]);
            }
        }
        throw new AssertionError("no cgroup2 hierarchy mounted: this test needs one\n"
                + Files.readString(Path.of("/proc/self/mounts")));
    }

    @Test
    void aContainersSamplesAndSeriesCarryItsIdAndUnit() throws Exception {
        byte[] random = new byte[32];
        ThreadLocalRandom.current().nextBytes(random);
        String id = HexFormat.of().formatHex(random);
        String unit = "docker-" + id + ".scope";
        Path slice = cgroup2Mount().resolve("loupe-it-" + ProcessHandle.current().pid() + ".slice");
        Path scope = slice.resolve(unit);
        Path bin = Targets.build("callchain.c", dir, "contained", "-fno-omit-frame-pointer");
        Path config = Files.writeString(dir.resolve("loupe.yaml"), """
                relabel:
                  - {source_labels: [container_id], regex: '(.{12}).*', target_label: container}
                  - {action: labeldrop, regex: container_id}
                """);
        Path out = dir.resolve("profiles");
        Files.createDirectories(scope);
        Process target = null;
        ParcaStandIn standIn = new ParcaStandIn().start();
        try {
            target = Targets.start(bin);
            long pid = target.pid();
            Files.writeString(scope.resolve("cgroup.procs"), Long.toString(pid));
            String procCgroup = Files.readString(Path.of("/proc", Long.toString(pid), "cgroup"));
            assertTrue(procCgroup.contains("/" + slice.getFileName() + "/" + unit + "\n"), procCgroup);
            try (AgentProcess agent = AgentProcess.start(dir, "--config", config.toString(), "--pid",
                    Long.toString(pid), "--frequency", "99", "--interval", "1s", "--duration", "4s",
                    "--output", out.toString(), "--http", "off", "--remote-store-address", standIn.address(),
                    "--remote-store-insecure", "--spool-dir", dir.resolve("spool").toString())) {
                assertEquals(0, agent.awaitExit(Duration.ofSeconds(60)), agent.log());
            }

            List<Profiles.Stack> mine = Profiles.stacksOfDir(out).stream().filter(s -> s.pid() == pid).toList();
            assertTrue(Profiles.total(mine) > 100, "samples of the contained process: " + Profiles.total(mine));
            Set<Map<String, String>> cgroupLabels = new java.util.HashSet<>();
            Set<String> nodes = new TreeSet<>();
            for (Profiles.Stack s : mine) {
                nodes.add(String.valueOf(s.labels().get("node")));
                Map<String, String> l = new TreeMap<>(s.labels());
                l.keySet().retainAll(Set.of("systemd_unit", "systemd_user_unit", "container_id"));
                cgroupLabels.add(l);
            }
            assertEquals(Set.of(Map.of("systemd_unit", unit, "container_id", id)), cgroupLabels,
                    "every sample of the process, in the local files");
            assertEquals(Set.of(Files.readString(Path.of("/proc/sys/kernel/hostname")).trim()), nodes,
                    "local files name the host on every sample");

            Set<Map<String, String>> shipped = new java.util.HashSet<>();
            TreeSet<String> otherPids = new TreeSet<>();
            for (var r : standIn.accepted()) {
                for (RawProfileSeries s : r.request().getSeriesList()) {
                    Map<String, String> l = new TreeMap<>();
                    s.getLabels().getLabelsList().forEach(x -> l.put(x.getName(), x.getValue()));
                    if (!l.get("pid").equals(Long.toString(pid))) {
                        otherPids.add(l.get("pid"));
                        continue;
                    }
                    l.remove("node"); // the host's name
                    l.remove("build_id"); // what gcc gave the binary
                    shipped.add(l);
                }
            }
            assertEquals(Set.of(), otherPids, "--pid: only the target's series");
            assertEquals(Set.of(Map.of("__name__", "parca_agent_cpu", "pid", Long.toString(pid),
                            "comm", "contained", "executable", bin.toString(), "systemd_unit", unit,
                            "container", id.substring(0, 12))), shipped,
                    "every interval's series: container_id relabelled to a 12-digit container label");
            assertTrue(standIn.rejections().isEmpty(), standIn.rejections().toString());
        } finally {
            standIn.close();
            Targets.kill(target);
            removeWhenEmpty(scope);
            removeWhenEmpty(slice);
        }
    }

    /** A cgroup can be removed once its last process has gone (the kernel takes a moment after the exit). */
    private static void removeWhenEmpty(Path cgroup) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try {
                Files.deleteIfExists(cgroup);
                return;
            } catch (IOException busy) {
                if (System.nanoTime() > end) {
                    throw busy;
                }
                Thread.sleep(50);
            }
        }
    }
}
