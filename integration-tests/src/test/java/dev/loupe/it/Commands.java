package dev.loupe.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs a command to completion (argument lists only: no shell). */
public final class Commands {
    public record Result(int exit, String output) {
        /** Throws unless the command exited 0. */
        public Result check() {
            if (exit != 0) {
                throw new IllegalStateException("command failed (" + exit + "):\n" + output);
            }
            return this;
        }
    }

    private Commands() {}

    public static Result run(List<String> cmd, int timeoutSeconds) throws IOException, InterruptedException {
        return run(cmd, null, timeoutSeconds);
    }

    /** As {@link #run(List, int)}, with standard input read from {@code input} (null: none). */
    static Result run(List<String> cmd, java.nio.file.Path input, int timeoutSeconds) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        if (input != null) {
            pb.redirectInput(input.toFile());
        }
        Process p = pb.start();
        byte[][] out = new byte[1][];
        Thread reader = Thread.ofVirtual().start(() -> {
            try {
                out[0] = p.getInputStream().readAllBytes();
            } catch (IOException e) {
                out[0] = new byte[0];
            }
        });
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("timed out after " + timeoutSeconds + " s: " + cmd);
        }
        reader.join();
        return new Result(p.exitValue(), new String(out[0], StandardCharsets.UTF_8));
    }
}
