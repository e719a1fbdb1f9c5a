package dev.loupe.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The packaged agent ({@code loupe-agent.jar}) run as its own process, as {@code ./loupe run} runs it. */
public final class AgentProcess implements AutoCloseable {
    /** The JVM options `loupe run` starts the agent with: tests run the agent as users do. */
    public static final Path RUN_JVMOPTS = Path.of(System.getProperty("loupe.agent.jar", "../agent/target/loupe-agent.jar"))
            .toAbsolutePath().getParent().resolve("../src/main/jvm/run.jvmopts").normalize();
    /** The relay's @argfile, as ./loupe and the package start {@code loupe relay}. */
    public static final Path RELAY_JVMOPTS = RUN_JVMOPTS.resolveSibling("relay.jvmopts");
    static final Path JAR = Path.of(System.getProperty("loupe.agent.jar", "../agent/target/loupe-agent.jar"));
    static final String JAVA = Path.of(System.getProperty("java.home"), "bin", "java").toString();

    private final Process process;
    private final Path log;

    private AgentProcess(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    static AgentProcess start(Path workDir, String... args) throws IOException {
        List<String> cmd = command(args);
        if (!List.of(args).contains("--state-dir")) {
            // The test's own state (latency baselines, spool), never the host's /var/lib/loupe.
            cmd.addAll(List.of("--state-dir", workDir.resolve("loupe-state").toString()));
        }
        Path log = Files.createTempFile(workDir, "agent", ".log");
        Process p = new ProcessBuilder(cmd).directory(workDir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        return new AgentProcess(p, log);
    }

    /** The command line of {@code loupe run ARGS}, for tests that start it their own way. */
    static List<String> command(String... args) {
        if (!Files.exists(JAR)) {
            throw new IllegalStateException("agent jar not built: " + JAR + " (run mvn verify from the root)");
        }
        List<String> cmd = new ArrayList<>(List.of(JAVA, "@" + RUN_JVMOPTS, "-jar", JAR.toString(), "run"));
        cmd.addAll(List.of(args));
        if (!List.of(args).contains("--jvm-symbols")) {
            // A host-wide test agent must not attach to the build's own JVMs (Maven, surefire) or anyone else's:
            // tests of JVM symbols ask for them (and agent's RealJvmAttachTest drives the attach directly).
            cmd.addAll(List.of("--jvm-symbols", "off"));
        }
        if (!List.of(args).contains("--jvm-code-cache")) {
            // Nor read their memory (code caches rescanned as Maven's JIT compiles): Java tests ask for it.
            cmd.addAll(List.of("--jvm-code-cache", "off"));
        }
        return cmd;
    }

    /**
     * Copies the agent jar and its lib/ into {@code dir} (for a run as another user, wherever the checkout is; the
     * caller makes {@code dir} readable) and returns the jar's copy.
     */
    static Path copyJarTo(Path dir) throws IOException {
        Path jar = dir.resolve("loupe-agent.jar");
        Files.copy(JAR, jar);
        Path lib = Files.createDirectory(dir.resolve("lib"));
        try (var s = Files.list(JAR.resolveSibling("lib"))) {
            for (Path p : s.toList()) {
                Files.copy(p, lib.resolve(p.getFileName()));
            }
        }
        return jar;
    }

    /** Where a profiled target's profiles went, and its pid. */
    record Profiled(long pid, Path out) {}

    /** Starts {@code binary}, profiles only it at 99 Hz for {@code duration}, kills it. */
    static Profiled profileTarget(Path workDir, Path binary, String duration) throws IOException, InterruptedException {
        Process target = Targets.start(binary);
        try {
            return new Profiled(target.pid(), profilePid(workDir, target, duration));
        } finally {
            Targets.kill(target);
        }
    }

    /** Profiles only {@code target} at 99 Hz for {@code duration}, as a user would; returns the output directory. */
    static Path profilePid(Path workDir, Process target, String duration, String... more) throws IOException, InterruptedException {
        Path out = workDir.resolve("profiles");
        List<String> args = new ArrayList<>(List.of("--pid", Long.toString(target.pid()), "--frequency", "99",
                "--duration", duration, "--output", out.toString(), "--http", "off"));
        args.addAll(List.of(more));
        try (AgentProcess agent = start(workDir, args.toArray(String[]::new))) {
            int exit = agent.awaitExit(Duration.ofSeconds(60));
            if (exit != 0) {
                throw new AssertionError("agent exited " + exit + ":\n" + agent.log());
            }
        }
        return out;
    }

    /** Waits until the agent says it is sampling (the BPF program is attached). */
    AgentProcess awaitSampling(Duration timeout) throws IOException, InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < end) {
            if (log().contains("profiling at")) {
                return this;
            }
            if (!process.isAlive()) {
                throw new IllegalStateException("agent exited with " + process.exitValue() + ":\n" + log());
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("agent did not start sampling within " + timeout + ":\n" + log());
    }

    int awaitExit(Duration timeout) throws InterruptedException, IOException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly();
            throw new IllegalStateException("agent still running after " + timeout + ":\n" + log());
        }
        return process.exitValue();
    }

    /** SIGTERM, as systemd stops the service. */
    void terminate() {
        process.destroy();
    }

    String log() throws IOException {
        return Files.readString(log);
    }

    long pid() {
        return process.pid();
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
