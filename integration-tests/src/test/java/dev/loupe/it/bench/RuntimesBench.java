package dev.loupe.it.bench;

import dev.loupe.it.Profiles;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

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
public final class RuntimesBench extends RuntimeVersusNative {
    static final Path JDK25 = Path.of("/usr/lib/jvm/temurin-25-jdk-amd64/bin");
    static final String JAVA_CLASS = "Deep";

    private Path java;
    private Path classes;

    private RuntimesBench() {
        super(new Names("runtimes", 17, "--jvms", "Java",
                "== 1. BPF cost per sample: Java stack (code cache tables) vs native stack (eh_frame tables)",
                "== 2. agent CPU and RSS: %d busy JVMs vs %d busy native processes",
                "== 3. time from a JVM's start to named Java frames in the agent's profile",
                "Java, code cache tables", 26, "JVMs", "java", "JVMs", "JVM", "the root", "Java leaf"),
                // rounds, seconds, depth, jvms, cpu-seconds, warmup, starts
                new Options(allParts(), 3, 8, 40, 10, 60, 15, 3));
    }

    public static void main(String[] args) throws Exception {
        new RuntimesBench().run(args);
    }

    @Override
    void setUp(Path tmp, int depth) throws Exception {
        java = javaBin();
        classes = compileJava(java, tmp);
    }

    @Override
    String header(int depth) {
        return String.format(Locale.ROOT, "JVM %s; Java target: main -> rec x %d -> leaf (each over FreqInlineSize); "
                + "native: deeprec.c, recurse x %d, -O2 -fomit-frame-pointer", java, depth, depth);
    }

    // ---------------------------------------------------------------------------------------------- 1. BPF cost

    @Override
    Process startCostTarget(int depth) throws IOException {
        return startJvm(java, classes, depth, false);
    }

    @Override
    void awaitCostTarget(Process target) throws Exception {
        awaitWarm(List.of(target), 180);
    }

    @Override
    boolean stopsCostAgent() {
        return false;
    }

    @Override
    void checkCostLog(Process target, Path log) throws IOException {
        if (!Files.readString(log).contains("jit tables: pid " + target.pid() + " (")) {
            problem("the agent built no JIT table for the Java target " + target.pid() + " (" + log + ")");
        }
    }

    // ---------------------------------------------------------------------------------------------- 2. agent CPU

    @Override
    void startCpuTargets(int count, int depth, List<Process> into) throws Exception {
        for (int i = 0; i < count; i++) {
            into.add(startJvm(java, classes, depth, true));
        }
        long t0 = System.nanoTime();
        awaitWarm(into, 300);
        System.out.printf(Locale.ROOT, "%d JVMs warm after %.1f s%n", count, (System.nanoTime() - t0) / 1e9);
    }

    @Override
    List<String> cpuNativePrefix() {
        return List.of();
    }

    @Override
    String rssComparison(CpuResult runtime, CpuResult nat) {
        return String.format(Locale.ROOT, "RSS %.2fx", (double) runtime.rssKb() / nat.rssKb());
    }

    @Override
    void checkCpuLog(List<Process> targets, int hz, Path log) throws IOException {
        String text = Files.readString(log);
        long tables = targets.stream().filter(p -> text.contains("jit tables: pid " + p.pid() + " (")).count();
        if (tables != targets.size()) {
            problem(hz + " Hz: the agent built JIT tables for " + tables + " of " + targets.size() + " JVMs");
        }
    }

    // ---------------------------------------------------------------------------------------------- 3. start to names

    @Override
    Process startStartTarget(int depth) throws IOException {
        return startJvm(java, classes, depth, false);
    }

    @Override
    boolean namedLeaf(Profiles.Stack s, long pid) {
        List<String> user = s.user();
        return s.pid() == pid && !user.isEmpty() && user.get(0).startsWith(JAVA_CLASS + ".");
    }

    @Override
    String startLogLine(long pid) {
        return "jit tables: pid " + pid + " (";
    }

    @Override
    String startLogLineName() {
        return "\"jit tables\" line";
    }

    @Override
    int pauseBetweenStartsMs() {
        return 2000;
    }

    @Override
    String startLine(int i, double named, double intervalEnd, double logged) {
        return String.format(Locale.ROOT, "start %d: named Java leaf in a profile file %.2f s after the JVM's start (the"
                + " interval holding it ended at %.2f s); \"jit tables: pid N\" logged at %.2f s", i + 1, named,
                intervalEnd, logged);
    }

    @Override
    String startSummary(double[] named, double[] intervalEnd, double[] logged) {
        return String.format(Locale.ROOT, "JVM start to named Java frames (agent running, --interval 1s, polled every 20 ms):"
                + " %s s, median %.2f s (interval end: median %.2f s); to the \"jit tables\" log line: %s s, median %.2f s",
                join(named), median(named), median(intervalEnd), join(logged), median(logged));
    }

    // ---------------------------------------------------------------------------------------------- stacks

    /** For a JVM only its Java main thread counts (comm "java", not the launcher's thread, whose tid is the pid). */
    @Override
    boolean sampled(Profiles.Stack s, boolean runtime) {
        return !(runtime && (s.labels().getOrDefault("tid", "").equals(Long.toString(s.pid()))
                || !s.labels().getOrDefault("thread_comm", "").equals("java")));
    }

    @Override
    long namedFrames(Profiles.Stack s) {
        return s.user().stream().filter(f -> f.startsWith(JAVA_CLASS + ".")).count();
    }

    @Override
    boolean reachesRoot(List<String> user, boolean runtime) {
        String last = user.get(user.size() - 1);
        return runtime ? Set.of("clone3", "__clone3", "start_thread", "clone").contains(last)
                : last.equals("_start") || user.contains("__libc_start_main");
    }

    @Override
    boolean runtimeLeaf(Profiles.Stack s, boolean runtime) {
        return s.user().get(0).equals(JAVA_CLASS + ".leaf");
    }

    /** Java stacks must be whole: main -> rec x depth -> leaf named, from the leaf to the thread's root. */
    @Override
    String notWhole(StackShape s, int depth, String where) {
        if (s.samples() < 50 || s.medianNamed() < depth + 2 || s.rootShare() < 90 || s.leafShare() < 90) {
            return where + ": Java stacks not whole (expected " + (depth + 2) + " named Java frames, leaf "
                    + JAVA_CLASS + ".leaf, reaching the thread's root): " + s + "; most common other bottoms: " + s.worst();
        }
        return null;
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

    private static Process startJvm(Path java, Path classes, int depth, boolean alloc) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(java.toString(), "-cp", classes.toString(), JAVA_CLASS, Integer.toString(depth)));
        if (alloc) {
            cmd.add("alloc");
        }
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    /** Waits for every JVM's "warm" line (C2 has compiled the chain). */
    private static void awaitWarm(List<Process> jvms, int timeoutSeconds) throws Exception {
        awaitFirstLine(jvms, timeoutSeconds, line -> line.startsWith("warm "), "Java");
    }
}
