package dev.loupe.it.bench;

import dev.loupe.it.Profiles;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

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
public final class PythonBench {
    private PythonBench() {}

    static final Path PYTHON = Path.of("/usr/bin/python3.11");
    static final String MAPPING = "[python] python3.11";
    static final String NICE = "/usr/bin/nice";

    private static final List<String> problems = new ArrayList<>();
    private static final List<String> summary = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        Set<String> parts = new LinkedHashSet<>(List.of("cost", "cpu", "start"));
        int rounds = 3;
        int seconds = 10;
        int depth = 40;
        int processes = 10;
        int cpuSeconds = 40;
        int warmup = 10;
        int starts = 5;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--part" -> parts = new LinkedHashSet<>(List.of(args[++i].split(",")));
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--seconds" -> seconds = Integer.parseInt(args[++i]);
                case "--depth" -> depth = Integer.parseInt(args[++i]);
                case "--processes" -> processes = Integer.parseInt(args[++i]);
                case "--cpu-seconds" -> cpuSeconds = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--starts" -> starts = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i] + " (usage: python [--part cost,cpu,start]"
                        + " [--rounds N] [--seconds S] [--depth D] [--processes N] [--cpu-seconds S] [--warmup S] [--starts N])");
            }
        }
        if (!Files.isExecutable(PYTHON)) {
            throw new IllegalStateException(PYTHON + " missing: Debian 12's python3.11 (./loupe test installs it)");
        }
        Path tmp = Files.createTempDirectory("loupe-python-bench");
        Path script = tmp.resolve("deep.py");
        Files.writeString(script, program());
        Path nativeBin = buildNative(tmp, depth);
        System.out.printf(Locale.ROOT, "%s: <module> -> r x %d, the innermost spinning; native: deeprec.c, recurse x %d,"
                + " -O2 -fomit-frame-pointer%n", PYTHON, depth - 1, depth);
        if (parts.contains("cost")) {
            System.out.println("== 1. BPF cost per sample: Python stack (interpreter frames walked) vs native stack (eh_frame tables)");
            cost(script, nativeBin, tmp, depth, rounds, seconds);
        }
        if (parts.contains("cpu")) {
            System.out.printf("== 2. agent CPU and RSS: %d busy Python processes vs %d busy native processes%n", processes, processes);
            cpu(script, nativeBin, tmp, depth, processes, warmup, cpuSeconds);
        }
        if (parts.contains("start")) {
            System.out.println("== 3. time from a Python process's start to its named Python frames in the agent's profile");
            start(script, tmp, depth, starts);
        }
        System.out.println();
        System.out.println("Summary (issue 26, ./loupe bench python " + String.join(" ", args) + "):");
        summary.forEach(s -> System.out.println("  " + s));
        if (!problems.isEmpty()) {
            System.out.println();
            System.out.println("FAILED: the figures above do not measure what they say:");
            problems.forEach(p -> System.out.println("  !! " + p));
            System.exit(1);
        }
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

    record CostResult(double nsPerSample, long samples, double tableFrames, double fpFrames, StackShape shape) {}

    private static void cost(Path script, Path nativeBin, Path tmp, int depth, int rounds, int seconds) throws Exception {
        Process py = startPython(script, depth, false);
        Process nat = null;
        Path flag = Path.of("/proc/sys/kernel/bpf_stats_enabled");
        String before = Files.readString(flag).trim();
        CostResult[][] results = new CostResult[2][rounds];
        String[] names = {"Python, interpreter frames", "native, eh_frame tables"};
        try {
            awaitReady(List.of(py), 60);
            nat = new ProcessBuilder(nativeBin.toString()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            Process[] targets = {py, nat};
            Files.writeString(flag, "1");
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < 2; k++) {
                    int m = (r % 2 == 0) ? k : 1 - k; // alternate the order
                    signal("CONT", targets[m]);
                    signal("STOP", targets[1 - m]);
                    CostResult res = costOnce(targets[m], m == 0, tmp.resolve("cost-" + r + "-" + m), seconds);
                    results[m][r] = res;
                    System.out.printf(Locale.ROOT, "round %d  %-27s %7.0f ns per sample (%d samples; %.1f frames by tables,"
                            + " %.1f by frame pointers per sample); profile: %s%n", r + 1, names[m], res.nsPerSample(),
                            res.samples(), res.tableFrames(), res.fpFrames(), res.shape());
                }
            }
        } finally {
            Files.writeString(flag, before);
            kill(py);
            kill(nat);
        }
        double p = median(Arrays.stream(results[0]).mapToDouble(CostResult::nsPerSample).toArray());
        double n = median(Arrays.stream(results[1]).mapToDouble(CostResult::nsPerSample).toArray());
        StackShape ps = results[0][rounds - 1].shape();
        StackShape ns = results[1][rounds - 1].shape();
        for (CostResult r : results[0]) {
            checkPython(r.shape(), depth, "cost round");
        }
        for (CostResult r : results[1]) {
            if (r.shape().medianUser() < depth + 2 || r.shape().rootShare() < 90) {
                problems.add("native stacks not whole: " + r.shape());
            }
        }
        String line = String.format(Locale.ROOT, "BPF cost per sample, median of %d rounds: Python %,.0f ns (median %d user frames,"
                + " %d named Python, per sample) vs native %,.0f ns (median %d user frames): Python/native %.2fx", rounds, p,
                ps.medianUser(), ps.medianPython(), n, ns.medianUser(), p / n);
        System.out.println(line);
        summary.add(line);
    }

    private static CostResult costOnce(Process target, boolean isPython, Path dir, int seconds) throws Exception {
        Files.createDirectories(dir);
        int settle = 4;
        Process agent = BenchAgent.start(BenchAgent.jar(), dir.resolve("agent.log"), List.of("--pid", Long.toString(target.pid()),
                "--frequency", "99", "--duration", (seconds + settle + 120) + "s", "--http", "off", "--jvm-symbols", "off",
                "--output", dir.resolve("out").toString(), "--state-dir", dir.resolve("state").toString()));
        try {
            Thread.sleep(settle * 1000L); // registration
            BenchAgent.BpfWindow w = BenchAgent.bpfWindow(agent.pid(), seconds);
            BenchAgent.stop(agent); // its profile written on SIGTERM; --duration is only a bound on a loaded machine
            if (agent.isAlive()) {
                throw new IllegalStateException("agent did not stop:\n" + Files.readString(dir.resolve("agent.log")));
            }
            long samples = w.samples();
            StackShape shape = shape(Profiles.uncheckedStacksOfDir(dir.resolve("out")), Set.of(target.pid()), isPython);
            return new CostResult((double) w.runNs() / samples, samples, (double) w.stat(BenchAgent.STAT_TABLE_FRAMES) / samples,
                    (double) w.stat(BenchAgent.STAT_FP_FRAMES) / samples, shape);
        } finally {
            agent.destroyForcibly();
            agent.waitFor(10, TimeUnit.SECONDS);
        }
    }

    // ---------------------------------------------------------------------------------------------- 2. agent CPU

    record CpuResult(double percent, long cpuMs, long rssKb, long hwmKb, StackShape shape) {}

    private static void cpu(Path script, Path nativeBin, Path tmp, int depth, int count, int warmup, int seconds)
            throws Exception {
        List<Process> pySet = new ArrayList<>();
        List<Process> natSet = new ArrayList<>();
        Map<String, CpuResult> res = new TreeMap<>();
        try {
            for (int i = 0; i < count; i++) {
                pySet.add(startPython(script, depth, false, NICE));
            }
            awaitReady(pySet, 60);
            for (int i = 0; i < count; i++) {
                natSet.add(new ProcessBuilder(NICE, "-n", "19", nativeBin.toString()).redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start());
            }
            int run = 0;
            for (int hz : new int[] {19, 99}) {
                for (int k = 0; k < 2; k++) {
                    boolean pySetOn = (run % 2 == 0) == (k == 0); // alternate which set goes first
                    List<Process> on = pySetOn ? pySet : natSet;
                    List<Process> off = pySetOn ? natSet : pySet;
                    for (Process p : on) {
                        signal("CONT", p);
                    }
                    for (Process p : off) {
                        signal("STOP", p);
                    }
                    CpuResult r = cpuOnce(on, pySetOn, hz, tmp.resolve("cpu-" + hz + "-" + (pySetOn ? "python" : "native")),
                            warmup, seconds);
                    res.put(hz + (pySetOn ? " python" : " native"), r);
                    System.out.printf(Locale.ROOT, "%2d Hz, %d %-6s: agent CPU %.3f %% of a core (%d ms over %d s), RSS %.0f MB"
                            + " (peak %.0f MB); profile: %s%n", hz, count, pySetOn ? "Python" : "native", r.percent(), r.cpuMs(),
                            seconds, r.rssKb() / 1024.0, r.hwmKb() / 1024.0, r.shape());
                    if (pySetOn) {
                        checkPython(r.shape(), depth, hz + " Hz, " + count + " Python processes");
                    }
                }
                run++;
            }
        } finally {
            for (Process p : pySet) {
                kill(p);
            }
            for (Process p : natSet) {
                kill(p);
            }
        }
        for (int hz : new int[] {19, 99}) {
            CpuResult p = res.get(hz + " python");
            CpuResult n = res.get(hz + " native");
            String line = String.format(Locale.ROOT, "agent CPU at %d Hz, %d busy Python processes: %.3f %% of a core, RSS %.0f MB"
                    + " (peak %.0f); %d busy native processes: %.3f %%, RSS %.0f MB (peak %.0f): Python/native CPU %.2fx,"
                    + " RSS %+.0f MB", hz, count, p.percent(), p.rssKb() / 1024.0, p.hwmKb() / 1024.0, count, n.percent(),
                    n.rssKb() / 1024.0, n.hwmKb() / 1024.0, p.percent() / n.percent(), (p.rssKb() - n.rssKb()) / 1024.0);
            System.out.println(line);
            summary.add(line);
        }
    }

    private static CpuResult cpuOnce(List<Process> targets, boolean isPython, int hz, Path dir, int warmup, int seconds)
            throws Exception {
        Files.createDirectories(dir);
        String pids = targets.stream().map(p -> Long.toString(p.pid())).collect(Collectors.joining(","));
        Process agent = BenchAgent.start(BenchAgent.jar(), dir.resolve("agent.log"), List.of("--pid", pids, "--frequency",
                Integer.toString(hz), "--interval", "10s", "--http", "off", "--jvm-symbols", "off", "--output",
                dir.resolve("out").toString(), "--state-dir", dir.resolve("state").toString()));
        CpuMeter meter = CpuMeter.of(agent.pid());
        try {
            Thread.sleep(warmup * 1000L);
            long a = meter.nanos();
            long t0 = System.nanoTime();
            Thread.sleep(seconds * 1000L);
            long b = meter.nanos();
            long t1 = System.nanoTime();
            long rss = BenchAgent.statusKb(agent.pid(), "VmRSS:");
            long hwm = BenchAgent.statusKb(agent.pid(), "VmHWM:");
            BenchAgent.stop(agent);
            Set<Long> ours = targets.stream().map(Process::pid).collect(Collectors.toSet());
            return new CpuResult(100.0 * (b - a) / (t1 - t0), (b - a) / 1_000_000, rss, hwm,
                    shape(Profiles.uncheckedStacksOfDir(dir.resolve("out")), ours, isPython));
        } finally {
            agent.destroyForcibly();
            agent.waitFor(10, TimeUnit.SECONDS);
            meter.close();
        }
    }

    // ---------------------------------------------------------------------------------------------- 3. start to names

    private static void start(Path script, Path tmp, int depth, int starts) throws Exception {
        Path dir = tmp.resolve("start");
        Path out = dir.resolve("out");
        Files.createDirectories(dir);
        Path log = dir.resolve("agent.log");
        Process agent = BenchAgent.start(BenchAgent.jar(), log, List.of("--frequency", "99", "--interval", "1s", "--http", "off",
                "--jvm-symbols", "off", "--output", out.toString(), "--state-dir", dir.resolve("state").toString()));
        double[] named = new double[starts];
        double[] intervalEnd = new double[starts];
        try {
            Thread.sleep(3000);
            Set<Path> seen = new HashSet<>(Profiles.files(out));
            for (int i = 0; i < starts; i++) {
                long wall0 = System.currentTimeMillis();
                long t0 = System.nanoTime();
                Process py = startPython(script, depth, true);
                named[i] = -1;
                intervalEnd[i] = -1;
                try {
                    long deadline = t0 + TimeUnit.SECONDS.toNanos(60);
                    while (named[i] < 0 && System.nanoTime() < deadline) {
                        double now = (System.nanoTime() - t0) / 1e9;
                        for (Path f : Profiles.files(out)) {
                            if (!seen.add(f)) {
                                continue;
                            }
                            for (Profiles.Stack s : Profiles.stacks(Profiles.read(f))) {
                                if (s.pid() == py.pid() && !s.functions().isEmpty() && s.files().get(0).equals(MAPPING)
                                        && s.functions().get(0).equals("r")) {
                                    named[i] = now;
                                    intervalEnd[i] = (s.timeNanos() / 1e6 + 1000 - wall0) / 1e3;
                                    break;
                                }
                            }
                            if (named[i] >= 0) {
                                break;
                            }
                        }
                        Thread.sleep(20);
                    }
                } finally {
                    kill(py);
                }
                if (named[i] < 0) {
                    problems.add("Python start " + (i + 1) + ": no named Python leaf within 60 s (" + log + ")");
                }
                System.out.printf(Locale.ROOT, "start %d: Python leaf r named in a profile file %.2f s after the process's start"
                        + " (the interval holding it ended at %.2f s)%n", i + 1, named[i], intervalEnd[i]);
                Thread.sleep(1500);
            }
        } finally {
            BenchAgent.stop(agent);
        }
        String line = String.format(Locale.ROOT, "Python start to named Python frames (agent running, --interval 1s, polled every"
                + " 20 ms): %s s, median %.2f s (interval end: median %.2f s)", join(named), median(named), median(intervalEnd));
        System.out.println(line);
        summary.add(line);
    }

    // ---------------------------------------------------------------------------------------------- stacks

    /**
     * What a profile's samples of the targets look like: per sample (weighted by count), the median user frames and
     * named Python frames (in {@value #MAPPING}), and the shares that reach {@code _start} and have the leaf {@code r}.
     */
    record StackShape(long samples, int medianUser, int medianPython, double rootShare, double pythonLeafShare, String worst) {
        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%d samples, median %d user frames, %d named Python; %.1f %% reach _start,"
                    + " %.1f %% Python leaf r%s", samples, medianUser, medianPython, rootShare, pythonLeafShare,
                    worst.isEmpty() ? "" : " (the others end: " + worst + ")");
        }
    }

    private static StackShape shape(List<Profiles.Stack> stacks, Set<Long> pids, boolean isPython) {
        List<long[]> userCounts = new ArrayList<>(); // {frames, count}
        List<long[]> pyCounts = new ArrayList<>();
        long total = 0;
        long root = 0;
        long pyLeaf = 0;
        Map<String, Long> others = new TreeMap<>();
        for (Profiles.Stack s : stacks) {
            if (!pids.contains(s.pid())) {
                continue;
            }
            List<String> user = s.user();
            if (user.isEmpty() || s.labels().getOrDefault("unwind", "").equals("frame_pointers")) {
                continue; // before the agent registered the process: frame pointers, no tables
            }
            long py = 0;
            String leaf = null;
            for (int i = 0; i < s.functions().size(); i++) {
                if (s.files().get(i).equals(MAPPING)) {
                    py++;
                    leaf = leaf == null ? s.functions().get(i) : leaf;
                }
            }
            total += s.count();
            userCounts.add(new long[] {user.size(), s.count()});
            pyCounts.add(new long[] {py, s.count()});
            String last = user.get(user.size() - 1);
            if (last.equals("_start")) {
                root += s.count();
            } else {
                others.merge(String.join(" <- ", user.subList(Math.max(0, user.size() - 4), user.size())), s.count(), Long::sum);
            }
            if (isPython && "r".equals(leaf)) {
                pyLeaf += s.count();
            }
        }
        String worst = others.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(3)
                .map(e -> e.getValue() + "x ..." + e.getKey()).collect(Collectors.joining("; "));
        return new StackShape(total, weightedMedian(userCounts), weightedMedian(pyCounts),
                total == 0 ? 0 : 100.0 * root / total, total == 0 ? 0 : 100.0 * pyLeaf / total, worst);
    }

    /** Python stacks must be whole: depth named Python frames, leaf r, down to _start. */
    private static void checkPython(StackShape s, int depth, String where) {
        if (s.samples() < 50 || s.medianPython() != depth || s.rootShare() < 90 || s.pythonLeafShare() < 90) {
            problems.add(where + ": Python stacks not whole (expected " + depth + " named Python frames, innermost r, reaching"
                    + " _start): " + s);
        }
    }

    private static int weightedMedian(List<long[]> v) {
        if (v.isEmpty()) {
            return 0;
        }
        v.sort((a, b) -> Long.compare(a[0], b[0]));
        long total = v.stream().mapToLong(a -> a[1]).sum();
        long acc = 0;
        for (long[] a : v) {
            acc += a[1];
            if (acc * 2 >= total) {
                return (int) a[0];
            }
        }
        return (int) v.get(v.size() - 1)[0];
    }

    // ---------------------------------------------------------------------------------------------- targets

    /** deeprec.c with its recursion depth set to {@code depth}, -O2 -fomit-frame-pointer: walked with eh_frame tables. */
    private static Path buildNative(Path tmp, int depth) throws Exception {
        String src = Files.readString(Path.of(System.getProperty("loupe.c.sources")).resolve("deeprec.c"));
        if (!src.contains("#define DEPTH 60")) {
            throw new IllegalStateException("deeprec.c no longer has '#define DEPTH 60': update PythonBench");
        }
        Path c = tmp.resolve("deeprec" + depth + ".c");
        Files.writeString(c, src.replace("#define DEPTH 60", "#define DEPTH " + depth));
        Path bin = tmp.resolve("deeprec" + depth);
        BenchAgent.exec(List.of("gcc", "-O2", "-fomit-frame-pointer", c.toString(), "-o", bin.toString()));
        return bin;
    }

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
        List<CompletableFuture<String>> lines = new ArrayList<>();
        for (Process p : targets) {
            lines.add(CompletableFuture.supplyAsync(() -> {
                try {
                    return new BufferedReader(new InputStreamReader(p.getInputStream())).readLine();
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }));
        }
        for (CompletableFuture<String> l : lines) {
            String line = l.get(timeoutSeconds, TimeUnit.SECONDS);
            if (!"ready".equals(line)) {
                throw new IllegalStateException("a Python target's first line: " + line);
            }
        }
    }

    private static void signal(String sig, Process p) throws Exception {
        BenchAgent.exec(List.of("kill", "-" + sig, Long.toString(p.pid())));
    }

    private static void kill(Process p) throws InterruptedException {
        if (p != null) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static String join(double[] v) {
        return Arrays.stream(v).mapToObj(d -> String.format(Locale.ROOT, "%.2f", d)).collect(Collectors.joining(", "));
    }
}
