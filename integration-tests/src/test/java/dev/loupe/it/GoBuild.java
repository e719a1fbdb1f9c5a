package dev.loupe.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Go programs built with Debian's golang-1.19 (GOPATH mode, a build cache of the caller's), and their Go build ids. */
public final class GoBuild {
    public static final Path GO = Path.of("/usr/lib/go-1.19/bin/go");
    /** integration-tests/src/test/go/regression_target: calls main.work at a steady rate, its duration fixed at build time. */
    public static final Path REGRESSION_TARGET = Path.of(System.getProperty("loupe.repo", "..")).toAbsolutePath().normalize()
            .resolve("integration-tests/src/test/go/regression_target");

    private GoBuild() {}

    /** Debian 11's Go 1.15 (integration-tests/scripts/bullseye-go.sh, run by ./loupe test): the pre-1.18 pclntab. */
    public static final Path GO115_ROOT = Path.of("/var/cache/loupe/bullseye-go/usr/lib/go-1.15");

    /** {@code go build FLAGS -o out main.go} in {@code sources}, with its build cache in {@code cache}. */
    public static Path build(Path sources, Path out, Path cache, String... flags) throws IOException, InterruptedException {
        ServerProcess.requireInstalled(GO, "golang-1.19");
        return build(GO, sources, out, cache, flags);
    }

    /** The same with Go 1.15 ({@link #GO115_ROOT}), run from its Debian 11 root as it is (GOROOT says where). */
    public static Path build115(Path sources, Path out, Path cache, String... flags) throws IOException, InterruptedException {
        if (!Files.isExecutable(GO115_ROOT.resolve("bin/go"))) {
            throw new IllegalStateException(GO115_ROOT + "/bin/go is missing: run integration-tests/scripts/bullseye-go.sh "
                    + "/var/cache/loupe/bullseye-go (./loupe test does)");
        }
        return build(GO115_ROOT.resolve("bin/go"), sources, out, cache, flags);
    }

    private static Path build(Path go, Path sources, Path out, Path cache, String... flags) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(go.toString(), "build", "-o", out.toString()));
        cmd.addAll(List.of(flags));
        cmd.add("main.go");
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(sources.toFile()).redirectErrorStream(true);
        pb.environment().put("GO111MODULE", "off");
        if (!go.equals(GO)) {
            pb.environment().put("GOROOT", go.getParent().getParent().toString());
            pb.environment().put("CGO_ENABLED", "0");
        }
        pb.environment().put("GOCACHE", cache.toString());
        pb.environment().putIfAbsent("HOME", cache.toString());
        Process p = pb.start();
        String log = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0 || !Files.isExecutable(out)) {
            throw new IllegalStateException("go build failed: " + cmd + "\n" + log);
        }
        return out;
    }

    /**
     * A build of the regression target whose {@code main.work} takes {@code workMicros} µs a call; {@code release}
     * names it (another name alone is another binary, with another build id).
     */
    public static Path regressionTarget(Path out, Path cache, int workMicros, String release) throws IOException, InterruptedException {
        return build(REGRESSION_TARGET, out, cache, "-ldflags=-X main.workMicros=" + workMicros + " -X main.release=" + release);
    }

    /** {@code go tool buildid BINARY}: the Go build id in its {@code .note.go.buildid} (Go binaries have no GNU one). */
    public static String buildId(Path binary) throws IOException, InterruptedException {
        Commands.Result r = Commands.run(List.of(GO.toString(), "tool", "buildid", binary.toString()), 60).check();
        String id = r.output().strip();
        if (!id.matches("[A-Za-z0-9_/-]+")) {
            throw new IllegalStateException("go tool buildid " + binary + " printed " + r.output());
        }
        return id;
    }
}
