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
 * {@code ./loupe bench runtimes [--part cost,cpu,start] [--rounds N] [--seconds S] [--depth D] [--jvms N]
 * [--cpu-seconds S] [--warmup S] [--starts N]}: issue 17's three figures for Java stacks walked from outside the
 * JVM (code cache unwind tables, names from the JVM's memory, {@code --jvm-symbols off}: no attach).
 * <ol>
 * <li><b>cost</b>: the BPF program's cost per sample (bpf_stats run_time_ns over the stats map's samples, as
 * {@link UnwindBench}) of a JIT-warmed Java recursion of depth D (each frame a method too large to inline, the
 * bottom spinning) against deeprec.c at the same recursion depth built with -fomit-frame-pointer (eh_frame tables),
 * interleaved rounds, the same program, only the target sampled (--pid) while the other target is stopped
 * (SIGSTOP) so its filtered-out samples cost nothing. Each round's profile is read back: the median user frames and
 * named Java frames per sample, and how many samples reach the thread's root; the run fails loudly if the Java
 * stacks are not whole.</li>
 * <li><b>cpu</b>: the agent's CPU (cgroup CPU time, % of a core) and RSS while it samples N busy JVMs (JDK 25,
 * default flags, the same Java program allocating a little per call) against N busy native processes (deeprec.c),
 * --pid with all N, at 19 Hz and 99 Hz, measured for S seconds after a warm-up; the other set is stopped.</li>
 * <li><b>start</b>: with a host-wide agent already running (--interval 1s), the time from a JVM's start until a
 * profile file holds a sample of it whose leaf is a named Java method, and until the agent logs its
 * "jit tables: pid N" line; repeated, median reported.</li>
 * </ol>
 * About 8-9 minutes with the defaults.
 */
public final class RuntimesBench {
    private RuntimesBench() {}

    static final Path JDK25 = Path.of("/usr/lib/jvm/temurin-25-jdk-amd64/bin");
    static final String JAVA_CLASS = "Deep";

    private static final List<String> problems = new ArrayList<>();
    private static final List<String> summary = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        Set<String> parts = new LinkedHashSet<>(List.of("cost", "cpu", "start"));
        int rounds = 3;
        int seconds = 8;
        int depth = 40;
        int jvms = 10;
        int cpuSeconds = 60;
        int warmup = 15;
        int starts = 3;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--part" -> parts = new LinkedHashSet<>(List.of(args[++i].split(",")));
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--seconds" -> seconds = Integer.parseInt(args[++i]);
                case "--depth" -> depth = Integer.parseInt(args[++i]);
                case "--jvms" -> jvms = Integer.parseInt(args[++i]);
                case "--cpu-seconds" -> cpuSeconds = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--starts" -> starts = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i] + " (usage: runtimes [--part cost,cpu,start]"
                        + " [--rounds N] [--seconds S] [--depth D] [--jvms N] [--cpu-seconds S] [--warmup S] [--starts N])");
            }
        }
        Path java = javaBin();
        Path tmp = Files.createTempDirectory("loupe-runtimes-bench");
        Path classes = compileJava(java, tmp);
        Path nativeBin = buildNative(tmp, depth);
        System.out.printf(Locale.ROOT, "JVM %s; Java target: main -> rec x %d -> leaf (each over FreqInlineSize); "
                + "native: deeprec.c, recurse x %d, -O2 -fomit-frame-pointer%n", java, depth, depth);
        if (parts.contains("cost")) {
            System.out.println("== 1. BPF cost per sample: Java stack (code cache tables) vs native stack (eh_frame tables)");
            cost(java, classes, nativeBin, tmp, depth, rounds, seconds);
        }
        if (parts.contains("cpu")) {
            System.out.printf("== 2. agent CPU and RSS: %d busy JVMs vs %d busy native processes%n", jvms, jvms);
            cpu(java, classes, nativeBin, tmp, depth, jvms, warmup, cpuSeconds);
        }
        if (parts.contains("start")) {
            System.out.println("== 3. time from a JVM's start to named Java frames in the agent's profile");
            start(java, classes, tmp, depth, starts);
        }
        System.out.println();
        System.out.println("Summary (issue 17, ./loupe bench runtimes " + String.join(" ", args) + "):");
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

    private static void cost(Path java, Path classes, Path nativeBin, Path tmp, int depth, int rounds, int seconds)
            throws Exception {
        Process jvm = startJvm(java, classes, depth, false);
        Process nat = null;
        Path flag = Path.of("/proc/sys/kernel/bpf_stats_enabled");
        String before = Files.readString(flag).trim();
        CostResult[][] results = new CostResult[2][rounds];
        String[] names = {"Java, code cache tables", "native, eh_frame tables"};
        try {
            awaitWarm(List.of(jvm), 180);
            nat = new ProcessBuilder(nativeBin.toString()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            Process[] targets = {jvm, nat};
            Files.writeString(flag, "1");
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < 2; k++) {
                    int m = (r % 2 == 0) ? k : 1 - k; // alternate the order
                    signal("CONT", targets[m]);
                    signal("STOP", targets[1 - m]);
                    CostResult res = costOnce(targets[m], m == 0, tmp.resolve("cost-" + r + "-" + m), seconds, depth);
                    results[m][r] = res;
                    System.out.printf(Locale.ROOT, "round %d  %-26s %7.0f ns per sample (%d samples; %.1f frames by tables,"
                            + " %.1f by frame pointers per sample); profile: %s%n", r + 1, names[m], res.nsPerSample(),
                            res.samples(), res.tableFrames(), res.fpFrames(), res.shape());
                }
            }
        } finally {
            Files.writeString(flag, before);
            kill(jvm);
            kill(nat);
        }
        double j = median(Arrays.stream(results[0]).mapToDouble(CostResult::nsPerSample).toArray());
        double n = median(Arrays.stream(results[1]).mapToDouble(CostResult::nsPerSample).toArray());
        StackShape js = results[0][rounds - 1].shape();
        StackShape ns = results[1][rounds - 1].shape();
        for (CostResult r : results[0]) {
            checkJava(r.shape(), depth, "cost round");
        }
        for (CostResult r : results[1]) {
            if (r.shape().medianUser() < depth + 2 || r.shape().rootShare() < 90) {
                problems.add("native stacks not whole: " + r.shape());
            }
        }
        String line = String.format(Locale.ROOT, "BPF cost per sample, median of %d rounds: Java %,.0f ns (median %d user frames,"
                + " %d named Java, per sample) vs native %,.0f ns (median %d user frames): Java/native %.2fx", rounds, j,
                js.medianUser(), js.medianJava(), n, ns.medianUser(), j / n);
        System.out.println(line);
        summary.add(line);
    }

    private static CostResult costOnce(Process target, boolean isJava, Path dir, int seconds, int depth) throws Exception {
        Files.createDirectories(dir);
        int settle = 4;
        Process agent = BenchAgent.start(BenchAgent.jar(), dir.resolve("agent.log"), List.of("--pid", Long.toString(target.pid()),
                "--frequency", "99", "--duration", (seconds + settle + 2) + "s", "--http", "off", "--jvm-symbols", "off",
                "--output", dir.resolve("out").toString(), "--state-dir", dir.resolve("state").toString()));
        try {
            Thread.sleep(settle * 1000L); // registration, the JVM's table
            BenchAgent.BpfWindow w = BenchAgent.bpfWindow(agent.pid(), seconds);
            if (!agent.waitFor(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("agent did not stop after --duration:\n" + Files.readString(dir.resolve("agent.log")));
            }
            long samples = w.samples();
            StackShape shape = shape(Profiles.uncheckedStacksOfDir(dir.resolve("out")), target.pid(), isJava);
            if (isJava && !Files.readString(dir.resolve("agent.log")).contains("jit tables: pid " + target.pid() + " (")) {
                problems.add("the agent built no JIT table for the Java target " + target.pid() + " (" + dir.resolve("agent.log") + ")");
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

    private static void cpu(Path java, Path classes, Path nativeBin, Path tmp, int depth, int count, int warmup, int seconds)
            throws Exception {
        List<Process> jvmSet = new ArrayList<>();
        List<Process> natSet = new ArrayList<>();
        Map<String, CpuResult> res = new TreeMap<>();
        try {
            for (int i = 0; i < count; i++) {
                jvmSet.add(startJvm(java, classes, depth, true));
            }
            long t0 = System.nanoTime();
            awaitWarm(jvmSet, 300);
            System.out.printf(Locale.ROOT, "%d JVMs warm after %.1f s%n", count, (System.nanoTime() - t0) / 1e9);
            for (int i = 0; i < count; i++) {
                natSet.add(new ProcessBuilder(nativeBin.toString()).redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start());
            }
            int run = 0;
            for (int hz : new int[] {19, 99}) {
                for (int k = 0; k < 2; k++) {
                    boolean javaSet = (run % 2 == 0) == (k == 0); // alternate which set goes first
                    List<Process> on = javaSet ? jvmSet : natSet;
                    List<Process> off = javaSet ? natSet : jvmSet;
                    for (Process p : on) {
                        signal("CONT", p);
                    }
                    for (Process p : off) {
                        signal("STOP", p);
                    }
                    CpuResult r = cpuOnce(on, javaSet, hz, tmp.resolve("cpu-" + hz + "-" + (javaSet ? "java" : "native")),
                            warmup, seconds);
                    String key = hz + (javaSet ? " java" : " native");
                    res.put(key, r);
                    System.out.printf(Locale.ROOT, "%2d Hz, %d %-6s: agent CPU %.3f %% of a core (%d ms over %d s), RSS %.0f MB"
                            + " (peak %.0f MB); profile: %s%n", hz, count, javaSet ? "JVMs" : "native", r.percent(), r.cpuMs(),
                            seconds, r.rssKb() / 1024.0, r.hwmKb() / 1024.0, r.shape());
                    if (javaSet) {
                        checkJava(r.shape(), depth, hz + " Hz, " + count + " JVMs");
                    }
                }
                run++;
            }
        } finally {
            for (Process p : jvmSet) {
                kill(p);
            }
            for (Process p : natSet) {
                kill(p);
            }
        }
        for (int hz : new int[] {19, 99}) {
            CpuResult j = res.get(hz + " java");
            CpuResult n = res.get(hz + " native");
            String line = String.format(Locale.ROOT, "agent CPU at %d Hz, %d busy JVMs: %.3f %% of a core, RSS %.0f MB (peak %.0f);"
                    + " %d busy native processes: %.3f %%, RSS %.0f MB (peak %.0f): JVMs/native CPU %.2fx, RSS %.2fx", hz, count,
                    j.percent(), j.rssKb() / 1024.0, j.hwmKb() / 1024.0, count, n.percent(), n.rssKb() / 1024.0,
                    n.hwmKb() / 1024.0, j.percent() / n.percent(), (double) j.rssKb() / n.rssKb());
            System.out.println(line);
            summary.add(line);
        }
    }

    private static CpuResult cpuOnce(List<Process> targets, boolean isJava, int hz, Path dir, int warmup, int seconds)
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
            if (isJava) {
                String log = Files.readString(dir.resolve("agent.log"));
                long tables = targets.stream().filter(p -> log.contains("jit tables: pid " + p.pid() + " (")).count();
                if (tables != targets.size()) {
                    problems.add(hz + " Hz: the agent built JIT tables for " + tables + " of " + targets.size() + " JVMs");
                }
            }
            List<Profiles.Stack> stacks = new ArrayList<>();
            Set<Long> ours = targets.stream().map(Process::pid).collect(Collectors.toSet());
            for (Profiles.Stack s : Profiles.uncheckedStacksOfDir(dir.resolve("out"))) {
                if (ours.contains(s.pid())) {
                    stacks.add(s);
                }
            }
            return new CpuResult(100.0 * (b - a) / (t1 - t0), (b - a) / 1_000_000, rss, hwm, shape(stacks, -1, isJava));
        } finally {
            agent.destroyForcibly();
            agent.waitFor(10, TimeUnit.SECONDS);
            meter.close();
        }
    }

    // ---------------------------------------------------------------------------------------------- 3. start to names

    private static void start(Path java, Path classes, Path tmp, int depth, int starts) throws Exception {
        Path dir = tmp.resolve("start");
        Path out = dir.resolve("out");
        Files.createDirectories(dir);
        Path log = dir.resolve("agent.log");
        Process agent = BenchAgent.start(BenchAgent.jar(), log, List.of("--frequency", "99", "--interval", "1s", "--http", "off",
                "--jvm-symbols", "off", "--output", out.toString(), "--state-dir", dir.resolve("state").toString()));
        double[] named = new double[starts];
        double[] tables = new double[starts];
        double[] intervalEnd = new double[starts];
        try {
            Thread.sleep(3000);
            Set<Path> seen = new HashSet<>(Profiles.files(out));
            for (int i = 0; i < starts; i++) {
                long wall0 = System.currentTimeMillis();
                long t0 = System.nanoTime();
                Process jvm = startJvm(java, classes, depth, false);
                named[i] = -1;
                tables[i] = -1;
                intervalEnd[i] = -1;
                try {
                    String tablesLine = "jit tables: pid " + jvm.pid() + " (";
                    long deadline = t0 + TimeUnit.SECONDS.toNanos(60);
                    while ((named[i] < 0 || tables[i] < 0) && System.nanoTime() < deadline) {
                        double now = (System.nanoTime() - t0) / 1e9;
                        if (tables[i] < 0 && Files.readString(log).contains(tablesLine)) {
                            tables[i] = now;
                        }
                        if (named[i] < 0) {
                            for (Path f : Profiles.files(out)) {
                                if (!seen.add(f)) {
                                    continue;
                                }
                                for (Profiles.Stack s : Profiles.stacks(Profiles.read(f))) {
                                    List<String> user = s.user();
                                    if (s.pid() == jvm.pid() && !user.isEmpty() && user.get(0).startsWith(JAVA_CLASS + ".")) {
                                        named[i] = now;
                                        // the profile's interval: its start plus the 1 s interval, from the JVM's start
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
                    kill(jvm);
                }
                if (named[i] < 0 || tables[i] < 0) {
                    problems.add("JVM start " + (i + 1) + ": no " + (named[i] < 0 ? "named Java leaf" : "\"jit tables\" line")
                            + " within 60 s (" + log + ")");
                }
                System.out.printf(Locale.ROOT, "start %d: named Java leaf in a profile file %.2f s after the JVM's start (the"
                        + " interval holding it ended at %.2f s); \"jit tables: pid N\" logged at %.2f s%n", i + 1, named[i],
                        intervalEnd[i], tables[i]);
                Thread.sleep(2000);
            }
        } finally {
            BenchAgent.stop(agent);
        }
        String line = String.format(Locale.ROOT, "JVM start to named Java frames (agent running, --interval 1s, polled every 20 ms):"
                + " %s s, median %.2f s (interval end: median %.2f s); to the \"jit tables\" log line: %s s, median %.2f s",
                join(named), median(named), median(intervalEnd), join(tables), median(tables));
        System.out.println(line);
        summary.add(line);
    }

    // ---------------------------------------------------------------------------------------------- stacks

    /**
     * What a profile's samples of the target look like: per sample (weighted by count), the median user frames and
     * named Java frames, and the share that reach the thread's root. For a JVM only its Java main thread counts
     * (comm "java", not the launcher's thread, whose tid is the pid); {@code pid} -1: every pid given.
     */
    record StackShape(long samples, int medianUser, int medianJava, double rootShare, double javaLeafShare, String worst) {
        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%d samples, median %d user frames, %d named Java; %.1f %% reach the root,"
                    + " %.1f %% Java leaf%s", samples, medianUser, medianJava, rootShare, javaLeafShare,
                    worst.isEmpty() ? "" : " (the others end: " + worst + ")");
        }
    }

    private static StackShape shape(List<Profiles.Stack> stacks, long pid, boolean isJava) {
        List<long[]> userCounts = new ArrayList<>(); // {frames, count}
        List<long[]> javaCounts = new ArrayList<>();
        long total = 0;
        long root = 0;
        long javaLeaf = 0;
        Map<String, Long> others = new TreeMap<>();
        for (Profiles.Stack s : stacks) {
            if (pid >= 0 && s.pid() != pid) {
                continue;
            }
            if (isJava && (s.labels().getOrDefault("tid", "").equals(Long.toString(s.pid()))
                    || !s.labels().getOrDefault("thread_comm", "").equals("java"))) {
                continue;
            }
            List<String> user = s.user();
            if (user.isEmpty()) {
                continue;
            }
            long javaFrames = user.stream().filter(f -> f.startsWith(JAVA_CLASS + ".")).count();
            total += s.count();
            userCounts.add(new long[] {user.size(), s.count()});
            javaCounts.add(new long[] {javaFrames, s.count()});
            String last = user.get(user.size() - 1);
            boolean reaches = isJava ? Set.of("clone3", "__clone3", "start_thread", "clone").contains(last)
                    : last.equals("_start") || user.contains("__libc_start_main");
            if (reaches) {
                root += s.count();
            } else {
                others.merge(String.join(" <- ", user.subList(Math.max(0, user.size() - 4), user.size())), s.count(), Long::sum);
            }
            if (user.get(0).equals(JAVA_CLASS + ".leaf")) {
                javaLeaf += s.count();
            }
        }
        String worst = others.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(3)
                .map(e -> e.getValue() + "x ..." + e.getKey()).collect(Collectors.joining("; "));
        return new StackShape(total, weightedMedian(userCounts), weightedMedian(javaCounts),
                total == 0 ? 0 : 100.0 * root / total, total == 0 ? 0 : 100.0 * javaLeaf / total, worst);
    }

    /** Java stacks must be whole: main -> rec x depth -> leaf named, from the leaf to the thread's root. */
    private static void checkJava(StackShape s, int depth, String where) {
        if (s.samples() < 50 || s.medianJava() < depth + 2 || s.rootShare() < 90 || s.javaLeafShare() < 90) {
            problems.add(where + ": Java stacks not whole (expected " + (depth + 2) + " named Java frames, leaf "
                    + JAVA_CLASS + ".leaf, reaching the thread's root): " + s + "; most common other bottoms: " + s.worst());
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

    private static Path javaBin() {
        Path p = JDK25.resolve("java");
        return Files.isExecutable(p) ? p : Path.of(System.getProperty("java.home"), "bin", "java");
    }

    /** {@code static long NAME(...) { if (x == Long.MIN_VALUE) { ~420 bytes never run } BODY }}: too large to inline. */
    private static String method(String signature, String body) {
        StringBuilder b = new StringBuilder("    static long ").append(signature).append(" {\n")
                .append("        if (x == Long.MIN_VALUE) {\n");
        for (int i = 0; i < 30; i++) {
            b.append("            sink += x * ").append(31 + i).append(" + ").append(i).append(";\n");
        }
        return b.append("        }\n").append(body).append("    }\n").toString();
    }

    /**
     * {@code java Deep DEPTH [alloc]}: main -> rec(DEPTH) -> ... -> rec(1) -> leaf, every method over FreqInlineSize
     * (C2 keeps each a physical frame); prints "warm" after 200,000 calls of the chain (rec and leaf C2-compiled,
     * main's loop OSR-compiled by C2: after 60,000 calls main's C2 OSR code was not always there yet, so a first round
     * sampled it unnamed and outside the table the agent built at its start); "alloc": leaf also allocates 512 bytes per call (the GC has work).
     */
    static String program() {
        return "public class " + JAVA_CLASS + " {\n    static volatile long sink;\n    static volatile Object keep;\n"
                + "    static boolean alloc;\n"
                + method("leaf(long x)", """
                                long s = x;
                                for (int i = 0; i < 5_000; i++) {
                                    s = (s * 31 + i) % 1000003;
                                }
                                if (alloc) {
                                    keep = new long[64];
                                }
                                return s;
                        """)
                + method("rec(int n, long x)", """
                                if (n <= 1) {
                                    return leaf(x);
                                }
                                return rec(n - 1, x) + 1;
                        """)
                + """
                    public static void main(String[] args) {
                        int depth = Integer.parseInt(args[0]);
                        alloc = args.length > 1 && args[1].equals("alloc");
                        long t = 0;
                        for (long round = 0; ; round++) {
                            t += rec(depth, round);
                            if (round == 200_000) {
                                System.out.println("warm " + t);
                            }
                        }
                    }
                }
                """;
    }

    private static Path compileJava(Path java, Path tmp) throws Exception {
        Path dir = tmp.resolve("java");
        Files.createDirectories(dir);
        Files.writeString(dir.resolve(JAVA_CLASS + ".java"), program());
        BenchAgent.exec(List.of(java.resolveSibling("javac").toString(), "-d", dir.toString(),
                dir.resolve(JAVA_CLASS + ".java").toString()));
        return dir;
    }

    /** deeprec.c with its recursion depth set to {@code depth}, -O2 -fomit-frame-pointer: walked with eh_frame tables. */
    private static Path buildNative(Path tmp, int depth) throws Exception {
        String src = Files.readString(Path.of(System.getProperty("loupe.c.sources")).resolve("deeprec.c"));
        if (!src.contains("#define DEPTH 60")) {
            throw new IllegalStateException("deeprec.c no longer has '#define DEPTH 60': update RuntimesBench");
        }
        Path c = tmp.resolve("deeprec" + depth + ".c");
        Files.writeString(c, src.replace("#define DEPTH 60", "#define DEPTH " + depth));
        Path bin = tmp.resolve("deeprec" + depth);
        BenchAgent.exec(List.of("gcc", "-O2", "-fomit-frame-pointer", c.toString(), "-o", bin.toString()));
        return bin;
    }

    private static Process startJvm(Path java, Path classes, int depth, boolean alloc) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(java.toString(), "-cp", classes.toString(), JAVA_CLASS, Integer.toString(depth)));
        if (alloc) {
            cmd.add("alloc");
        }
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    /** Waits for every JVM's "warm" line (C2 has compiled the chain). */
    private static void awaitWarm(List<Process> jvms, int timeoutSeconds) throws Exception {
        List<CompletableFuture<String>> lines = new ArrayList<>();
        for (Process p : jvms) {
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
            if (line == null || !line.startsWith("warm ")) {
                throw new IllegalStateException("a Java target's first line: " + line);
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
