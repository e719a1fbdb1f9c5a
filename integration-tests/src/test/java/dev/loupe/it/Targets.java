package dev.loupe.it;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Builds the C target programs (ground truth for stack tests) with gcc and starts them. */
final class Targets {
    static final Path SOURCES = Path.of(System.getProperty("loupe.c.sources", "src/test/c"));
    /** The bpf module's latency target (it measures its own calls), one source for its tests and these. */
    static final Path LATENCY_TARGET = Path.of(System.getProperty("loupe.repo", "..")).toAbsolutePath().normalize()
            .resolve("bpf/src/test/c/latency_target.c");

    private Targets() {}

    /** gcc -O2 {flags} SOURCE -o dir/name, SOURCE a file of {@link #SOURCES} */
    static Path build(String source, Path dir, String name, String... flags) throws IOException, InterruptedException {
        return build(SOURCES.resolve(source), dir, name, flags);
    }

    /** gcc -O2 {flags} source -o dir/name */
    static Path build(Path source, Path dir, String name, String... flags) throws IOException, InterruptedException {
        Path out = dir.resolve(name);
        List<String> cmd = new ArrayList<>(List.of("gcc", "-O2"));
        cmd.addAll(List.of(flags));
        cmd.addAll(List.of(source.toString(), "-o", out.toString()));
        Commands.Result r = Commands.run(cmd, 60);
        if (r.exit() != 0) {
            throw new IllegalStateException("gcc failed: " + cmd + "\n" + r.output());
        }
        return out;
    }

    static Process start(Path binary, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(binary.toString());
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    }

    /** Starts {@code binary ARGS} and waits for its first line, which must be {@code ready} (its threads are set up). */
    static Process startReady(Path binary, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(binary.toString());
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String line = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream())).readLine();
        if (!"ready".equals(line)) {
            kill(p);
            throw new IllegalStateException(binary + " said " + line + " instead of ready");
        }
        return p;
    }

    static void kill(Process p) throws InterruptedException {
        if (p != null) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
