package dev.loupe.unwinder.fuzz;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The one harness for every fuzz target: runs Jazzer (coverage-guided, libFuzzer inside) on a target in a child
 * JVM for a number of seconds, from a seed corpus, and reports what it did; and replays a directory of kept
 * inputs through a target in this JVM (no Jazzer, no child), as the regression suite does.
 *
 * <p>A finding is any input Jazzer saved as {@code crash-*}, {@code timeout-*}, {@code oom-*} or {@code leak-*}, or a
 * non-zero exit: {@link Run#assertNoFinding()} fails with the input's path and Jazzer's report (the exception
 * and its stack trace).
 */
public final class Jazzer {
    /** Jazzer's per-input limit: an input that takes longer is a finding (a hang, e.g. a loop that never advances). */
    static final int TIMEOUT_SECONDS = 10;
    /** Runs up to this long are the suite's proofs that a target works, not searches. */
    static final int SHORT_RUN = 10;
    private static final Pattern DONE = Pattern.compile("Done (\\d+) runs in (\\d+) second");
    /** What libFuzzer prints instead when it stops at a finding. */
    private static final Pattern EXECUTED = Pattern.compile("stat::number_of_executed_units: (\\d+)");
    private static final List<String> FINDING_PREFIXES = List.of("crash-", "timeout-", "oom-", "leak-");

    private Jazzer() {}

    /**
     * What one run did.
     *
     * @param runs      executions of the target ("Done N runs in S second(s)", or at a finding libFuzzer's
     *                  number_of_executed_units), -1 if Jazzer said neither
     * @param seconds   the run's length as Jazzer reports it (at a finding: the child's whole life)
     * @param corpus    inputs in the working corpus at the end (seeds and what coverage added)
     * @param exitCode  Jazzer's exit status (0: no finding)
     * @param findings  inputs Jazzer saved as findings
     * @param log       Jazzer's output
     */
    public record Run(FuzzTargets.Target target, long runs, long seconds, long corpus, int exitCode, List<Path> findings,
                      Path log) {
        /** Fails, printing each finding's input path and Jazzer's report, unless the run found nothing. */
        public void assertNoFinding() throws IOException {
            if (exitCode == 0 && findings.isEmpty() && runs >= 0) {
                return;
            }
            String out = Files.readString(log, StandardCharsets.ISO_8859_1);
            StringBuilder m = new StringBuilder(target.simpleName()).append(": Jazzer ");
            if (findings.isEmpty() && exitCode == 0) {
                m.append("ended without its \"Done N runs\" line");
            } else if (findings.isEmpty()) {
                m.append("failed (exit ").append(exitCode).append(") without saving a finding input: see its log");
            } else {
                m.append("reported a finding (exit ").append(exitCode).append(")");
            }
            for (Path f : findings) {
                m.append("\n  input: ").append(f);
            }
            m.append("\n  log: ").append(log).append("\n").append(report(out));
            throw new AssertionError(m.toString());
        }

        /** The line {@code ./loupe fuzz} sums up: executions, seconds, rate, corpus size, findings. */
        public String summary() {
            return String.format("fuzz: %-24s %,12d executions in %4d s (%,7d/s), corpus %,6d inputs, findings %d",
                    target.simpleName(), runs, seconds, seconds > 0 ? runs / seconds : runs, corpus, findings.size());
        }
    }

    /**
     * Runs Jazzer on {@code target} for {@code seconds}, starting from the files in {@code seedDirs} (copied into
     * {@code corpus}, where Jazzer also keeps what it adds), writing finding inputs to {@code artifacts}. The child
     * JVM gets {@code classpath}, which must hold Jazzer, the target and what it reads.
     */
    public static Run run(FuzzTargets.Target target, int seconds, List<Path> seedDirs, Path corpus, Path artifacts,
                          String classpath) throws IOException, InterruptedException {
        Files.createDirectories(corpus);
        Files.createDirectories(artifacts);
        for (Path dir : seedDirs) {
            copyFiles(dir, corpus);
        }
        try (Stream<Path> old = Files.list(artifacts)) {
            for (Path p : old.toList()) {
                Files.delete(p); // a finding of an earlier run must not fail (or pass for) this one
            }
        }
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx768m", "-XX:+EnableDynamicAgentLoading", "--enable-native-access=ALL-UNNAMED",
                // A short run is mostly start-up: C1 alone starts faster; a long one wants C2's code.
                seconds <= SHORT_RUN ? "-XX:TieredStopAtLevel=1" : "-XX:+TieredCompilation",
                "-cp", childClasspath(classpath),
                "com.code_intelligence.jazzer.Jazzer",
                "--target_class=" + target.className(),
                "--instrumentation_includes=dev.loupe.**",
                // Coverage of the readers, not of the harness or the targets' own checks and models.
                "--instrumentation_excludes=" + String.join(":", excludes(target)),
                "--reproducer_path=" + artifacts,
                "-max_total_time=" + seconds,
                "-timeout=" + TIMEOUT_SECONDS,
                "-max_len=" + target.maxLen(),
                "-print_final_stats=1",
                "-artifact_prefix=" + artifacts + "/"));
        cmd.addAll(target.arguments());
        cmd.add(corpus.toString());
        Path log = artifacts.resolveSibling(target.simpleName() + ".log");
        long started = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!p.waitFor(seconds + 300L, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            throw new AssertionError(target.simpleName() + ": Jazzer did not finish within " + (seconds + 300) + " s; log: " + log);
        }
        String out = Files.readString(log, StandardCharsets.ISO_8859_1);
        long runs = -1;
        long secs = -1;
        Matcher done = DONE.matcher(out);
        while (done.find()) { // the last one: libFuzzer prints it once, at the end
            runs = Long.parseLong(done.group(1));
            secs = Long.parseLong(done.group(2));
        }
        Matcher executed = EXECUTED.matcher(out);
        if (runs < 0 && executed.find()) { // stopped at a finding: its count, and the child's time
            runs = Long.parseLong(executed.group(1));
            secs = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);
        }
        List<Path> findings;
        try (Stream<Path> s = Files.list(artifacts)) {
            findings = s.filter(f -> FINDING_PREFIXES.stream().anyMatch(pre -> f.getFileName().toString().startsWith(pre)))
                    .sorted().toList();
        }
        return new Run(target, runs, secs, count(corpus), p.exitValue(), findings, log);
    }

    /** The class directories of {@code classpath} and the jars {@link FuzzTargets#CHILD_JARS} names. */
    static String childClasspath(String classpath) {
        List<String> keep = new ArrayList<>();
        for (String e : classpath.split(java.io.File.pathSeparator)) {
            Path p = Path.of(e);
            String name = p.getFileName() == null ? "" : p.getFileName().toString();
            if (Files.isDirectory(p) || FuzzTargets.CHILD_JARS.stream().anyMatch(name::startsWith)) {
                keep.add(e);
            }
        }
        return String.join(java.io.File.pathSeparator, keep);
    }

    /** The harness and the target with its nested classes (Jazzer's globs cannot say "FuzzTarget and what it nests"). */
    private static List<String> excludes(FuzzTargets.Target target) {
        List<String> out = new ArrayList<>(List.of(Jazzer.class.getPackageName() + ".**"));
        try {
            List<Class<?>> todo = new ArrayList<>(List.of(Class.forName(target.className())));
            while (!todo.isEmpty()) {
                Class<?> c = todo.removeLast();
                out.add(c.getName());
                todo.addAll(List.of(c.getDeclaredClasses()));
            }
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(target + " is not on the classpath", e);
        }
        return out;
    }

    /**
     * Feeds every file of {@code dir} to the target's {@code fuzzerTestOneInput} in this JVM (after its
     * {@code fuzzerInitialize}, if it has one): the bytes, or for a {@code fuzzerTestOneInput(FuzzedDataProvider)}
     * a provider over them as Jazzer makes it. An exception escaping is an AssertionError naming the file. Returns
     * the number of files run.
     */
    public static int replay(FuzzTargets.Target target, Path dir) throws Exception {
        Class<?> c = Class.forName(target.className());
        Method test;
        boolean provider = false;
        try {
            test = c.getMethod("fuzzerTestOneInput", byte[].class);
        } catch (NoSuchMethodException notBytes) {
            test = c.getMethod("fuzzerTestOneInput", FuzzedDataProvider.class);
            provider = true;
        }
        if (!Modifier.isStatic(test.getModifiers())) {
            throw new IllegalStateException(target + ": fuzzerTestOneInput must be static");
        }
        try {
            Method init = c.getMethod("fuzzerInitialize");
            init.invoke(null);
        } catch (NoSuchMethodException none) {
            // optional
        }
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(Files::isRegularFile).sorted().toList();
        }
        int ran = 0;
        for (Path f : files) {
            byte[] data = Files.readAllBytes(f);
            try {
                if (provider) { // what Jazzer's JUnit integration replays with: the same choices from the same bytes
                    FuzzedDataProvider fdp = ProviderReplay.over(data);
                    try {
                        test.invoke(null, fdp);
                    } finally {
                        ((AutoCloseable) fdp).close();
                    }
                } else {
                    test.invoke(null, (Object) data);
                }
            } catch (InvocationTargetException e) {
                throw new AssertionError(target + " fails on the kept input " + f + ": " + e.getCause(), e.getCause());
            }
            ran++;
        }
        return ran;
    }

    /** Writes the target's run-time seeds into {@code dir} if it has a {@code writeSeeds(Path)}; false if it has none. */
    public static boolean writeSeeds(FuzzTargets.Target target, Path dir) throws Exception {
        Method seeds;
        try {
            seeds = Class.forName(target.className()).getMethod("writeSeeds", Path.class);
        } catch (NoSuchMethodException none) {
            return false;
        }
        Files.createDirectories(dir);
        try {
            seeds.invoke(null, dir);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof Exception x ? x : new RuntimeException(e.getCause());
        }
        return true;
    }

    public static long count(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return 0;
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(Files::isRegularFile).count();
        }
    }

    private static void copyFiles(Path from, Path to) throws IOException {
        if (!Files.isDirectory(from)) {
            return;
        }
        try (Stream<Path> s = Files.list(from)) {
            for (Path f : s.filter(Files::isRegularFile).toList()) {
                Files.copy(f, to.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }

    /**
     * Jazzer's report of a finding: from its first "== Java Exception" / "ERROR: libFuzzer" / "==ERROR" line (the
     * exception, its stack trace, the input's path) to the end, else the log's last 4,000 characters.
     */
    static String report(String out) {
        int at = -1;
        for (String marker : List.of("== Java Exception", "ERROR: libFuzzer", "==ERROR", "Exception in thread")) {
            int i = out.indexOf(marker);
            if (i >= 0 && (at < 0 || i < at)) {
                at = i;
            }
        }
        String r = at >= 0 ? out.substring(at) : out.substring(Math.max(0, out.length() - 4000));
        return r.length() > 12000 ? r.substring(0, 12000) + "\n[...]" : r;
    }
}
