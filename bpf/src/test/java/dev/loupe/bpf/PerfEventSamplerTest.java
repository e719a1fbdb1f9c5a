package dev.loupe.bpf;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Loads the real BPF program into the kernel. Never skipped: CI runs as root with BPF. */
class PerfEventSamplerTest {
    private final List<Process> children = new ArrayList<>();

    @AfterEach
    void killChildren() {
        children.forEach(Process::destroyForcibly);
    }

    private Process spawn(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        children.add(p);
        return p;
    }

    private static List<RawSample> collect(PerfEventSampler s, Duration d) throws BpfException {
        List<RawSample> out = new ArrayList<>();
        long end = System.nanoTime() + d.toNanos();
        while (System.nanoTime() < end) {
            s.poll(Duration.ofMillis(100), out::add);
        }
        s.poll(Duration.ZERO, out::add);
        return out;
    }

    /** A shell spinning in a busy loop (killed after the test); its pid. */
    private int spinningShell() throws Exception {
        return (int) spawn("/bin/sh", "-c", "while :; do :; done").pid();
    }

    /** stats() reads maps by fd: it must not wait for the monitor a long poll holds. */
    @Test
    void statsDoNotWaitForAPollInProgress() throws Exception {
        availableOrFail();
        // A pid that does not exist: nothing passes the filter, so the poll waits its whole timeout,
        // while a busy process makes filtered samples for the counters.
        spawn("/bin/sh", "-c", "while :; do :; done");
        try (PerfEventSampler s = PerfEventSampler.open(99, Set.of(Integer.MAX_VALUE - 1))) {
            awaitTrue("filtered samples of the busy process", () -> s.stats().filtered() > 0);
            Thread poller = new Thread(() -> {
                try {
                    s.poll(Duration.ofSeconds(5), r -> { });
                } catch (BpfException e) {
                    throw new IllegalStateException(e);
                }
            });
            poller.start();
            awaitTrue("the poller holding the sampler's monitor", () -> holdsMonitor(poller, s));
            SamplerStats st = s.stats();
            assertTrue(holdsMonitor(poller, s), "stats() returned while the poll still held the monitor");
            assertTrue(st.filtered() > 0, "and it read the kernel counters: " + st);
            poller.join();
        }
    }

    /** Whether {@code t} holds {@code o}'s monitor now (a synchronized method of {@code o} is running on it). */
    private static boolean holdsMonitor(Thread t, Object o) {
        java.lang.management.ThreadInfo[] info = java.lang.management.ManagementFactory.getThreadMXBean()
                .getThreadInfo(new long[] {t.threadId()}, true, false);
        if (info.length == 0 || info[0] == null) {
            return false;
        }
        for (java.lang.management.MonitorInfo m : info[0].getLockedMonitors()) {
            if (m.getIdentityHashCode() == System.identityHashCode(o) && m.getClassName().equals(o.getClass().getName())) {
                return true;
            }
        }
        return false;
    }

    private static void awaitTrue(String what, java.util.function.BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + 4_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) {
                fail("not within 4 s: " + what);
            }
            Thread.sleep(5);
        }
    }

    /** utime + stime of a process in clock ticks (USER_HZ = 100). */
    private static long cpuTicks(int pid) throws Exception {
        String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + pid + "/stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]); // fields 14 and 15
    }

    @Test
    void samplesOnlyTheFilteredBusyProcessWithUserStacks() throws Exception {
        availableOrFail();
        int pid = spinningShell();
        try (PerfEventSampler s = PerfEventSampler.open(99, Set.of(pid))) {
            long cpuBefore = cpuTicks(pid);
            List<RawSample> samples = collect(s, Duration.ofSeconds(2));
            long cpuTicks = cpuTicks(pid) - cpuBefore;
            // 99 samples per CPU-second the target actually ran (it shares 2 cores with whatever else runs):
            // within scheduling noise of that, and never none.
            double expected = cpuTicks / 100.0 * 99;
            assertTrue(cpuTicks >= 50, "test premise: the target ran at least 0.5 CPU-s, got " + cpuTicks + " ticks");
            assertTrue(samples.size() > 0.7 * expected && samples.size() < 1.3 * expected + 5,
                    "samples: " + samples.size() + " for " + cpuTicks + " ticks of CPU (expected ~" + (long) expected + ")");
            for (RawSample r : samples) {
                assertEquals(pid, r.pid(), "pid filter");
                assertEquals("sh", r.comm());
                assertTrue(r.userStack().length >= 1, "user stack present");
                assertTrue(r.userStack()[0] > 0 && r.userStack()[0] < 0x0000800000000000L, "user-space IP");
            }
            SamplerStats st = s.stats();
            assertTrue(st.filtered() > 0, "other processes were filtered out: " + st);
            assertEquals(samples.size(), st.delivered());
            assertEquals(0, st.dropped());
        }
    }

    @Test
    void withUnwindTablesOffFramePointerSamplesAreNotFallbacks() throws Exception {
        availableOrFail();
        int pid = spinningShell();
        try (PerfEventSampler s = PerfEventSampler.open(99, Set.of(pid))) {
            // Default (tables on): an unregistered process is walked with frame pointers and flagged.
            List<RawSample> on = collect(s, Duration.ofSeconds(1));
            assertTrue(!on.isEmpty() && on.stream().allMatch(r -> (r.flags() & RawSample.FP_FALLBACK) != 0),
                    "every sample of an unregistered process is a fallback: " + on.size() + "; not: "
                            + on.stream().filter(r -> (r.flags() & RawSample.FP_FALLBACK) == 0)
                            .map(r -> r.flags() + ":" + java.util.Arrays.toString(r.userStack()) + ":" + java.util.Arrays.toString(r.mappings()))
                            .limit(3).toList() + " " + s.stats());
            assertTrue(s.stats().fpFallback() >= on.size());

        }
        try (PerfEventSampler s = PerfEventSampler.openWithoutUnwindTables(99, Set.of(pid))) {
            List<RawSample> off = collect(s, Duration.ofSeconds(1));
            assertTrue(off.size() > 20, "still sampled: " + off.size());
            for (RawSample r : off) {
                assertEquals(0, r.flags() & RawSample.FP_FALLBACK, "no fallback flag with tables off");
                assertTrue(r.userStack().length >= 1 && r.userStack()[0] > 0, "user stack still walked");
            }
            assertEquals(0, s.stats().fpFallback(), "no fallback counted with tables off");
            assertEquals(0, s.stats().tableFrames(), "no table frames with tables off");
            assertTrue(s.stats().fpFrames() >= off.size(), "frame-pointer frames counted: " + s.stats());
            assertThrows(IllegalStateException.class, s::unwindMaps, "no unwind maps to fill");
        }
    }

    @Test
    void kernelStacksForSyscallHeavyProcess() throws Exception {
        availableOrFail();
        Process dd = spawn("dd", "if=/dev/zero", "of=/dev/null", "bs=1M", "count=100000000");
        try (PerfEventSampler s = PerfEventSampler.open(99, Set.of((int) dd.pid()))) {
            List<RawSample> samples = collect(s, Duration.ofSeconds(2));
            long withKernel = samples.stream().filter(r -> r.kernelStack().length > 0).count();
            assertTrue(withKernel > samples.size() / 2, withKernel + " of " + samples.size() + " in kernel");
            for (RawSample r : samples) {
                for (long a : r.kernelStack()) {
                    assertTrue(Long.compareUnsigned(a, 0xffff800000000000L) >= 0, "kernel address " + Long.toHexString(a));
                }
                // Even in the kernel, the user stack comes from the registers saved at syscall entry.
                assertTrue(r.userStack().length >= 1, "user stack under kernel frames");
            }
        }
    }

    /**
     * Every program run counts exactly one of samples, idle and filtered before it returns, and the kernel
     * counts the run (BPF_ENABLE_STATS, on from before the open) after it returns: so the run count lies
     * between two reads of the counters, less at most one run in flight per CPU. The run time is what
     * docs/performance.md divides per run: positive and within what one sample can cost.
     */
    @Test
    void unfilteredSamplingSeesEveryBusyProcessAndCountsEveryRun() throws Exception {
        availableOrFail();
        int a = (int) spawn("/bin/sh", "-c", "while :; do :; done").pid();
        int b = (int) spawn("/bin/sh", "-c", "while :; do :; done").pid();
        int cpus = PerfEventSampler.onlineCpus().size();
        try (BpfProgram.RunStatsOn on = BpfProgram.enableRunStats();
             PerfEventSampler s = PerfEventSampler.open(49, Set.of())) {
            List<RawSample> samples = collect(s, Duration.ofSeconds(2));
            var pids = samples.stream().map(RawSample::pid).collect(java.util.stream.Collectors.toSet());
            assertTrue(pids.contains(a) && pids.contains(b), "both spinners sampled: " + pids);
            SamplerStats before = s.stats();
            PerfEventSampler.ProgramStats ps = s.programStats();
            SamplerStats after = s.stats();
            assertEquals(0, after.filtered());
            assertEquals(0, after.dropped(), after.toString());
            long runsBefore = before.samples() + before.idle();
            long runsAfter = after.samples() + after.idle();
            assertTrue(samples.size() <= before.samples(), samples.size() + " delivered of " + before);
            assertTrue(ps.runCount() >= runsBefore - cpus && ps.runCount() <= runsAfter,
                    "run count " + ps.runCount() + " between " + runsBefore + " - " + cpus + " and " + runsAfter);
            double nsPerRun = (double) ps.runTimeNs() / ps.runCount();
            assertTrue(nsPerRun > 200 && nsPerRun < 1_000_000, "run time per run " + nsPerRun + " ns: " + ps);
        }
    }

    /**
     * In the initial PID namespace (where tests run) pids are the kernel's: the verifier dropped the
     * translation, so the loaded program never calls bpf_get_ns_current_pid_tgid and every sample's pid is
     * its host pid. (PidNamespaceSamplingTest runs a sampler inside another namespace.)
     */
    @Test
    void inTheInitialNamespaceTheLoadedProgramDoesNotTranslatePids() throws Exception {
        availableOrFail();
        int pid = spinningShell();
        try (PerfEventSampler s = PerfEventSampler.open(99, Set.of(pid))) {
            String dump = LoadedInstructions.dump(s.program());
            assertEquals(1, LoadedInstructions.calls(dump, "bpf_get_current_pid_tgid"), "helper names resolved");
            assertEquals(0, LoadedInstructions.calls(dump, "bpf_get_ns_current_pid_tgid"));
            List<RawSample> samples = collect(s, Duration.ofSeconds(1));
            assertTrue(samples.size() > 20, "sampled: " + samples.size());
            for (RawSample r : samples) {
                assertEquals(List.of(pid, pid, pid, pid, 0), List.of(r.pid(), r.tid(), r.hostPid(), r.hostTid(),
                        r.flags() & RawSample.PID_OUTSIDE));
            }
            assertEquals(0, s.stats().pidOutside());
        }
    }

    @Test
    void rejectsFrequencyAboveKernelLimit() {
        availableOrFail();
        BpfException e = org.junit.jupiter.api.Assertions.assertThrows(BpfException.class,
                () -> PerfEventSampler.open(10_000_000, Set.of()));
        assertTrue(e.getMessage().contains("perf_event_max_sample_rate"), e.getMessage());
    }

    static void availableOrFail() {
        BpfAvailability.unavailabilityReason().ifPresent(r -> fail("BPF must be available here (CI runs as root): " + r));
    }
}
