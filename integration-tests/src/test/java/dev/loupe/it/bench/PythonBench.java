package dev.loupe.it.bench;

import dev.loupe.it.Profiles;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code ./loupe bench python [--part cost,cpu,start] [--rounds N] [--seconds S] [--depth D] [--processes N]
 * [--cpu-seconds S] [--warmup S] [--starts N]}: issue 26's figures for CPython stacks walked in the kernel (Debian 12's
 * {@code python3.11}, no flag in the target).
 * <ol>
 * <li><b>cost</b>: the BPF program's cost per sample (bpf_stats run_time_ns over the stats map's samples, as
 * {@link RuntimesBench}) of a Python recursion D frames deep ({@code <module>} and {@code r} x D-1, the innermost
 * spinning) against deeprec.c at recursion depth D built with -O2 -fomit-frame-pointer (eh_frame tables), interleaved
 * rounds, only the target sampled (--pid) while the other is stopped (SIGSTOP). Each round's profile is read back: the
 * median user frames and named Python frames per sample and how many reach {@code _start} (the samples walked with
 * the process's tables: those before its registration, by frame pointers, left out); the run fails loudly if the
 * Python stacks are not whole.</li>
 * <li><b>cpu</b>: the agent's CPU (cgroup CPU time, % of a core) and RSS while it samples N busy Python processes
 * (the same program) against N busy native ones (deeprec.c), --pid with all N, at
 * 19 Hz and 99 Hz, measured for S seconds after a warm-up; the other set is stopped. The targets run at nice 19: N
 * busy processes on a small machine must not starve the agent they measure (its start timed out on 2 shared cores).</li>
 * <li><b>start</b>: with a host-wide agent already running (--interval 1s), the time from a Python process's start until
 * a profile file holds a sample of it whose leaf is its named Python function; repeated, median reported.</li>
 * </ol>
 * About 8 minutes with the defaults.
 */
public final class PythonBench extends RuntimeVersusNative {
    static final Path PYTHON = Path.of("/usr/bin/python3.11");
    static final String MAPPING = "[python] python3.11";
    static final String NICE = "/usr/bin/nice";

    private Path script;

    private PythonBench() {
        super(new Names("python", 26, "--processes", "Python",
                "== 1. BPF cost per sample: Python stack (interpreter frames walked) vs native stack (eh_frame tables)",
                "== 2. agent CPU and RSS: %d busy Python processes vs %d busy native processes",
                "== 3. time from a Python process's start to its named Python frames in the agent's profile",
                "Python, interpreter frames", 27, "Python", "python", "Python processes", "Python", "_start", "Python leaf r"),
                // rounds, seconds, depth, processes, cpu-seconds, warmup, starts
                new Options(allParts(), 3, 10, 40, 10, 40, 10, 5));
    }

    public static void main(String[] args) throws Exception {
        PythonBench bench = new PythonBench();
        bench.parse(args); // a bad argument fails before the check below
        if (!Files.isExecutable(PYTHON)) {
            throw new IllegalStateException(PYTHON + " missing: Debian 12's python3.11 (./loupe test installs it)");
        }
        bench.run(args);
    }

    @Override
    void setUp(Path tmp, int depth) throws Exception {
        script = tmp.resolve("deep.py");
        Files.writeString(script, program());
    }

    @Override
    String header(int depth) {
        return String.format(Locale.ROOT, "%s: <module> -> r x %d, the innermost spinning; native: deeprec.c, recurse x %d,"
                + " -O2 -fomit-frame-pointer", PYTHON, depth - 1, depth);
    }

    /**
     * {@code python3.11 deep.py DEPTH [now]}: {@code <module>} calls {@code r(DEPTH - 2)}, which recurses to
     * {@code r(0)}: DEPTH Python frames, the innermost spinning on one line; prints "ready" first ("now": spin at
     * once, for the start part, where the time to names counts from the process's start).
     */
    static String program() {
        return """
                import sys


                def r(n):
                    if n == 0:
                        s = 0
                        while True: s = (s * 31 + 7) % 1000003
                    return r(n - 1) + 1


                if len(sys.argv) < 3:
                    print("ready", flush=True)
                r(int(sys.argv[1]) - 2)
                """;
    }

    // ---------------------------------------------------------------------------------------------- 1. BPF cost

    @Override
    Process startCostTarget(int depth) throws IOException {
        return startPython(script, depth, false);
    }

    @Override
    void awaitCostTarget(Process target) throws Exception {
        awaitReady(List.of(target), 60);
    }

    @Override
    boolean stopsCostAgent() {
        return true;
    }

    // ---------------------------------------------------------------------------------------------- 2. agent CPU

    @Override
    void startCpuTargets(int count, int depth, List<Process> into) throws Exception {
        for (int i = 0; i < count; i++) {
            into.add(startPython(script, depth, false, NICE));
        }
        awaitReady(into, 60);
    }

    @Override
    List<String> cpuNativePrefix() {
        return List.of(NICE, "-n", "19");
    }

    @Override
    String rssComparison(CpuResult runtime, CpuResult nat) {
        return String.format(Locale.ROOT, "RSS %+.0f MB", (runtime.rssKb() - nat.rssKb()) / 1024.0);
    }

    // ---------------------------------------------------------------------------------------------- 3. start to names

    @Override
    Process startStartTarget(int depth) throws IOException {
        return startPython(script, depth, true);
    }

    @Override
    boolean namedLeaf(Profiles.Stack s, long pid) {
        return s.pid() == pid && !s.functions().isEmpty() && s.files().get(0).equals(MAPPING)
                && s.functions().get(0).equals("r");
    }

    @Override
    int pauseBetweenStartsMs() {
        return 1500;
    }

    @Override
    String startLine(int i, double named, double intervalEnd, double logged) {
        return String.format(Locale.ROOT, "start %d: Python leaf r named in a profile file %.2f s after the process's start"
                + " (the interval holding it ended at %.2f s)", i + 1, named, intervalEnd);
    }

    @Override
    String startSummary(double[] named, double[] intervalEnd, double[] logged) {
        return String.format(Locale.ROOT, "Python start to named Python frames (agent running, --interval 1s, polled every"
                + " 20 ms): %s s, median %.2f s (interval end: median %.2f s)", join(named), median(named), median(intervalEnd));
    }

    // ---------------------------------------------------------------------------------------------- stacks

    /** Samples before the agent registered the process were walked by frame pointers, without its tables: left out. */
    @Override
    boolean sampled(Profiles.Stack s, boolean runtime) {
        return !s.labels().getOrDefault("unwind", "").equals("frame_pointers");
    }

    /** Named Python frames: those in {@value #MAPPING}. */
    @Override
    long namedFrames(Profiles.Stack s) {
        return s.files().stream().filter(MAPPING::equals).count();
    }

    @Override
    boolean reachesRoot(List<String> user, boolean runtime) {
        return user.get(user.size() - 1).equals("_start");
    }

    /** The innermost Python frame is r. */
    @Override
    boolean runtimeLeaf(Profiles.Stack s, boolean runtime) {
        if (!runtime) {
            return false;
        }
        for (int i = 0; i < s.functions().size(); i++) {
            if (s.files().get(i).equals(MAPPING)) {
                return s.functions().get(i).equals("r");
            }
        }
        return false;
    }

    /** Python stacks must be whole: depth named Python frames, leaf r, down to _start. */
    @Override
    String notWhole(StackShape s, int depth, String where) {
        if (s.samples() < 50 || s.medianNamed() != depth || s.rootShare() < 90 || s.leafShare() < 90) {
            return where + ": Python stacks not whole (expected " + depth + " named Python frames, innermost r, reaching"
                    + " _start): " + s;
        }
        return null;
    }

    // ---------------------------------------------------------------------------------------------- targets

    private static Process startPython(Path script, int depth, boolean now) throws IOException {
        return startPython(script, depth, now, null);
    }

    /** {@code nice}: run at nice 19 through this program (the cpu part: ten busy targets must leave the agent a core). */
    private static Process startPython(Path script, int depth, boolean now, String nice) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(PYTHON.toString(), script.toString(), Integer.toString(depth)));
        if (nice != null) {
            cmd.addAll(0, List.of(nice, "-n", "19"));
        }
        if (now) {
            cmd.add("now");
        }
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    /** Waits for every Python target's "ready" line. */
    private static void awaitReady(List<Process> targets, int timeoutSeconds) throws Exception {
        awaitFirstLine(targets, timeoutSeconds, "ready"::equals, "Python");
    }
}
