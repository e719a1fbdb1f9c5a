package dev.loupe.it;

import dev.loupe.pprof.proto.Profile;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 30: whose waits the off-CPU profiles hold. The same {@code --pid} filter as CPU sampling, applied in the kernel
 * (the off-CPU program records no switch-out of another process, so the count of recorded switches stays under the
 * kept process's own switches); idle tasks and kernel threads left out of a host-wide profile; the agent's own waits
 * only with {@code off-cpu-include-self}; and a reload (SIGHUP) turning off-CPU profiles on and off.
 */
class OffCpuScopeTest {
    @TempDir
    static Path dir;
    static Path bin;

    @BeforeAll
    static void build() throws Exception {
        bin = Targets.build("offcpu_split.c", dir, "offcpu_split", "-fomit-frame-pointer", "-pthread");
    }

    /** Off-CPU nanoseconds per pid over the off-CPU files {@code files}. */
    static Map<Long, Long> nanosByPid(List<Path> files) throws IOException {
        Map<Long, Long> out = new HashMap<>();
        for (Path f : files) {
            Profile p = Profiles.read(f);
            List<Profiles.Stack> stacks = Profiles.stacks(p);
            for (int i = 0; i < stacks.size(); i++) {
                out.merge(stacks.get(i).pid(), p.getSample(i).getValue(1), Long::sum);
            }
        }
        return out;
    }

    static List<Path> offCpuFiles(Path out) throws IOException {
        return Profiles.files(out).stream().filter(f -> f.getFileName().toString().startsWith("offcpu-")).toList();
    }

    static List<Path> cpuFiles(Path out) throws IOException {
        return Profiles.files(out).stream().filter(f -> f.getFileName().toString().startsWith("cpu-")).toList();
    }

    /** Context switches of all the threads of {@code pid} since they started (/proc/PID/task/TID/status). */
    static long switches(long pid) throws IOException {
        long n = 0;
        try (var tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path t : tasks.toList()) {
                for (String line : Files.readAllLines(t.resolve("status"))) {
                    if (line.startsWith("voluntary_ctxt_switches:") || line.startsWith("nonvoluntary_ctxt_switches:")) {
                        n += Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
                    }
                }
            }
        }
        return n;
    }

    @Test
    void onlyTheChosenProcessesWaitsAreRecordedAndTheKernelFiltersThem() throws Exception {
        Process kept = Targets.startReady(bin, "waiter-only");
        Process dropped = Targets.startReady(bin, "waiter-only");
        Path out = dir.resolve("filtered");
        int port = FreePort.next();
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(kept.pid()), "--off-cpu-threshold", "1",
                "--interval", "2s", "--output", out.toString(), "--http", "127.0.0.1:" + port)) {
            agent.awaitSampling(Duration.ofSeconds(90));
            ReloadTest.await("two off-CPU profiles with the kept process's waits", () -> offCpuFiles(out).stream()
                    .filter(f -> {
                        try {
                            return nanosByPid(List.of(f)).getOrDefault(kept.pid(), 0L) > 0;
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    }).count() >= 2, agent);
            String metrics = LatencyProbeEndToEndTest.get(http, "http://127.0.0.1:" + port + "/metrics");
            long recorded = LatencyProbeEndToEndTest.value(metrics, "loupe_offcpu_switches_total{outcome=\"recorded\"}");
            long seen = LatencyProbeEndToEndTest.value(metrics, "loupe_offcpu_switches_total{outcome=\"seen\"}");
            long keptSwitches = switches(kept.pid());
            long droppedSwitches = switches(dropped.pid());
            System.out.printf("off-CPU --pid: %d switch-outs recorded of %d seen host-wide; the kept process switched %d "
                    + "times in its life, the other %d%n", recorded, seen, keptSwitches, droppedSwitches);
            // Every recorded switch-out was one of the kept process's threads': none of the other process's, though it
            // switches as often, and none of the host's.
            assertTrue(recorded > 0 && recorded <= keptSwitches, recorded + " recorded, the kept process switched "
                    + keptSwitches + " times");
            assertTrue(seen > recorded, "seen " + seen + ", recorded " + recorded);
            agent.terminate();
            agent.awaitExit(Duration.ofSeconds(60));
        } finally {
            Targets.kill(kept);
            Targets.kill(dropped);
        }
        Map<Long, Long> byPid = nanosByPid(offCpuFiles(out));
        assertTrue(byPid.getOrDefault(kept.pid(), 0L) > 0, "the kept process's waits: " + byPid);
        assertEquals(Set.of(kept.pid()), byPid.keySet(), "only the kept process; the other was " + dropped.pid());
    }

    /**
     * One host-wide agent, reloaded four times: off-CPU off (no files), then on at P = 0.05 (other processes' waits,
     * not the agent's, no idle task, no kernel thread), then with {@code off-cpu-include-self} (the agent's waits too),
     * then off again (no more off-CPU files).
     */
    @Test
    void reloadTurnsItOnAndOffAndTheAgentsOwnWaitsComeOnlyWhenAsked() throws Exception {
        Process target = Targets.startReady(bin, "waiter-only");
        Path out = dir.resolve("reloaded");
        Path config = dir.resolve("loupe.yaml");
        String common = "output: " + out + "\ninterval: 2s\nfrequency: 19\nhttp:\n  address: off\n";
        Files.writeString(config, common + "off-cpu-threshold: 0\n");
        try (AgentProcess agent = AgentProcess.start(dir, "--config", config.toString())) {
            agent.awaitSampling(Duration.ofSeconds(90));
            ReloadTest.await("three CPU profiles", () -> cpuFiles(out).size() >= 3, agent);
            assertEquals(List.of(), offCpuFiles(out), "off: no off-CPU profiles");

            Files.writeString(config, common + "off-cpu-threshold: 0.05\n");
            ReloadTest.hup(agent);
            ReloadTest.await("the reload turning it on", () -> agent.log().contains("reload: applied: off-cpu-threshold"), agent);
            ReloadTest.await("three off-CPU profiles with the target's waits", () -> withPid(out, target.pid()).size() >= 3, agent);
            List<Path> withoutSelf = offCpuFiles(out);
            Map<Long, Long> byPid = nanosByPid(withoutSelf);
            System.out.printf("off-CPU host-wide at P = 0.05: %d processes in %d profiles, agent %d: %d ns%n", byPid.size(),
                    withoutSelf.size(), agent.pid(), byPid.getOrDefault(agent.pid(), 0L));
            assertTrue(byPid.size() >= 3, "host-wide: several processes' waits " + byPid.keySet());
            assertEquals(0L, byPid.getOrDefault(agent.pid(), 0L), "the agent's own waits are left out by default");
            assertEquals(0L, byPid.getOrDefault(0L, 0L), "the idle task never waits");
            List<Long> kernelThreads = byPid.keySet().stream().filter(OffCpuScopeTest::kernelThread).toList();
            assertEquals(List.of(), kernelThreads, "kernel threads are left out");

            Files.writeString(config, common + "off-cpu-threshold: 0.05\noff-cpu-include-self: true\n");
            ReloadTest.hup(agent);
            ReloadTest.await("the reload including the agent", () -> agent.log().contains("reload: applied: off-cpu-include-self"),
                    agent);
            ReloadTest.await("an off-CPU profile with the agent's own waits", () -> !withPid(out, agent.pid()).isEmpty(), agent);
            List<Path> withSelf = withPid(out, agent.pid());
            assertTrue(withoutSelf.stream().noneMatch(withSelf::contains), "the agent's waits only after the reload");

            Files.writeString(config, common + "off-cpu-threshold: 0\noff-cpu-include-self: true\n");
            ReloadTest.hup(agent);
            ReloadTest.await("the reload turning it off", () -> agent.log().lines()
                    .filter(l -> l.contains("reload: applied: off-cpu-threshold")).count() >= 2, agent);
            int cpuAtOff = cpuFiles(out).size();
            ReloadTest.await("three more CPU profiles", () -> cpuFiles(out).size() >= cpuAtOff + 3, agent);
            // The interval in which the reload came may still hold waits; the ones after it none, so no file.
            List<String> cpu = cpuFiles(out).stream().map(f -> f.getFileName().toString().substring("cpu-".length())).toList();
            Set<String> offcpu = new TreeSet<>(offCpuFiles(out).stream()
                    .map(f -> f.getFileName().toString().substring("offcpu-".length())).toList());
            for (String last : cpu.subList(cpu.size() - 2, cpu.size())) {
                assertTrue(!offcpu.contains(last), "an off-CPU profile after it was turned off: offcpu-" + last);
            }
            agent.terminate();
            agent.awaitExit(Duration.ofSeconds(60));
        } finally {
            Targets.kill(target);
        }
    }

    /** The off-CPU files holding waits of {@code pid}. */
    static List<Path> withPid(Path out, long pid) throws IOException {
        List<Path> with = new ArrayList<>();
        for (Path f : offCpuFiles(out)) {
            if (nanosByPid(List.of(f)).getOrDefault(pid, 0L) > 0) {
                with.add(f);
            }
        }
        return with;
    }

    /** Whether {@code pid} is a kernel thread (PF_KTHREAD in /proc/PID/stat's flags); false once it is gone. */
    static boolean kernelThread(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[6]) & 0x00200000L) != 0; // field 9, flags
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
