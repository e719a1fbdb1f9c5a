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
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * The harness of the runtime-versus-native benchmarks ({@link RuntimesBench}: Java, {@link PythonBench}: CPython):
 * the options, the three parts (cost rounds alternating the runtime target and deeprec.c under SIGSTOP/SIGCONT with
 * the BPF program's run time per sample; the agent's CPU and RSS over N busy targets of each kind; the time from a
 * runtime target's start to its named frames), the stack shape read back from each profile, and the figures printed.
 * A bench gives only what differs: how to start its target, how to tell its frames, when its stacks are whole, its
 * words in the output lines (which stay as each bench printed them before this harness).
 */
abstract class RuntimeVersusNative {
    private final Names names;
    private final Options defaults;
    private final List<String> problems = new ArrayList<>();
    private final List<String> summary = new ArrayList<>();

    RuntimeVersusNative(Names names, Options defaults) {
        this.names = names;
        this.defaults = defaults;
    }

    /** The parsed command line; {@code count} is the bench's --jvms or --processes. */
    record Options(Set<String> parts, int rounds, int seconds, int depth, int count, int cpuSeconds, int warmup, int starts) {}

    /**
     * What a bench calls things in its options and output lines (each line as the bench printed it before this harness).
     *
     * @param command        {@code ./loupe bench COMMAND}, e.g. "runtimes"
     * @param countOption    the option naming how many busy targets the cpu part runs, e.g. "--jvms"
     * @param runtime        the runtime's name in figures: "Java %,.0f ns", "named Java", "Java/native"
     * @param cpuTitle       a format of the cpu part's title, given the count twice
     * @param costLabel      a cost round's label of the runtime target, printed {@code costLabelWidth} wide
     * @param cpuSetLabel    the cpu part's label of the runtime set ("JVMs"), also in "JVMs/native CPU"
     * @param cpuDirName     the cpu runs' directory name of the runtime set ("java")
     * @param busyNoun       the busy runtime targets in the cpu figures ("JVMs" in "10 busy JVMs")
     * @param startNoun      one start in a problem ("JVM" in "JVM start 2")
     * @param shapeRoot      what stacks reach in a {@link StackShape} ("the root" in "reach the root")
     * @param shapeLeaf      the leaf share's name in a {@link StackShape} ("Java leaf")
     */
    record Names(String command, int issue, String countOption, String runtime, String costTitle, String cpuTitle,
            String startTitle, String costLabel, int costLabelWidth, String cpuSetLabel, String cpuDirName, String busyNoun,
            String startNoun, String shapeRoot, String shapeLeaf) {}

    /** The words a {@link StackShape} prints: "named X", "reach ROOT", "LEAF" share. */
    record Words(String named, String root, String leaf) {}

    // ---------------------------------------------------------------------------------------------- what a bench gives

    /** Builds the runtime target (in {@code tmp}) before any part runs. */
    abstract void setUp(Path tmp, int depth) throws Exception;

    /** The first line printed, describing both targets. */
    abstract String header(int depth);

    /** The cost part's target, started; then {@link #awaitCostTarget} waits until it is ready to sample. */
    abstract Process startCostTarget(int depth) throws IOException;

    abstract void awaitCostTarget(Process target) throws Exception;

    /**
     * True: a cost round's agent is stopped with SIGTERM after its window ({@code --duration} only a bound); false:
     * it runs to its {@code --duration} end.
     */
    abstract boolean stopsCostAgent();

    /** Checks a cost round's agent log for the runtime target; a problem goes to {@link #problem}. */
    void checkCostLog(Process target, Path log) throws IOException {}

    /** Starts {@code count} busy runtime targets of the cpu part into {@code into}, and waits until they are ready. */
    abstract void startCpuTargets(int count, int depth, List<Process> into) throws Exception;

    /** The command prefix of the cpu part's native targets (e.g. nice). */
    abstract List<String> cpuNativePrefix();

    /** The RSS comparison at the end of a cpu summary line, e.g. "RSS 1.20x". */
    abstract String rssComparison(CpuResult runtime, CpuResult nat);

    /** Checks a cpu run's agent log for the runtime targets; a problem goes to {@link #problem}. */
    void checkCpuLog(List<Process> targets, int hz, Path log) throws IOException {}

    /** The start part's target: spinning at once. */
    abstract Process startStartTarget(int depth) throws IOException;

    /** Whether {@code s} is a sample of {@code pid} whose leaf is the runtime's named function. */
    abstract boolean namedLeaf(Profiles.Stack s, long pid);

    /** The agent's log line the start part also waits for (null: none), and its name in a problem. */
    String startLogLine(long pid) {
        return null;
    }

    String startLogLineName() {
        return null;
    }

    abstract int pauseBetweenStartsMs();

    /** One start's line; {@code logged}: when the start log line appeared (unused without one). */
    abstract String startLine(int i, double named, double intervalEnd, double logged);

    abstract String startSummary(double[] named, double[] intervalEnd, double[] logged);

    /** Whether a sample counts in a stack shape ({@code runtime}: of the runtime target). */
    abstract boolean sampled(Profiles.Stack s, boolean runtime);

    /** Its named runtime frames. */
    abstract long namedFrames(Profiles.Stack s);

    abstract boolean reachesRoot(List<String> user, boolean runtime);

    abstract boolean runtimeLeaf(Profiles.Stack s, boolean runtime);

    /** The problem if the runtime stacks are not whole, else null. */
    abstract String notWhole(StackShape s, int depth, String where);

    // ---------------------------------------------------------------------------------------------- run

    final void problem(String p) {
        problems.add(p);
    }

    final Options parse(String[] args) {
        Options d = defaults;
        Set<String> parts = d.parts();
        int rounds = d.rounds();
        int seconds = d.seconds();
        int depth = d.depth();
        int count = d.count();
        int cpuSeconds = d.cpuSeconds();
        int warmup = d.warmup();
        int starts = d.starts();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals(names.countOption())) {
                count = Integer.parseInt(args[++i]);
                continue;
            }
            switch (args[i]) {
                case "--part" -> parts = new LinkedHashSet<>(List.of(args[++i].split(",")));
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--seconds" -> seconds = Integer.parseInt(args[++i]);
                case "--depth" -> depth = Integer.parseInt(args[++i]);
                case "--cpu-seconds" -> cpuSeconds = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--starts" -> starts = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i] + " (usage: " + names.command()
                        + " [--part cost,cpu,start] [--rounds N] [--seconds S] [--depth D] [" + names.countOption() + " N]"
                        + " [--cpu-seconds S] [--warmup S] [--starts N])");
            }
        }
        return new Options(parts, rounds, seconds, depth, count, cpuSeconds, warmup, starts);
    }

    static Set<String> allParts() {
        return new LinkedHashSet<>(List.of("cost", "cpu", "start"));
    }

    final void run(String[] args) throws Exception {
        Options o = parse(args);
        Path tmp = Files.createTempDirectory("loupe-" + names.command() + "-bench");
        setUp(tmp, o.depth());
        Path nativeBin = buildNative(tmp, o.depth());
        System.out.println(header(o.depth()));
        if (o.parts().contains("cost")) {
            System.out.println(names.costTitle());
            cost(nativeBin, tmp, o.depth(), o.rounds(), o.seconds());
        }
        if (o.parts().contains("cpu")) {
            System.out.println(String.format(names.cpuTitle(), o.count(), o.count()));
            cpu(nativeBin, tmp, o.depth(), o.count(), o.warmup(), o.cpuSeconds());
        }
        if (o.parts().contains("start")) {
            System.out.println(names.startTitle());
            start(tmp, o.depth(), o.starts());
        }
        System.out.println();
        System.out.println("Summary (issue " + names.issue() + ", ./loupe bench " + names.command() + " " + String.join(" ", args)
                + "):");
        summary.forEach(s -> System.out.println("  " + s));
        if (!problems.isEmpty()) {
            System.out.println();
            System.out.println("FAILED: the figures above do not measure what they say:");
            problems.forEach(p -> System.out.println("  !! " + p));
            System.exit(1);
        }
    }

    // ---------------------------------------------------------------------------------------------- 1. BPF cost

    record CostResult(double nsPerSample, long samples, double tableFrames, double fpFrames, StackShape shape) {}

    private void cost(Path nativeBin, Path tmp, int depth, int rounds, int seconds) throws Exception {
        Process rt = startCostTarget(depth);
        Process nat = null;
        Path flag = Path.of("/proc/sys/kernel/bpf_stats_enabled");
        String before = Files.readString(flag).trim();
        CostResult[][] results = new CostResult[2][rounds];
        String[] labels = {names.costLabel(), "native, eh_frame tables"};
        try {
            awaitCostTarget(rt);
            nat = new ProcessBuilder(nativeBin.toString()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            Process[] targets = {rt, nat};
            Files.writeString(flag, "1");
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < 2; k++) {
                    int m = (r % 2 == 0) ? k : 1 - k; // alternate the order
                    signal("CONT", targets[m]);
                    signal("STOP", targets[1 - m]);
                    CostResult res = costOnce(targets[m], m == 0, tmp.resolve("cost-" + r + "-" + m), seconds);
                    results[m][r] = res;
                    System.out.printf(Locale.ROOT, "round %d  %-" + names.costLabelWidth() + "s %7.0f ns per sample (%d samples;"
                            + " %.1f frames by tables, %.1f by frame pointers per sample); profile: %s%n", r + 1, labels[m],
                            res.nsPerSample(), res.samples(), res.tableFrames(), res.fpFrames(), res.shape());
                }
            }
        } finally {
            Files.writeString(flag, before);
            kill(rt);
            kill(nat);
        }
        double j = median(Arrays.stream(results[0]).mapToDouble(CostResult::nsPerSample).toArray());
        double n = median(Arrays.stream(results[1]).mapToDouble(CostResult::nsPerSample).toArray());
        StackShape js = results[0][rounds - 1].shape();
        StackShape ns = results[1][rounds - 1].shape();
        for (CostResult r : results[0]) {
            check(r.shape(), depth, "cost round");
        }
        for (CostResult r : results[1]) {
            if (r.shape().medianUser() < depth + 2 || r.shape().rootShare() < 90) {
                problems.add("native stacks not whole: " + r.shape());
            }
        }
        String name = names.runtime();
        String line = String.format(Locale.ROOT, "BPF cost per sample, median of %d rounds: " + name + " %,.0f ns (median %d user"
                + " frames, %d named " + name + ", per sample) vs native %,.0f ns (median %d user frames): " + name
                + "/native %.2fx", rounds, j, js.medianUser(), js.medianNamed(), n, ns.medianUser(), j / n);
        System.out.println(line);
        summary.add(line);
    }

    private CostResult costOnce(Process target, boolean runtime, Path dir, int seconds) throws Exception {
        Files.createDirectories(dir);
        int settle = 4;
        boolean stop = stopsCostAgent();
        // stopped: --duration only a bound on a loaded machine; else the agent ends at its --duration
        int slack = stop ? 120 : 2;
        Path log = dir.resolve("agent.log");
        Process agent = BenchAgent.start(BenchAgent.jar(), log, List.of("--pid", Long.toString(target.pid()),
                "--frequency", "99", "--duration", (seconds + settle + slack) + "s", "--http", "off", "--jvm-symbols", "off",
                "--output", dir.resolve("out").toString(), "--state-dir", dir.resolve("state").toString()));
        try {
            Thread.sleep(settle * 1000L); // registration, a runtime's tables
            BenchAgent.BpfWindow w = BenchAgent.bpfWindow(agent.pid(), seconds);
            if (stop) {
                BenchAgent.stop(agent); // its profile written on SIGTERM
                if (agent.isAlive()) {
                    throw new IllegalStateException("agent did not stop:\n" + Files.readString(log));
                }
            } else if (!agent.waitFor(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("agent did not stop after --duration:\n" + Files.readString(log));
            }
            long samples = w.samples();
            StackShape shape = shape(Profiles.uncheckedStacksOfDir(dir.resolve("out")), Set.of(target.pid()), runtime);
            if (runtime) {
                checkCostLog(target, log);
            }
            return new CostResult((double) w.runNs() / samples, samples, (double) w.stat(BenchAgent.STAT_TABLE_FRAMES) / samples,
                    (double) w.stat(BenchAgent.STAT_FP_FRAMES) / samples, shape);
        } finally {
            agent.destroyForcibly();
            agent.waitFor(10, TimeUnit.SECONDS);
        }
    }

    // ---------------------------------------------------------------------------------------------- 2. agent CPU

    record CpuResult(double percent, long cpuMs, long rssKb, long hwmKb, StackShape shape) {}

    private void cpu(Path nativeBin, Path tmp, int depth, int count, int warmup, int seconds) throws Exception {
        List<Process> rtSet = new ArrayList<>();
        List<Process> natSet = new ArrayList<>();
        Map<String, CpuResult> res = new TreeMap<>();
        try {
            startCpuTargets(count, depth, rtSet);
            List<String> nativeCmd = new ArrayList<>(cpuNativePrefix());
            nativeCmd.add(nativeBin.toString());
            for (int i = 0; i < count; i++) {
                natSet.add(new ProcessBuilder(nativeCmd).redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start());
            }
            int run = 0;
            for (int hz : new int[] {19, 99}) {
                for (int k = 0; k < 2; k++) {
                    boolean rtOn = (run % 2 == 0) == (k == 0); // alternate which set goes first
                    List<Process> on = rtOn ? rtSet : natSet;
                    List<Process> off = rtOn ? natSet : rtSet;
                    for (Process p : on) {
                        signal("CONT", p);
                    }
                    for (Process p : off) {
                        signal("STOP", p);
                    }
                    CpuResult r = cpuOnce(on, rtOn, hz, tmp.resolve("cpu-" + hz + "-" + (rtOn ? names.cpuDirName() : "native")),
                            warmup, seconds);
                    res.put(hz + (rtOn ? " runtime" : " native"), r);
                    System.out.printf(Locale.ROOT, "%2d Hz, %d %-6s: agent CPU %.3f %% of a core (%d ms over %d s), RSS %.0f MB"
                            + " (peak %.0f MB); profile: %s%n", hz, count, rtOn ? names.cpuSetLabel() : "native", r.percent(),
                            r.cpuMs(), seconds, r.rssKb() / 1024.0, r.hwmKb() / 1024.0, r.shape());
                    if (rtOn) {
                        check(r.shape(), depth, hz + " Hz, " + count + " " + names.busyNoun());
                    }
                }
                run++;
            }
        } finally {
            for (Process p : rtSet) {
                kill(p);
            }
            for (Process p : natSet) {
                kill(p);
            }
        }
        for (int hz : new int[] {19, 99}) {
            CpuResult j = res.get(hz + " runtime");
            CpuResult n = res.get(hz + " native");
            String line = String.format(Locale.ROOT, "agent CPU at %d Hz, %d busy " + names.busyNoun() + ": %.3f %% of a core,"
                    + " RSS %.0f MB (peak %.0f); %d busy native processes: %.3f %%, RSS %.0f MB (peak %.0f): " + names.cpuSetLabel()
                    + "/native CPU %.2fx, ", hz, count, j.percent(), j.rssKb() / 1024.0, j.hwmKb() / 1024.0, count, n.percent(),
                    n.rssKb() / 1024.0, n.hwmKb() / 1024.0, j.percent() / n.percent()) + rssComparison(j, n);
            System.out.println(line);
            summary.add(line);
        }
    }

    private CpuResult cpuOnce(List<Process> targets, boolean runtime, int hz, Path dir, int warmup, int seconds)
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
            if (runtime) {
                checkCpuLog(targets, hz, dir.resolve("agent.log"));
            }
            Set<Long> ours = targets.stream().map(Process::pid).collect(Collectors.toSet());
            return new CpuResult(100.0 * (b - a) / (t1 - t0), (b - a) / 1_000_000, rss, hwm,
                    shape(Profiles.uncheckedStacksOfDir(dir.resolve("out")), ours, runtime));
        } finally {
            agent.destroyForcibly();
            agent.waitFor(10, TimeUnit.SECONDS);
            meter.close();
        }
    }

    // ---------------------------------------------------------------------------------------------- 3. start to names

    private void start(Path tmp, int depth, int starts) throws Exception {
        Path dir = tmp.resolve("start");
        Path out = dir.resolve("out");
        Files.createDirectories(dir);
        Path log = dir.resolve("agent.log");
        Process agent = BenchAgent.start(BenchAgent.jar(), log, List.of("--frequency", "99", "--interval", "1s", "--http", "off",
                "--jvm-symbols", "off", "--output", out.toString(), "--state-dir", dir.resolve("state").toString()));
        double[] named = new double[starts];
        double[] logged = new double[starts];
        double[] intervalEnd = new double[starts];
        try {
            Thread.sleep(3000);
            Set<Path> seen = new HashSet<>(Profiles.files(out));
            for (int i = 0; i < starts; i++) {
                long wall0 = System.currentTimeMillis();
                long t0 = System.nanoTime();
                Process target = startStartTarget(depth);
                String logLine = startLogLine(target.pid());
                named[i] = -1;
                logged[i] = -1;
                intervalEnd[i] = -1;
                try {
                    long deadline = t0 + TimeUnit.SECONDS.toNanos(60);
                    while ((named[i] < 0 || (logLine != null && logged[i] < 0)) && System.nanoTime() < deadline) {
                        double now = (System.nanoTime() - t0) / 1e9;
                        if (logLine != null && logged[i] < 0 && Files.readString(log).contains(logLine)) {
                            logged[i] = now;
                        }
                        if (named[i] < 0) {
                            for (Path f : Profiles.files(out)) {
                                if (!seen.add(f)) {
                                    continue;
                                }
                                for (Profiles.Stack s : Profiles.stacks(Profiles.read(f))) {
                                    if (namedLeaf(s, target.pid())) {
                                        named[i] = now;
                                        // the profile's interval: its start plus the 1 s interval, from the target's start
                                        intervalEnd[i] = (s.timeNanos() / 1e6 + 1000 - wall0) / 1e3;
                                        break;
                                    }
                                }
                                if (named[i] >= 0) {
                                    break;
                                }
                            }
                        }
                        Thread.sleep(20);
                    }
                } finally {
                    kill(target);
                }
                if (named[i] < 0 || (logLine != null && logged[i] < 0)) {
                    problems.add(names.startNoun() + " start " + (i + 1) + ": no "
                            + (named[i] < 0 ? "named " + names.runtime() + " leaf" : startLogLineName()) + " within 60 s (" + log + ")");
                }
                System.out.println(startLine(i, named[i], intervalEnd[i], logged[i]));
                Thread.sleep(pauseBetweenStartsMs());
            }
        } finally {
            BenchAgent.stop(agent);
        }
        String line = startSummary(named, intervalEnd, logged);
        System.out.println(line);
        summary.add(line);
    }

    // ---------------------------------------------------------------------------------------------- stacks

    /**
     * What a profile's samples of the targets look like: per sample (weighted by count), the median user frames and
     * named runtime frames, and the shares that reach the root and have the runtime's leaf (the bench's {@link Words}).
     */
    record StackShape(long samples, int medianUser, int medianNamed, double rootShare, double leafShare, String worst,
            Words words) {
        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%d samples, median %d user frames, %d named %s; %.1f %% reach %s,"
                    + " %.1f %% %s%s", samples, medianUser, medianNamed, words.named(), rootShare, words.root(), leafShare,
                    words.leaf(), worst.isEmpty() ? "" : " (the others end: " + worst + ")");
        }
    }

    private StackShape shape(List<Profiles.Stack> stacks, Set<Long> pids, boolean runtime) {
        List<long[]> userCounts = new ArrayList<>(); // {frames, count}
        List<long[]> namedCounts = new ArrayList<>();
        long total = 0;
        long root = 0;
        long leaf = 0;
        Map<String, Long> others = new TreeMap<>();
        for (Profiles.Stack s : stacks) {
            if (!pids.contains(s.pid()) || !sampled(s, runtime)) {
                continue;
            }
            List<String> user = s.user();
            if (user.isEmpty()) {
                continue;
            }
            total += s.count();
            userCounts.add(new long[] {user.size(), s.count()});
            namedCounts.add(new long[] {namedFrames(s), s.count()});
            if (reachesRoot(user, runtime)) {
                root += s.count();
            } else {
                others.merge(String.join(" <- ", user.subList(Math.max(0, user.size() - 4), user.size())), s.count(), Long::sum);
            }
            if (runtimeLeaf(s, runtime)) {
                leaf += s.count();
            }
        }
        String worst = others.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(3)
                .map(e -> e.getValue() + "x ..." + e.getKey()).collect(Collectors.joining("; "));
        return new StackShape(total, weightedMedian(userCounts), weightedMedian(namedCounts),
                total == 0 ? 0 : 100.0 * root / total, total == 0 ? 0 : 100.0 * leaf / total, worst,
                new Words(names.runtime(), names.shapeRoot(), names.shapeLeaf()));
    }

    private void check(StackShape s, int depth, String where) {
        String p = notWhole(s, depth, where);
        if (p != null) {
            problems.add(p);
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
    private Path buildNative(Path tmp, int depth) throws Exception {
        String src = Files.readString(Path.of(System.getProperty("loupe.c.sources")).resolve("deeprec.c"));
        if (!src.contains("#define DEPTH 60")) {
            throw new IllegalStateException("deeprec.c no longer has '#define DEPTH 60': update RuntimeVersusNative");
        }
        Path c = tmp.resolve("deeprec" + depth + ".c");
        Files.writeString(c, src.replace("#define DEPTH 60", "#define DEPTH " + depth));
        Path bin = tmp.resolve("deeprec" + depth);
        BenchAgent.exec(List.of("gcc", "-O2", "-fomit-frame-pointer", c.toString(), "-o", bin.toString()));
        return bin;
    }

    /** Waits for every target's first line to pass {@code ready}; else fails naming "a {@code what} target". */
    static void awaitFirstLine(List<Process> targets, int timeoutSeconds, Predicate<String> ready, String what)
            throws Exception {
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
            if (line == null || !ready.test(line)) {
                throw new IllegalStateException("a " + what + " target's first line: " + line);
            }
        }
    }

    private static void signal(String sig, Process p) throws Exception {
        BenchAgent.exec(List.of("kill", "-" + sig, Long.toString(p.pid())));
    }

    static void kill(Process p) throws InterruptedException {
        if (p != null) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    static String join(double[] v) {
        return Arrays.stream(v).mapToObj(d -> String.format(Locale.ROOT, "%.2f", d)).collect(Collectors.joining(", "));
    }
}
