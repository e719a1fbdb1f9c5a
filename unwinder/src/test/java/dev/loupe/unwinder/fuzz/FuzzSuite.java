package dev.loupe.unwinder.fuzz;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What each module's {@code FuzzTargetsTest} does per target: replay the kept inputs, and run Jazzer for
 * {@code -Dloupe.fuzz.seconds} (default {@value #SHORT_SECONDS} s: the suite's proof that harness and target work;
 * {@code ./loupe fuzz SECONDS} passes its own). {@code -Dloupe.fuzz.corpus=DIR} keeps each target's working corpus
 * in {@code DIR/<SimpleName>} across runs (default: a fresh temporary directory). Finding inputs land in
 * {@code <module>/target/fuzz-findings/<SimpleName>/}.
 */
public final class FuzzSuite {
    /** Seconds of Jazzer per target in the normal suite. */
    public static final int SHORT_SECONDS = 2;
    private static final List<Jazzer.Run> RUNS = new ArrayList<>();

    private FuzzSuite() {}

    /** The module being tested (surefire runs in it and sets {@code basedir}). */
    public static Path moduleDir() {
        return Path.of(System.getProperty("basedir", System.getProperty("user.dir"))).toAbsolutePath();
    }

    /** Replays {@code src/test/resources/fuzz/<SimpleName>/}: every file runs, and there is at least one. */
    public static void replayKept(FuzzTargets.Target t) throws Exception {
        Path dir = t.regressionDir(moduleDir());
        long files = Jazzer.count(dir);
        assertTrue(files > 0, t + ": no kept inputs in " + dir);
        int ran = Jazzer.replay(t, dir);
        assertEquals(files, ran, t + ": inputs run of the files in " + dir);
        System.out.printf("fuzz: %s replayed %d kept inputs%n", t.simpleName(), ran);
    }

    /**
     * A Jazzer run of the target from its kept inputs (which hold what its {@code writeSeeds} makes: see {@link #main});
     * fails on any finding.
     */
    /** What a working harness runs without a finding, however slow the machine. */
    static final int MIN_EXECUTIONS = 100;

    public static Jazzer.Run jazzerRun(FuzzTargets.Target t, Path tmp) throws Exception {
        int seconds = Integer.getInteger("loupe.fuzz.seconds", SHORT_SECONDS);
        String corpusRoot = System.getProperty("loupe.fuzz.corpus", "").strip();
        Path corpus = corpusRoot.isEmpty() ? tmp.resolve("corpus") : Path.of(corpusRoot).toAbsolutePath().resolve(t.simpleName());
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        Path artifacts = moduleDir().resolve("target/fuzz-findings").resolve(t.simpleName());
        Jazzer.Run run = Jazzer.run(t, seconds, List.of(t.regressionDir(moduleDir())), corpus, artifacts, cp);
        long executions = Math.max(0, run.runs());
        // On a loaded machine a short window is mostly the child JVM's start-up: the run goes on from the corpus it
        // left, in longer windows, until the harness has run MIN_EXECUTIONS inputs (a count, not a speed).
        for (int more = seconds * 4; executions < MIN_EXECUTIONS && more <= seconds * 64 && run.findings().isEmpty(); more *= 4) {
            System.out.println(run.summary() + "; " + executions + " executions so far: going on for " + more + " s");
            run = Jazzer.run(t, more, List.of(), corpus, artifacts, cp);
            executions += Math.max(0, run.runs());
        }
        synchronized (RUNS) {
            RUNS.add(run);
        }
        System.out.println(run.summary());
        run.assertNoFinding();
        assertTrue(executions >= MIN_EXECUTIONS, t + ": too few executions for a working harness: " + executions);
        assertTrue(run.corpus() > 0, t + ": an empty corpus");
        return run;
    }

    /**
     * Keeps the run-time seeds of targets ({@code writeSeeds}) as regression inputs: {@code java -cp <agent's test
     * classpath> dev.loupe.unwinder.fuzz.FuzzSuite PROJECT_ROOT [SimpleName...]} writes them into each target's
     * {@code src/test/resources/fuzz/<SimpleName>/} (files over 64 KB are left out: git holds the small ones).
     */
    public static void main(String[] args) throws Exception {
        Path root = Path.of(args[0]).toAbsolutePath();
        List<String> only = List.of(args).subList(1, args.length);
        for (FuzzTargets.Target t : FuzzTargets.ALL) {
            if (!only.isEmpty() && !only.contains(t.simpleName())) {
                continue;
            }
            Path tmp = java.nio.file.Files.createTempDirectory("loupe-seeds");
            try {
                if (!Jazzer.writeSeeds(t, tmp)) {
                    System.out.println(t + ": no writeSeeds");
                    continue;
                }
            } catch (ClassNotFoundException notHere) {
                System.out.println(t + ": not on this classpath");
                continue;
            }
            Path dir = t.regressionDir(root.resolve(t.module()));
            java.nio.file.Files.createDirectories(dir);
            try (var files = java.nio.file.Files.list(tmp)) {
                for (Path f : files.sorted().toList()) {
                    if (java.nio.file.Files.size(f) <= 64 << 10) {
                        java.nio.file.Files.copy(f, dir.resolve(f.getFileName()), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                        System.out.printf("%s: kept %s (%d bytes)%n", t, f.getFileName(), java.nio.file.Files.size(f));
                    } else {
                        System.out.printf("%s: left out %s (%d bytes)%n", t, f.getFileName(), java.nio.file.Files.size(f));
                    }
                    java.nio.file.Files.delete(f);
                }
            }
            java.nio.file.Files.delete(tmp);
        }
    }

    /** The module's total, printed after its runs ({@code ./loupe fuzz} adds the modules up). */
    public static void printTotal(String module) {
        synchronized (RUNS) {
            if (RUNS.isEmpty()) {
                return;
            }
            long runs = RUNS.stream().mapToLong(Jazzer.Run::runs).sum();
            long secs = RUNS.stream().mapToLong(Jazzer.Run::seconds).sum();
            long findings = RUNS.stream().mapToLong(r -> r.findings().size()).sum();
            System.out.printf("fuzz: total %s: %d targets, %,d executions in %d s, findings %d%n", module, RUNS.size(), runs,
                    secs, findings);
            RUNS.clear();
        }
    }
}
