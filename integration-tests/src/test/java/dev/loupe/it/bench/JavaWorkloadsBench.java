package dev.loupe.it.bench;

import dev.loupe.it.Profiles;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * {@code ./loupe bench java} (issue 27): Java stacks of JVMs no one here wrote, short-lived and busy compiling, under one
 * agent with {@code loupe run}'s defaults at 99 Hz. The workloads, one after another:
 * <ul>
 *   <li>{@code maven17}, {@code maven25}: {@code mvn -o -q -pl unwinder clean compile} in a copy of this repository
 *       ({@code git archive HEAD}), {@code --runs} (3) times, Maven on JDK 17 and on JDK 25. The project targets Java
 *       25, so on JDK 17 the build ends in the compiler plugin's "release version 25 not supported" after Maven has
 *       started, resolved the project and loaded its plugins (about 5 s of CPU a run): what the issue measured;</li>
 *   <li>{@code javac25}, {@code javac17}: a loop of {@code javac -d DIR Hello.java}, one JVM after another, for
 *       {@code --seconds} (40) each.</li>
 * </ul>
 * For each, of the samples of the workload's own processes (by pid; the agent and the machine's other JVMs are left
 * out) it prints the share of <b>whole</b> stacks: every user frame named (no {@code <unknown>} address, no
 * {@code [unwind: ...]} frame, no frame named only by its mapping such as {@code [[jit] java]}) and reaching the
 * thread's root ({@code start_thread}, {@code JavaMain}, or the launcher's {@code __libc_start_main}/{@code _start});
 * of all samples, and of those taken after the process's tables were live (no {@code unwind=frame_pointers} label).
 * Then why the others are not whole (counted once each, in this order: an {@code [unwind: ...]} frame, an unnamed
 * frame, not reaching the root) with the most frequent frames next to the first unnamed one and the error frames,
 * which say what is missing. Options: {@code --workloads maven17,maven25,javac25,javac17}, {@code --runs N},
 * {@code --seconds S}, {@code --jar JAR} (the agent under test), {@code --agent-arg FLAG=VALUE} (repeatable),
 * {@code --keep} (keep the profiles' directory and print it).
 */
public final class JavaWorkloadsBench {
    private JavaWorkloadsBench() {}

    static final Path JDK17 = Path.of("/usr/lib/jvm/java-17-openjdk-amd64");
    static final Path JDK25 = Path.of("/usr/lib/jvm/temurin-25-jdk-amd64");
    static final Set<String> ROOTS = Set.of("start_thread", "JavaMain", "__libc_start_main", "_start");

    public static void main(String[] args) throws Exception {
        List<String> workloads = List.of("maven17", "maven25", "javac25", "javac17");
        int runs = 3;
        int seconds = 40;
        boolean keep = false;
        String jar = BenchAgent.jar();
        List<String> agentArgs = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--workloads" -> workloads = List.of(args[++i].split(","));
                case "--runs" -> runs = Integer.parseInt(args[++i]);
                case "--seconds" -> seconds = Integer.parseInt(args[++i]);
                case "--jar" -> jar = args[++i];
                case "--agent-arg" -> agentArgs.add(args[++i]);
                case "--keep" -> keep = true;
                default -> throw new IllegalArgumentException("unknown argument " + args[i] + " (--workloads maven17,maven25,"
                        + "javac25,javac17, --runs N, --seconds S, --jar JAR, --agent-arg FLAG=VALUE ..., --keep)");
            }
        }
        for (String w : workloads) {
            if (!Set.of("maven17", "maven25", "javac25", "javac17").contains(w)) {
                throw new IllegalArgumentException("unknown workload " + w + " (maven17, maven25, javac25, javac17)");
            }
        }
        Path tmp = Files.createTempDirectory("loupe-java-bench");
        Path repo = tmp.resolve("repo");
        Files.createDirectories(repo);
        String root = System.getProperty("loupe.repo", Path.of("").toAbsolutePath().toString());
        run(List.of("/bin/sh", "-c", "cd \"$(git -C '" + root + "' rev-parse --show-toplevel)\" && git archive HEAD | tar -x -C '"
                + repo + "'"), null, null);
        Path hello = tmp.resolve("Hello.java");
        Files.writeString(hello, "public class Hello {\n    public static void main(String[] a) {\n"
                + "        System.out.println(java.util.List.of(a).stream().map(String::length).toList());\n    }\n}\n");

        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path out = tmp.resolve("profiles");
        Path log = tmp.resolve("agent.log");
        List<String> runArgs = new ArrayList<>(List.of("--frequency", "99", "--interval", "10s", "--output", out.toString(),
                "--http", "127.0.0.1:" + port, "--state-dir", tmp.resolve("state").toString()));
        runArgs.addAll(agentArgs);
        System.out.printf("java workloads bench: agent %s at 99 Hz%s; workloads %s%n", jar,
                agentArgs.isEmpty() ? "" : " with " + agentArgs, workloads);
        Map<String, Set<Long>> pids = new LinkedHashMap<>();
        Map<String, String> notes = new LinkedHashMap<>();
        Process agent = BenchAgent.start(jar, log, runArgs);
        try {
            Thread.sleep(10_000); // the agent's start-up (tables of the running processes) out of the way
            for (String w : workloads) {
                Set<Long> p = new HashSet<>();
                long t0 = System.nanoTime();
                int failed = 0;
                int n = 0;
                if (w.startsWith("maven")) {
                    Path jdk = w.equals("maven17") ? JDK17 : JDK25;
                    for (int r = 0; r < runs; r++, n++) {
                        failed += run(List.of("mvn", "-o", "-q", "-pl", "unwinder", "clean", "compile"), repo, jdk, p) == 0 ? 0 : 1;
                    }
                } else {
                    Path jdk = w.equals("javac17") ? JDK17 : JDK25;
                    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
                    while (System.nanoTime() < end) {
                        failed += run(List.of(jdk.resolve("bin/javac").toString(), "-d", tmp.resolve("classes").toString(),
                                hello.toString()), tmp, jdk, p) == 0 ? 0 : 1;
                        n++;
                    }
                }
                pids.put(w, p);
                notes.put(w, String.format("%d JVMs in %.0f s, %d exited non-zero", n, (System.nanoTime() - t0) / 1e9, failed));
            }
            Thread.sleep(2_000);
        } finally {
            BenchAgent.stop(agent); // writes the last interval's profile
        }
        List<Profiles.Stack> stacks = Profiles.uncheckedStacksOfDir(out);
        for (String w : workloads) {
            report(w, notes.get(w), stacks, pids.get(w));
        }
        if (keep) {
            System.out.println("\nprofiles and the agent's log kept in " + tmp);
        } else {
            run(List.of("rm", "-rf", tmp.toString()), null, null);
        }
    }

    /** Runs a command to its end with JAVA_HOME {@code jdk} (if given), output discarded; its pid into {@code pids}. */
    private static int run(List<String> cmd, Path dir, Path jdk, Set<Long> pids) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD);
        if (dir != null) {
            pb.directory(dir.toFile());
        }
        if (jdk != null) {
            pb.environment().put("JAVA_HOME", jdk.toString());
            pb.environment().put("PATH", jdk.resolve("bin") + ":" + System.getenv("PATH"));
        }
        pb.environment().remove("JAVA_TOOL_OPTIONS");
        pb.environment().remove("MAVEN_OPTS");
        Process p = pb.start();
        if (pids != null) {
            pids.add(p.pid()); // mvn execs its JVM; javac is its JVM
        }
        return p.waitFor();
    }

    private static int run(List<String> cmd, Path dir, Path jdk) throws IOException, InterruptedException {
        return run(cmd, dir, jdk, null);
    }

    /** Whether a user frame is named: not an address outside every mapping, not an error frame, not only its mapping. */
    static String unnamed(String function, String file) {
        if (function.equals("?")) {
            return file.isEmpty() ? "<unknown>" : "[" + file + "] unnamed";
        }
        if (function.startsWith("[unwind:")) {
            return function;
        }
        if (function.equals("[" + file + "]")) {
            return function + " unnamed";
        }
        return null;
    }

    static void report(String workload, String note, List<Profiles.Stack> stacks, Set<Long> pids) {
        long all = 0;
        long whole = 0;
        long after = 0;
        long wholeAfter = 0;
        long errorFrame = 0;
        long unnamedFrame = 0;
        long unknownLeaf = 0;
        long notRooted = 0;
        Map<String, Long> errors = new HashMap<>(); // [unwind: ...] <- the frame it stopped under
        Map<String, Long> nextToUnnamed = new HashMap<>(); // what is unnamed <- the first named frame after it
        for (Profiles.Stack s : stacks) {
            if (!pids.contains(s.pid())) {
                continue;
            }
            List<String> fns = new ArrayList<>();
            List<String> files = new ArrayList<>();
            for (int i = 0; i < s.functions().size(); i++) {
                if (!s.files().get(i).equals("[kernel.kallsyms]")) {
                    fns.add(s.functions().get(i));
                    files.add(s.files().get(i));
                }
            }
            boolean fallback = "frame_pointers".equals(s.labels().get("unwind"));
            all += s.count();
            after += fallback ? 0 : s.count();
            String error = null;
            String firstUnnamed = null;
            String callerOfUnnamed = null;
            for (int i = 0; i < fns.size(); i++) {
                String u = unnamed(fns.get(i), files.get(i));
                if (u == null) {
                    if (firstUnnamed != null && callerOfUnnamed == null) {
                        callerOfUnnamed = fns.get(i);
                    }
                    continue;
                }
                if (u.startsWith("[unwind:")) {
                    error = u + " <- " + (i > 0 ? fns.get(i - 1) : "(leaf)");
                } else if (firstUnnamed == null) {
                    firstUnnamed = u;
                    if (i == 0) {
                        unknownLeaf += s.count();
                    }
                }
            }
            boolean rooted = fns.stream().anyMatch(ROOTS::contains);
            boolean ok = !fns.isEmpty() && error == null && firstUnnamed == null && rooted;
            whole += ok ? s.count() : 0;
            wholeAfter += ok && !fallback ? s.count() : 0;
            if (error != null) {
                errorFrame += s.count();
                errors.merge(error, s.count(), Long::sum);
            } else if (firstUnnamed != null) {
                unnamedFrame += s.count();
                nextToUnnamed.merge(firstUnnamed + " <- " + (callerOfUnnamed == null ? "(nothing named)" : callerOfUnnamed),
                        s.count(), Long::sum);
            } else if (!ok) {
                notRooted += s.count();
            }
        }
        System.out.printf("%n== %s: %s; %d processes%n", workload, note, pids.size());
        System.out.printf("  samples: %d (%.1f s at 99 Hz), after registration %d (%.1f %%)%n", all, all / 99.0, after, pct(after, all));
        System.out.printf("  whole stacks: %.1f %% of all samples, %.1f %% of those after registration (goal: >= 90 %% / >= 95 %%)%n",
                pct(whole, all), pct(wholeAfter, after));
        System.out.printf("  not whole: an [unwind: ...] frame %.1f %%, an unnamed frame %.1f %% (unnamed leaf %.1f %%),"
                + " not reaching a thread's root %.1f %%%n", pct(errorFrame, all), pct(unnamedFrame, all), pct(unknownLeaf, all),
                pct(notRooted, all));
        top("  error frames, under", errors, all);
        top("  first unnamed frame <- the first named frame below it", nextToUnnamed, all);
    }

    private static void top(String title, Map<String, Long> counts, long all) {
        if (counts.isEmpty()) {
            return;
        }
        System.out.println(title + ":");
        TreeMap<Long, List<String>> byCount = new TreeMap<>();
        counts.forEach((k, v) -> byCount.computeIfAbsent(-v, x -> new ArrayList<>()).add(k));
        int shown = 0;
        for (var e : byCount.entrySet()) {
            for (String k : e.getValue()) {
                if (shown++ == 8) {
                    return;
                }
                System.out.printf("    %5.1f %%  %s%n", pct(-e.getKey(), all), k);
            }
        }
    }

    private static double pct(long n, long of) {
        return of == 0 ? Double.NaN : 100.0 * n / of;
    }
}
