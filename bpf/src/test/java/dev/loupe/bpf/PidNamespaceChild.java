package dev.loupe.bpf;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Test-only child JVM, run by {@link PidNamespaceSamplingTest} inside a PID namespace of its own. Samples
 * for a while in each of three setups and prints what it saw, one section per setup:
 * <pre>
 * run NAME MODE          the setup and the mode the sampler took
 * calls N                calls of bpf_get_ns_current_pid_tgid in the loaded program
 * seen COMM PID TID HOST_PID HOST_TID FLAGS USER_FRAMES? COUNT   samples aggregated by all but the count
 * stats OUTSIDE_BEFORE OUTSIDE_AFTER DROPPED   the kernel's count of outside samples around the last poll
 * </pre>
 * Setups: {@code detected} (what the agent gets), {@code filtered} (a pid filter of this namespace's
 * pid {@code args[0]}), {@code no-helper} (as on a kernel without the helper). Then latency probes with
 * caller stacks on function {@code work} (entry file offset {@code args[3]}) of {@code args[2]}:
 * <pre>
 * latency attached PID   probe attached, and the inside caller (this namespace's PID) started; waits for
 *                        a line on stdin (the caller outside has run too)
 * group COMM PID STACK_DEPTH LOST CALLS   drained groups aggregated by all but the calls
 * </pre>
 */
public final class PidNamespaceChild {
    private PidNamespaceChild() {}

    public static void main(String[] args) throws Exception {
        int filterPid = Integer.parseInt(args[0]);
        Duration each = Duration.ofSeconds(Long.parseLong(args[1]));
        Path ns = Path.of("/proc/self/ns/pid");
        SampledPids detected = SampledPids.ofThisProcess(BpfAvailability.PROG_PERF_EVENT);
        run("detected", detected, Set.of(), each);
        run("filtered", detected, Set.of(filterPid), each);
        run("no-helper", SampledPids.of((Long) Files.getAttribute(ns, "unix:dev"), (Long) Files.getAttribute(ns, "unix:ino"),
                false), Set.of(), each);
        latency(Path.of(args[2]), Long.parseLong(args[3]));
        System.out.println("done");
    }

    private static void latency(Path binary, long entry) throws Exception {
        try (LatencyProbes probes = LatencyProbes.open()) {
            probes.attach(ProbeSpec.nativeFunction(0, binary, -1, entry).withStacks(true));
            Process caller = new ProcessBuilder(binary.toString(), "flat", "1", "50").redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            System.out.println("latency attached " + caller.pid());
            if (caller.waitFor() != 0) {
                throw new IllegalStateException("the inside caller failed: " + caller.exitValue());
            }
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
            Map<String, Long> groups = new TreeMap<>();
            for (LatencyGroup g : probes.drainGroups()) {
                groups.merge(String.join(" ", g.comm(), Integer.toString(g.pid()), Integer.toString(g.stack().length),
                        Boolean.toString(g.stackLost())), g.count(), Long::sum);
            }
            groups.forEach((k, n) -> System.out.println("group " + k + " " + n));
        }
    }

    private static void run(String name, SampledPids pids, Set<Integer> filter, Duration d) throws Exception {
        try (PerfEventSampler s = PerfEventSampler.open(99, filter, pids)) {
            System.out.println("run " + name + " " + pids.mode());
            System.out.println("calls " + LoadedInstructions.calls(LoadedInstructions.dump(s.program()),
                    "bpf_get_ns_current_pid_tgid"));
            List<RawSample> samples = new ArrayList<>();
            long end = System.nanoTime() + d.toNanos();
            while (System.nanoTime() < end) {
                s.poll(Duration.ofMillis(100), samples::add);
            }
            SamplerStats before = s.stats();
            s.poll(Duration.ZERO, samples::add);
            SamplerStats after = s.stats();
            Map<String, Integer> seen = new TreeMap<>();
            for (RawSample r : samples) {
                seen.merge(String.join(" ", r.comm().isEmpty() ? "-" : r.comm().replace(' ', '_'), Integer.toString(r.pid()),
                        Integer.toString(r.tid()), Integer.toString(r.hostPid()), Integer.toString(r.hostTid()),
                        Integer.toString(r.flags()), Boolean.toString(r.userStack().length > 0)), 1, Integer::sum);
            }
            seen.forEach((k, n) -> System.out.println("seen " + k + " " + n));
            System.out.println("stats " + before.pidOutside() + " " + after.pidOutside() + " " + after.dropped());
        }
    }
}
