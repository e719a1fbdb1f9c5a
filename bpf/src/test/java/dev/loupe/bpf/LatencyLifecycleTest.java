package dev.loupe.bpf;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * No probe outlives its owner: after close(), and after the owning JVM is killed with SIGKILL, the kernel
 * lists no uprobe perf event of that process (bpftool perf) and the programs are gone (bpftool prog).
 */
class LatencyLifecycleTest {
    @TempDir
    static Path dir;
    static Path target;
    static long entry;

    @BeforeAll
    static void build() throws Exception {
        BpfAvailability.unavailabilityReason().ifPresent(r -> fail("BPF must be available here (CI runs as root): " + r));
        target = LatencyTargets.buildC(Path.of("src/test/c/latency_target.c"), dir.resolve("c-life"));
        entry = LatencyTargets.offsets(target, "work").entry();
    }

    @Test
    void closeRemovesEveryProbe() throws Exception {
        long me = ProcessHandle.current().pid();
        try (LatencyProbes probes = LatencyProbes.open()) {
            probes.attach(ProbeSpec.nativeFunction(1, target, -1, entry));
            assertEquals(2, uprobesOf(me, target).size(), "entry uprobe and uretprobe: " + bpftoolPerf());
        }
        assertEquals(List.of(), uprobesOf(me, target));
    }

    @Test
    void aKilledOwnerLeavesNothingBehind() throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        Process child = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                "target/classes:target/test-classes", LatencyCrashChild.class.getName(), target.toString(), Long.toString(entry))
                .redirectErrorStream(true).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream()));
            String line;
            StringBuilder seen = new StringBuilder();
            while ((line = out.readLine()) != null && !line.startsWith("attached ")) {
                seen.append(line).append('\n');
            }
            assertTrue(line != null, "child did not attach: " + seen);
            List<Integer> progIds = uprobesOf(child.pid(), target);
            assertEquals(2, progIds.size(), bpftoolPerf());
            Process kill = new ProcessBuilder("kill", "-9", Long.toString(child.pid())).start();
            assertEquals(0, kill.waitFor());
            assertTrue(child.waitFor(30, TimeUnit.SECONDS));
            assertEquals(137, child.exitValue(), "killed by SIGKILL");
            // The kernel releases a dead process's files asynchronously; poll briefly for the release.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!uprobesOf(child.pid(), target).isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertEquals(List.of(), uprobesOf(child.pid(), target), bpftoolPerf());
            for (int id : progIds) {
                Process show = new ProcessBuilder("bpftool", "prog", "show", "id", Integer.toString(id)).redirectErrorStream(true).start();
                String s = new String(show.getInputStream().readAllBytes());
                assertTrue(show.waitFor() != 0, "program " + id + " still loaded: " + s);
            }
        } finally {
            child.destroyForcibly();
        }
    }

    /** Program ids of the uprobe perf events that process {@code pid} holds on {@code binary}. */
    static List<Integer> uprobesOf(long pid, Path binary) throws Exception {
        String json = bpftoolPerf();
        List<Integer> ids = new java.util.ArrayList<>();
        Matcher m = Pattern.compile("\\{\"pid\":(\\d+),\"fd\":\\d+,\"prog_id\":(\\d+),\"fd_type\":\"(uprobe|uretprobe)\",\"filename\":\"([^\"]*)\"")
                .matcher(json);
        while (m.find()) {
            if (Long.parseLong(m.group(1)) == pid && m.group(4).equals(binary.toString())) {
                ids.add(Integer.parseInt(m.group(2)));
            }
        }
        return ids;
    }

    static String bpftoolPerf() throws Exception {
        return LatencyTargets.run(new ProcessBuilder("bpftool", "perf", "list", "-j"), 30);
    }
}
