package dev.loupe.it;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 17's Java test: a JVM started with default flags (or {@code -Xint}), no perf map and no attach
 * ({@code --jvm-symbols off}): the agent reads the JVM's code cache from outside (HotSpot's exported VMStructs),
 * walks compiled frames by their frame sizes and interpreter frames by their frame layout, and names both from the
 * JVM's own {@code Method*}s. The target's main thread runs {@code main → a → b → c → leaf70 | leaf30}, the leaves
 * called 7 : 3 with equal work. Each method is too large for C2 to inline (its bytecode is over
 * {@code FreqInlineSize}, 325 bytes, by a branch never taken), so each is a physical frame: the test checks the
 * walk; {@link #inlinedMethodsAreFramesOfTheirOwn} tests inlining. The agent starts after a JIT warm-up of 100,000 calls of
 * each (C2 compiles past ~15,000, and main's loop is OSR-compiled by C2 past ~40,000 back-edges), as the issue's test
 * says; code compiled while the agent runs is described after the next code cache scan.
 */
class JavaStacksProfileTest {
    static final Map<String, Path> JDKS = Map.of("25", Path.of("/usr/lib/jvm/temurin-25-jdk-amd64/bin"),
            "17", Path.of("/usr/lib/jvm/java-17-openjdk-amd64/bin"),
            // Debian 11's, unpacked by ./loupe test (integration-tests/scripts/jdk11.sh): Debian 12 has no JDK 11
            "11", Path.of("/var/cache/loupe/jdk-11/usr/lib/jvm/java-11-openjdk-amd64/bin"),
            // Debian unstable's, in its own root file system (scripts/sid-jdks.sh), run chrooted by scripts/in-sid.sh:
            // their glibc is newer than Debian 12's. The JVM's root is then not the agent's, as in a container.
            "21", Path.of("/usr/lib/jvm/java-21-openjdk-amd64/bin"),
            "8", Path.of("/usr/lib/jvm/java-8-openjdk-amd64/bin"));
    static final Path SID = Path.of("/var/cache/loupe/sid-jdks");
    static final Path IN_SID = Path.of("scripts/in-sid.sh").toAbsolutePath();

    /** JDK 8 and 21 run chrooted into {@link #SID}. */
    static boolean chrooted(String jdk) {
        return jdk.equals("8") || jdk.equals("21");
    }

    /** {@code program args...} for JDK {@code jdk}'s {@code bin/program}, chrooted where {@link #chrooted}. */
    static List<String> command(String jdk, String program, List<String> args) {
        List<String> cmd = new ArrayList<>();
        if (chrooted(jdk)) {
            cmd.addAll(List.of(IN_SID.toString(), SID.toString()));
        }
        cmd.add(JDKS.get(jdk).resolve(program).toString());
        cmd.addAll(args);
        return cmd;
    }
    static final List<String> CHAIN = List.of("Chain.c", "Chain.b", "Chain.a", "Chain.main");

    /** {@code static long NAME(long x) { if (x == Long.MIN_VALUE) { ~420 bytes never run } BODY }}. */
    static String method(String name, String body) {
        StringBuilder b = new StringBuilder("    static long ").append(name).append("(long x) {\n")
                .append("        if (x == Long.MIN_VALUE) {\n");
        for (int i = 0; i < 30; i++) {
            b.append("            sink += x * ").append(31 + i).append(" + ").append(i).append(";\n");
        }
        return b.append("        }\n").append(body).append("    }\n").toString();
    }

    /** main calling a(round) forever; "warm" once the 100,000 calls of the JIT warm-up are done; the class's end. */
    static final String MAIN = """
                public static void main(String[] args) {
                    long t = 0;
                    for (long round = 0; ; round++) {
                        t += a(round);
                        if (round == 100_000) {
                            System.out.println("warm " + t);
                        }
                    }
                }
            }
            """;

    static String program() {
        String leaf = """
                        long s = x;
                        for (int i = 0; i < 20_000; i++) {
                            s = (s * 31 + i) % 1000003;
                        }
                        return s;
                """;
        return "public class Chain {\n    static volatile long sink;\n"
                + method("leaf70", leaf) + method("leaf30", leaf)
                + method("c", "        return (x % 10) < 7 ? leaf70(x) : leaf30(x);\n")
                + method("b", "        return c(x) + 1;\n")
                + method("a", "        return b(x) + 1;\n")
                + MAIN;
    }

    @TempDir
    Path dir;

    @ParameterizedTest(name = "JDK {0} {1}")
    @CsvSource({"25, default", "21, default", "17, default", "11, default", "8, default", "25, -Xint"})
    void javaStacksAreNamedFromLeafToTheThreadsRoot(String jdk, String mode) throws Exception {
        Profiled p = profile(jdk, mode.equals("default") ? List.of() : List.of(mode), "Chain", program());
        // Frames say what ran them: the mapping is the runtime and the kind of code.
        assertWholeStacks(p.out, p.pid, "JDK " + jdk + " " + mode, mode.equals("-Xint") ? "[interpreted] java" : "[jit] java", p.log);
    }

    /**
     * Compiles {@code source} as {@code MAIN.java} with JDK {@code jdk}, runs it with {@code jvmArgs} and profiles it
     * for 30 s after its warm-up. For 8 and 21 the classes go under the other root's /tmp.
     */
    Profiled profile(String jdk, List<String> jvmArgs, String mainClass, String source) throws Exception {
        Path seen = chrooted(jdk) ? Path.of("/tmp", "loupe-java-stacks-" + ProcessHandle.current().pid() + "-" + System.nanoTime()) : dir;
        Path classes = chrooted(jdk) ? Files.createDirectories(SID.resolve(seen.toString().substring(1))) : dir;
        Files.writeString(classes.resolve(mainClass + ".java"), source);
        Process javac = new ProcessBuilder(command(jdk, "javac", List.of("-d", seen.toString(),
                seen.resolve(mainClass + ".java").toString()))).redirectErrorStream(true).start();
        assertEquals(0, javac.waitFor(), new String(javac.getInputStream().readAllBytes()));
        List<String> args = new ArrayList<>(jvmArgs);
        args.addAll(List.of("-cp", seen.toString(), mainClass));
        Process jvm = new ProcessBuilder(command(jdk, "java", args)).directory(dir.toFile()).redirectErrorStream(true).start();
        Path out = dir.resolve("profiles");
        String log;
        try {
            awaitWarm(jvm);
            // A perf map of an earlier process that had this pid (other tests make JVMs write theirs) is not this
            // JVM's, which writes none: it goes, so that no name can come from it.
            Files.deleteIfExists(Path.of("/tmp/perf-" + jvm.pid() + ".map"));
            log = profileByCodeCache(dir, jvm, out, "30s");
        } finally {
            Targets.kill(jvm);
        }
        assertTrue(Files.notExists(Path.of("/tmp/perf-" + jvm.pid() + ".map")), "no perf map: names come from the JVM's memory");
        return new Profiled(out, jvm.pid(), log);
    }

    record Profiled(Path out, long pid, String log) {}

    /**
     * Methods C2 inlined are frames of their own, as the JVM's debug information records them: {@code main → a →
     * inner → mid → leaf}, where {@code inner} and {@code mid} are compiled into {@code a} (small and hot, and
     * told so by CompileCommand, as the target's ground truth) and {@code leaf} and {@code a} never are. The frame
     * {@code a}'s code stands for at its call to {@code leaf} is one pprof location with three lines,
     * {@code mid, inner, a}; the test wants at least 95 % of the main thread's samples to show them so.
     */
    @ParameterizedTest(name = "JDK {0}")
    @CsvSource({"25", "21", "17", "11", "8"})
    void inlinedMethodsAreFramesOfTheirOwn(String jdk) throws Exception {
        String leaf = """
                        long s = x;
                        for (int i = 0; i < 20_000; i++) {
                            s = (s * 31 + i) % 1000003;
                        }
                        return s;
                """;
        String source = "public class Inlining {\n    static volatile long sink;\n"
                + method("leaf", leaf)
                + "    static long mid(long x) {\n        return leaf(x) + 1;\n    }\n"
                + "    static long inner(long x) {\n        return mid(x) ^ 3;\n    }\n"
                + method("a", "        return inner(x) + 1;\n")
                + MAIN;
        Profiled p = profile(jdk, List.of("-XX:CompileCommand=quiet", "-XX:CompileCommand=inline,Inlining::mid",
                "-XX:CompileCommand=inline,Inlining::inner", "-XX:CompileCommand=dontinline,Inlining::leaf",
                "-XX:CompileCommand=dontinline,Inlining::a"), "Inlining", source);
        List<String> chain = List.of("Inlining.leaf", "Inlining.mid", "Inlining.inner", "Inlining.a", "Inlining.main");
        List<Boolean> inlined = List.of(false, true, true, false, false);
        long main = 0;
        long whole = 0;
        Map<String, Long> others = new TreeMap<>();
        for (Profiles.Stack s : Profiles.stacksOfDir(p.out)) {
            if (s.pid() != p.pid || s.labels().get("tid").equals(Long.toString(p.pid))
                    || !s.labels().get("thread_comm").equals("java")) {
                continue;
            }
            main += s.count();
            List<String> user = s.user();
            List<Boolean> userInlined = new ArrayList<>();
            for (int i = 0; i < s.functions().size(); i++) {
                if (!s.files().get(i).equals("[kernel.kallsyms]")) {
                    userInlined.add(s.inlined().get(i));
                }
            }
            boolean ok = user.size() > chain.size() && user.subList(0, chain.size()).equals(chain)
                    && userInlined.subList(0, chain.size()).equals(inlined)
                    && userFiles(s).subList(0, chain.size()).stream().allMatch("[jit] java"::equals) && reachesRoot(user);
            if (ok) {
                whole += s.count();
            } else {
                others.merge(String.join(" <- ", user.subList(0, Math.min(user.size(), 8))) + " (inlined "
                        + userInlined.subList(0, Math.min(user.size(), 8)) + ")", s.count(), Long::sum);
            }
        }
        double share = main == 0 ? 0 : 100.0 * whole / main;
        System.out.printf(Locale.ROOT, "JDK %s inlining: %d samples of the main thread, %.1f %% show leaf <- mid (inlined) "
                + "<- inner (inlined) <- a <- main and reach the thread's root%n", jdk, main, share);
        StringBuilder worst = new StringBuilder();
        others.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(8)
                .forEach(e -> worst.append("  ").append(e.getValue()).append("  ").append(e.getKey()).append('\n'));
        assertTrue(main > 400, "main-thread samples: " + main + "\n" + p.log);
        assertTrue(share >= 95, String.format(Locale.ROOT, "%.1f %% whole stacks with their inlined frames; the others:%n%s%s",
                share, worst, p.log));
    }

    /**
     * Issue 28: Java frames carry the lines of their statements. The target runs {@code main → a → inner → mid → leaf}
     * with {@code inner} and {@code mid} inlined into {@code a} (as {@link #inlinedMethodsAreFramesOfTheirOwn}) and
     * {@code leaf}'s hot loop on one line; the test counts the lines in the source it compiles. At least 95 % of the
     * main thread's samples that show that chain in compiled code ({@code -Xint}: interpreted code, each frame's line
     * from its bcp) have {@code leaf} at the loop's line and each caller at its call's line, all in {@code Lines.java},
     * and each function's {@code start_line} at its first statement; the real {@code go tool pprof -top -lines} shows
     * the loop's line.
     */
    @ParameterizedTest(name = "JDK {0} {1}")
    // Interpreted: JDK 8's frame layout (no mirror slot), 17's and 25's (each run is ~35 s of the suite; 11 and 21 passed
    // too when this was added).
    @CsvSource({"25, compiled", "21, compiled", "17, compiled", "11, compiled", "8, compiled", "25, -Xint", "17, -Xint",
            "8, -Xint"})
    void javaFramesCarryTheLinesOfTheirStatements(String jdk, String mode) throws Exception {
        boolean interpreted = mode.equals("-Xint");
        String leaf = """
                        long s = x;
                        for (int i = 0; i < 20_000; i++) { s = (s * 31 + i) % 1000003; }
                        return s;
                """;
        String source = "public class Lines {\n    static volatile long sink;\n"
                + method("leaf", leaf)
                + "    static long mid(long x) {\n        return leaf(x) + 1;\n    }\n"
                + "    static long inner(long x) {\n        return mid(x) ^ 3;\n    }\n"
                + method("a", "        return inner(x) + 1;\n")
                // the interpreter's warm-up: 100 calls, not the JIT's 100,000
                + (interpreted ? MAIN.replace("round == 100_000", "round == 100") : MAIN);
        List<String> text = source.lines().toList();
        List<Integer> expected = List.of(lineOf(text, "for (int i = 0; i < 20_000; i++) {"), lineOf(text, "return leaf(x) + 1;"),
                lineOf(text, "return mid(x) ^ 3;"), lineOf(text, "return inner(x) + 1;"), lineOf(text, "t += a(round);"));
        // Each method's first statement: leaf's and a's the never-taken if, mid's and inner's their one return
        List<Long> starts = List.of((long) lineOf(text, "static long leaf(long x) {") + 1, (long) expected.get(1),
                (long) expected.get(2), (long) lineOf(text, "static long a(long x) {") + 1, (long) lineOf(text, "long t = 0;"));
        String codeMapping = interpreted ? "[interpreted] java" : "[jit] java";
        List<String> flags = new ArrayList<>(List.of("-XX:CompileCommand=quiet", "-XX:CompileCommand=inline,Lines::mid",
                "-XX:CompileCommand=inline,Lines::inner", "-XX:CompileCommand=dontinline,Lines::leaf",
                "-XX:CompileCommand=dontinline,Lines::a"));
        if (interpreted) {
            flags.add("-Xint");
        } else if (jdk.equals("8")) {
            // JDK 8's C2 puts no safepoint poll in a counted loop, so the hot loop's pcs have no debug record of their
            // own and the next one after them is not the loop's: without this flag every leaf sample showed the
            // never-taken if's line (its uncommon trap, presumably laid out after the loop). DebugNonSafepoints
            // records a scope at more pcs, as async-profiler advises for the same reason.
            flags.addAll(List.of("-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints"));
        }
        Profiled p = profile(jdk, flags, "Lines", source);
        List<String> chain = List.of("Lines.leaf", "Lines.mid", "Lines.inner", "Lines.a", "Lines.main");
        long compiled = 0;
        long exact = 0;
        Map<String, Long> others = new TreeMap<>();
        Profiles.stacksOfDir(p.out); // go tool pprof -raw and Parca's rules accept every file
        for (Path file : Profiles.files(p.out)) {
            var profile = Profiles.read(file);
            for (var s : profile.getSampleList()) {
                List<String> fns = new ArrayList<>();
                List<String> files = new ArrayList<>();
                List<Long> lines = new ArrayList<>();
                List<Long> startLines = new ArrayList<>();
                boolean jit = true;
                boolean pidOk = false;
                for (var lb : s.getLabelList()) {
                    String key = profile.getStringTable((int) lb.getKey());
                    pidOk |= key.equals("pid") && (lb.getNum() == p.pid || profile.getStringTable((int) lb.getStr()).equals(Long.toString(p.pid)));
                }
                for (long id : s.getLocationIdList()) {
                    var loc = profile.getLocation((int) id - 1);
                    String mapping = loc.getMappingId() == 0 ? "" : profile.getStringTable((int) profile.getMapping((int) loc.getMappingId() - 1).getFilename());
                    if (mapping.equals("[kernel.kallsyms]")) {
                        continue;
                    }
                    for (var l : loc.getLineList()) {
                        var fn = profile.getFunction((int) l.getFunctionId() - 1);
                        fns.add(profile.getStringTable((int) fn.getName()));
                        files.add(profile.getStringTable((int) fn.getFilename()));
                        lines.add(l.getLine());
                        startLines.add(fn.getStartLine());
                        if (fns.size() <= chain.size()) {
                            jit &= mapping.equals(codeMapping);
                        }
                    }
                }
                if (!pidOk || fns.size() < chain.size() || !fns.subList(0, chain.size()).equals(chain) || !jit) {
                    continue;
                }
                long n = s.getValue(0);
                compiled += n;
                List<Long> want = expected.stream().map(Integer::longValue).toList();
                if (lines.subList(0, chain.size()).equals(want) && files.subList(0, chain.size()).stream().allMatch("Lines.java"::equals)
                        && startLines.subList(0, chain.size()).equals(starts)) {
                    exact += n;
                } else {
                    others.merge(files.subList(0, chain.size()) + " " + lines.subList(0, chain.size()) + " starting "
                            + startLines.subList(0, chain.size()), n, Long::sum);
                }
            }
        }
        double share = compiled == 0 ? 0 : 100.0 * exact / compiled;
        System.out.printf(Locale.ROOT, "JDK %s lines: %d samples of leaf <- mid <- inner <- a <- main in %s, %.1f %% at "
                + "lines %s of Lines.java starting at %s; others %s%n", jdk, compiled, codeMapping, share, expected, starts, others);
        assertTrue(compiled > 400, "samples of the chain in " + codeMapping + ": " + compiled + "\n" + p.log);
        assertTrue(share >= 95, String.format(Locale.ROOT, "%.1f %% at lines %s starting at %s; the others: %s%n%s", share,
                expected, starts, others, p.log));
        Path first = Profiles.files(p.out).getFirst();
        String top = PprofTool.run("-top", "-lines", "-nodecount=3", "-focus=^Lines\\.leaf$", first.toString());
        assertTrue(top.contains("Lines.leaf Lines.java:" + expected.getFirst()), top);
    }

    /**
     * Issue 27: HotSpot's generated stubs carry their own names. The target's hot method copies a long[] with
     * {@code System.arraycopy}, which C2 compiles to a call of the arraycopy stub in a StubRoutines blob; at least
     * 70 % of the main thread's samples have that stub as their leaf, named "[StubRoutines::...arraycopy...]" (its
     * StubCodeDesc, not its blob's "[StubRoutines (…)]"), and at least 80 % are walked on to {@code Copy.copy},
     * {@code Copy.main} and the thread's root: the stub begins with {@code enter()}, so the code cache's table steps
     * it by RBP (the checked frame-pointer step alone refused the RBP it saved: C2 code keeps no frame pointer).
     */
    @ParameterizedTest(name = "JDK {0}")
    // Two JDKs (each run is ~35 s of the suite): 25, and 17 with the AVX-512 variants (21 and 11 passed too when added).
    @CsvSource({"25", "17"})
    void generatedStubsAreNamedByTheirOwnNames(String jdk) throws Exception {
        String source = """
                public class Copy {
                    static final long[] SRC = new long[4096];
                    static final long[] DST = new long[4096];
                    static long copy(long x) {
                        System.arraycopy(SRC, 0, DST, 0, SRC.length);
                        return DST[(int) (x & 4095)];
                    }
                    public static void main(String[] args) {
                        long t = 0;
                        for (long round = 0; ; round++) {
                            t += copy(round);
                            if (round == 100_000) {
                                System.out.println("warm " + t);
                            }
                        }
                    }
                }
                """;
        Profiled p = profile(jdk, List.of("-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Copy::copy"), "Copy", source);
        assertStubWalkedPast(p, jdk, "\\[StubRoutines::\\w*arraycopy\\w*\\]", List.of("Copy.copy", "Copy.main"));
    }

    /**
     * Issue 27: a stub that moves a register before its {@code enter()} is walked past too. JDK 21's and 25's fill stubs begin
     * with {@code mov r11, rdx} (JDK 17's with {@code enter()}); C2 turns the hot method's {@code Arrays.fill} loop into
     * a call of {@code StubRoutines::jint_fill} (OptimizeFill, on by default in JDK 25). At least 70 % of the main
     * thread's samples have that stub, so named, as their leaf, and at least 80 % are walked on to {@code Fill.fill},
     * {@code Fill.main} and the thread's root (before, the stub's bytes had no unwind info and the walk ended in it).
     */
    @ParameterizedTest(name = "JDK {0}")
    @CsvSource({"25"})
    void fillStubsAreWalkedPast(String jdk) throws Exception {
        String source = """
                public class Fill {
                    static final int[] A = new int[16384];
                    static long fill(long x) {
                        java.util.Arrays.fill(A, (int) x);
                        return A[(int) (x & 16383)];
                    }
                    public static void main(String[] args) {
                        long t = 0;
                        for (long round = 0; ; round++) {
                            t += fill(round);
                            if (round == 100_000) {
                                System.out.println("warm " + t);
                            }
                        }
                    }
                }
                """;
        Profiled p = profile(jdk, List.of("-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Fill::fill"), "Fill", source);
        assertStubWalkedPast(p, jdk, "\\[StubRoutines::(arrayof_)?jint_fill\\]", List.of("Fill.fill", "Fill.main"));
    }

    /**
     * Of the main thread's samples of {@code p}, at least 70 % have a stub named as {@code stub} (a regex) as their leaf
     * and at least 80 % are that stub, then {@code callers} and the thread's root.
     */
    static void assertStubWalkedPast(Profiled p, String jdk, String stub, List<String> callers) throws Exception {
        long main = 0;
        long named = 0;
        long walked = 0;
        Map<String, Long> leaves = new TreeMap<>();
        Map<String, Long> others = new TreeMap<>();
        for (Profiles.Stack s : Profiles.stacksOfDir(p.out)) {
            if (s.pid() != p.pid || s.labels().get("tid").equals(Long.toString(p.pid)) || !s.labels().get("thread_comm").equals("java")) {
                continue;
            }
            main += s.count();
            List<String> user = s.user();
            leaves.merge(user.getFirst(), s.count(), Long::sum);
            boolean inStub = user.getFirst().matches(stub);
            if (inStub) {
                named += s.count();
            }
            if (inStub && user.size() > callers.size() && user.subList(1, callers.size() + 1).equals(callers) && reachesRoot(user)) {
                walked += s.count();
            } else {
                others.merge((s.labels().containsKey("unwind") ? "[unwind=" + s.labels().get("unwind") + "] " : "")
                        + String.join(" <- ", user.subList(0, Math.min(user.size(), 10))), s.count(), Long::sum);
            }
        }
        StringBuilder worst = new StringBuilder();
        others.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(6)
                .forEach(e -> worst.append("  ").append(e.getValue()).append("  ").append(e.getKey()).append('\n'));
        double share = main == 0 ? 0 : 100.0 * named / main;
        System.out.printf(Locale.ROOT, "JDK %s stubs: %d samples of the main thread, %.1f %% in a stub named %s, %.1f %% "
                + "walked on to %s and the root; leaves %s; the others:%n%s", jdk, main, share, stub,
                main == 0 ? 0 : 100.0 * walked / main, String.join(" <- ", callers), leaves, worst);
        assertTrue(main > 400, "main-thread samples: " + main + "\n" + p.log);
        assertTrue(share >= 70, String.format(Locale.ROOT, "%.1f %%; leaves %s%n%s", share, leaves, p.log));
        assertTrue(walked >= 0.8 * main, String.format(Locale.ROOT, "walked past the stub: %d of %d%n%s", walked, main, worst));
    }

    /** The 1-based line of the one line of {@code text} that holds {@code what}. */
    static int lineOf(List<String> text, String what) {
        List<Integer> at = new ArrayList<>();
        for (int i = 0; i < text.size(); i++) {
            if (text.get(i).contains(what)) {
                at.add(i + 1);
            }
        }
        assertEquals(1, at.size(), "'" + what + "' is on one line: " + at);
        return at.getFirst();
    }

    /**
     * The agent as the packaged service runs it: not root, with only the unit's six ambient capabilities
     * (systemd/loupe.service), and the JVM another user's (nobody). Reading the JVM's memory needs ptrace-read
     * access, which CAP_SYS_PTRACE gives for any uid: no attach, no helper, no further capability.
     */
    @org.junit.jupiter.api.Test
    void asTheLeastPrivilegedServiceRunsItForAnotherUsersJvm() throws Exception {
        Path bin = JDKS.get("25");
        Files.writeString(dir.resolve("Chain.java"), program());
        Process javac = new ProcessBuilder(bin.resolve("javac").toString(), "Chain.java").directory(dir.toFile())
                .redirectErrorStream(true).start();
        assertEquals(0, javac.waitFor(), new String(javac.getInputStream().readAllBytes()));
        // World-readable copies of the jar, its lib/ and JVM options, and directories the agent's user may write.
        Path jar = AgentProcess.copyJarTo(dir);
        Path jvmopts = Files.copy(AgentProcess.RUN_JVMOPTS, dir.resolve("run.jvmopts"));
        Path out = Files.createDirectory(dir.resolve("profiles"));
        Path state = Files.createDirectory(dir.resolve("state"));
        Commands.run(List.of("chmod", "-R", "a+rX", dir.toString()), 30).check();
        Commands.run(List.of("chown", SERVICE_UID + ":" + SERVICE_UID, out.toString(), state.toString()), 30).check();

        Process jvm = new ProcessBuilder("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                bin.resolve("java").toString(), "-cp", dir.toString(), "Chain").directory(dir.toFile())
                .redirectErrorStream(true).start();
        String log;
        try {
            awaitWarm(jvm);
            Files.deleteIfExists(Path.of("/tmp/perf-" + jvm.pid() + ".map")); // an earlier process's, as above
            String caps = "+bpf,+perfmon,+sys_ptrace,+dac_read_search,+syslog,+checkpoint_restore";
            List<String> cmd = new ArrayList<>(List.of("setpriv", "--reuid=" + SERVICE_UID, "--regid=" + SERVICE_UID,
                    "--clear-groups", "--inh-caps=-all," + caps, "--ambient-caps=-all," + caps, "--bounding-set=-all," + caps,
                    AgentProcess.JAVA, "@" + jvmopts, "-jar", jar.toString(), "run", "--pid", Long.toString(jvm.pid()),
                    "--frequency", "99", "--duration", "30s", "--output", out.toString(), "--http", "off",
                    "--state-dir", state.toString(), "--jvm-symbols", "off", "--jvm-code-cache", "on"));
            Commands.Result r = Commands.run(cmd, 120);
            log = r.output();
            assertEquals(0, r.exit(), log);
            assertTrue(jvm.isAlive(), "the agent never harms its target");
        } finally {
            Targets.kill(jvm);
        }
        assertTrue(log.contains("jit tables: pid " + jvm.pid() + " (25"), log);
        assertWholeStacks(out, jvm.pid(), "JDK 25 default, JVM of nobody, agent as uid " + SERVICE_UID
                + " with the unit's capabilities", "[jit] java", log);
    }

    /** Not root and not nobody: the service's own user stands for it. */
    static final int SERVICE_UID = 64_999;

    static void awaitWarm(Process jvm) throws Exception {
        CompletableFuture<String> warm = CompletableFuture.supplyAsync(() -> {
            try {
                return new BufferedReader(new InputStreamReader(jvm.getInputStream())).readLine();
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        String line = warm.get(120, TimeUnit.SECONDS);
        assertTrue(line != null && line.startsWith("warm "), "the JVM's first line: " + line);
    }

    /**
     * At least 95 % of the JVM's main-thread samples name leaf70 or leaf30, then c, b, a, main, and end at the
     * thread's root, their five Java frames all in {@code javaFile} (the mapping names the runtime and the kind of
     * code); the leaves split 70 : 30 within 5 points.
     */
    static void assertWholeStacks(Path out, long jvmPid, String what, String javaFile, String log) throws Exception {
        long main = 0;
        long whole = 0;
        long leaf70 = 0;
        long leaf30 = 0;
        Map<String, Long> others = new TreeMap<>();
        for (Profiles.Stack s : Profiles.stacksOfDir(out)) {
            if (s.pid() != jvmPid || s.labels().get("tid").equals(Long.toString(jvmPid))
                    || !s.labels().get("thread_comm").equals("java")) {
                continue; // the launcher's own thread waits; GC and compiler threads have names of their own
            }
            main += s.count();
            List<String> user = s.user();
            int leaf = user.indexOf("Chain.leaf70") >= 0 ? user.indexOf("Chain.leaf70") : user.indexOf("Chain.leaf30");
            List<String> files = userFiles(s);
            boolean ok = leaf >= 0 && user.size() > leaf + CHAIN.size()
                    && user.subList(leaf + 1, leaf + 1 + CHAIN.size()).equals(CHAIN)
                    && files.subList(leaf, leaf + 1 + CHAIN.size()).stream().allMatch(javaFile::equals)
                    && reachesRoot(user);
            if (ok) {
                whole += s.count();
                if (user.get(leaf).equals("Chain.leaf70")) {
                    leaf70 += s.count();
                } else {
                    leaf30 += s.count();
                }
            } else {
                others.merge((s.labels().containsKey("unwind") ? "[unwind=" + s.labels().get("unwind") + "] " : "")
                        + String.join(" <- ", user.subList(0, Math.min(user.size(), 12))) + "  (files "
                        + String.join(", ", userFiles(s).subList(0, Math.min(user.size(), 6))) + ")", s.count(), Long::sum);
            }
        }
        double share = main == 0 ? 0 : 100.0 * whole / main;
        double split = whole == 0 ? 0 : 100.0 * leaf70 / whole;
        System.out.printf(Locale.ROOT, "%s%s: %d samples of the main thread, %.1f %% name leaf <- c <- b <- a <- main "
                + "and reach the thread's root; leaf70 %.1f %% of those (leaf30 %d)%n", what, "", main, share, split, leaf30);
        StringBuilder worst = new StringBuilder();
        others.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(8)
                .forEach(e -> worst.append("  ").append(e.getValue()).append("  ").append(e.getKey()).append('\n'));
        assertTrue(main > 400, "main-thread samples: " + main + "\n" + log);
        assertTrue(share >= 95, String.format(Locale.ROOT, "%.1f %% whole stacks; the others:%n%s%s", share, worst, log));
        assertEquals(70, split, 5, "the leaves' split");
    }

    /** The mapping file of each user frame, as {@link Profiles.Stack#user} lists them. */
    static List<String> userFiles(Profiles.Stack s) {
        List<String> files = new ArrayList<>();
        for (int i = 0; i < s.functions().size(); i++) {
            if (!s.files().get(i).equals("[kernel.kallsyms]")) {
                files.add(s.files().get(i));
            }
        }
        return files;
    }

    /** The walk ended at the thread's start (the JVM's threads start in glibc's clone3 / start_thread), not at a stop. */
    static boolean reachesRoot(List<String> user) {
        String last = user.get(user.size() - 1);
        return last.equals("clone3") || last.equals("__clone3") || last.equals("start_thread") || last.equals("clone");
    }

    /**
     * Profiles {@code jvm} alone at 99 Hz for {@code duration}, its Java names from its memory only (no attach); the
     * agent's log. The agent never harms its target.
     */
    static String profileByCodeCache(Path dir, Process jvm, Path out, String duration) throws Exception {
        String log;
        try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(jvm.pid()), "--frequency", "99",
                "--duration", duration, "--output", out.toString(), "--http", "off", "--jvm-symbols", "off",
                "--jvm-code-cache", "on")) {
            // a deadline, not a wait: on a machine loaded by other builds (load 25 on 2 cores) the agent took over 60 s
            assertEquals(0, agent.awaitExit(Duration.ofSeconds(150)), agent.log());
            log = agent.log();
        }
        assertTrue(jvm.isAlive(), "the agent never harms its target");
        return log;
    }
}
