package dev.loupe.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs a command to completion (argument lists only: no shell). */
final class Commands {
    record Result(int exit, String output) {}

    private Commands() {}

    static Result run(List<String> cmd, int timeoutSeconds) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
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
