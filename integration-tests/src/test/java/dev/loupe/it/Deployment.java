package dev.loupe.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One service binary at a fixed path, deployed as a package manager does: the new build renamed over the path in one
 * step (a process that is running keeps its old file), then the process restarted from the path.
 */
public final class Deployment implements AutoCloseable {
    private static final Pattern FIRST_CALL = Pattern.compile("(?m)^first_call_unix_ns (\\d+)$");

    private final Path path;
    private final List<String> args;
    private Process process;
    private Path log;
    private int deploys;

    /** Nothing runs until the first {@link #deploy}. */
    public Deployment(Path path, String... args) {
        this.path = path;
        this.args = List.of(args);
    }

    public Path path() {
        return path;
    }

    /**
     * Copies {@code build} beside the path, renames the copy over the path (atomically), stops the running process
     * and starts the new build from the path. Returns when the new process runs.
     */
    public void deploy(Path build) throws IOException, InterruptedException {
        Path staged = path.resolveSibling("." + path.getFileName() + ".new");
        Files.copy(build, staged, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.COPY_ATTRIBUTES);
        Files.move(staged, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        stop();
        log = path.resolveSibling(path.getFileName() + ".deploy" + (++deploys) + ".log");
        List<String> cmd = new ArrayList<>(List.of(path.toString()));
        cmd.addAll(args);
        process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    /** The running process (of the last deploy). */
    public Process process() {
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException(path + " is not running" + (log == null ? "" : ":\n" + output()));
        }
        return process;
    }

    /** What the running build printed so far. */
    public String output() {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "(no output: " + e.getMessage() + ")";
        }
    }

    /** When the running build's first call began, as it printed it ({@code first_call_unix_ns}); waits for the line. */
    public Instant firstCall(Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        do {
            Matcher m = FIRST_CALL.matcher(output());
            if (m.find()) {
                long ns = Long.parseLong(m.group(1));
                return Instant.ofEpochSecond(0, ns);
            }
            process();
            Thread.sleep(20);
        } while (System.nanoTime() < end);
        throw new IllegalStateException(path + " printed no first_call_unix_ns within " + timeout + ":\n" + output());
    }

    /** Kills the running process, if any, and waits for it. */
    public void stop() throws InterruptedException {
        if (process != null) {
            process.destroyForcibly();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException(path + " (pid " + process.pid() + ") did not exit");
            }
        }
    }

    @Override
    public void close() throws InterruptedException {
        stop();
    }
}
