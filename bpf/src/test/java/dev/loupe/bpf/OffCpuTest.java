package dev.loupe.bpf;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The real off_cpu_switch program (sched_switch) in the kernel, loaded apart and sharing the sampler's maps: a shell
 * that waits for its children almost all the time has its waits delivered, each once, with its stack (kernel and user),
 * the state sleeping and a length; their sum is its wall time. Never skipped: CI runs as root with BPF.
 */
class OffCpuTest {
    private final List<Process> children = new ArrayList<>();

    @AfterEach
    void killChildren() {
        children.forEach(Process::destroyForcibly);
    }

    @Test
    void aWaitingShellsWaitsAddUpToItsWallTimeWithStacksAndState() throws Exception {
        PerfEventSamplerTest.availableOrFail();
        Process p = new ProcessBuilder("/bin/sh", "-c", "while :; do sleep 0.05; done")
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        children.add(p);
        int pid = (int) p.pid();
        try (PerfEventSampler s = PerfEventSampler.open(19, Set.of(pid))) {
            s.offCpu(1.0, 0);
            List<RawSample> waits = new ArrayList<>();
            // Warm up: the first waits may have begun before the program was attached (no switch-out record).
            long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (waits.isEmpty()) {
                if (System.nanoTime() > end) {
                    fail("no wait within 10 s; " + s.offCpuStats());
                }
                s.poll(Duration.ofMillis(50), r -> {
                    if (r.offCpu()) {
                        waits.add(r);
                    }
                });
            }
            waits.clear();
            long from = System.nanoTime();
            long until = from + Duration.ofSeconds(2).toNanos();
            while (System.nanoTime() < until) {
                s.poll(Duration.ofMillis(50), r -> {
                    if (r.offCpu()) {
                        waits.add(r);
                    }
                });
            }
            long wall = System.nanoTime() - from;
            long total = waits.stream().mapToLong(RawSample::offCpuNs).sum();
            assertTrue(waits.size() >= 20, waits.size() + " waits in 2 s of a shell starting sleep every 50 ms");
            assertTrue(Math.abs(total - wall) < wall / 5, "waits total " + total / 1_000_000 + " ms of " + wall / 1_000_000
                    + " ms wall");
            RawSample w = waits.getFirst();
            assertEquals(pid, w.pid());
            assertTrue(w.kernelStack().length > 2, "schedule's path: " + w.kernelStack().length + " kernel frames");
            assertTrue(w.userStack().length > 1, "the shell's user stack: " + w.userStack().length + " frames");
            assertTrue(waits.stream().anyMatch(r -> r.offCpuState() == OffCpuState.SLEEPING.code()),
                    "a wait for children is interruptible");
            var stats = s.offCpuStats();
            assertEquals(0, stats.drops() + stats.endDrops(), stats.toString());
            s.offCpu(0, 0); // detached: nothing more comes
            s.poll(Duration.ofMillis(200), r -> { });
            long recorded = s.offCpuStats().recorded();
            // The shell goes on switching out (a wait per child): once it has done so 5 more times, none may be recorded.
            long switches = voluntarySwitches(pid);
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (voluntarySwitches(pid) < switches + 5) {
                if (System.nanoTime() > deadline) {
                    fail("the shell did not switch out 5 times in 10 s");
                }
                s.poll(Duration.ofMillis(20), r -> { });
            }
            assertEquals(recorded, s.offCpuStats().recorded(), "no switch recorded once detached");
        }
    }

    /** The task's voluntary context switches so far ({@code /proc/PID/status}). */
    private static long voluntarySwitches(int pid) throws java.io.IOException {
        for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc", Integer.toString(pid), "status"))) {
            if (line.startsWith("voluntary_ctxt_switches:")) {
                return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        throw new AssertionError("no voluntary_ctxt_switches in /proc/" + pid + "/status");
    }
}
