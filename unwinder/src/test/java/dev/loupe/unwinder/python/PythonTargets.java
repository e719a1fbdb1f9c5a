package dev.loupe.unwinder.python;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Real CPython processes for the tests: the host's Debian python3.11 running code_view.py, which prints its own view. */
final class PythonTargets {
    static final Path PYTHON311 = Path.of("/usr/bin/python3.11");
    /** Debian 11's python3.9 and Debian unstable's 3.13 and 3.14, in roots of their own (integration-tests/scripts). */
    static final Path BULLSEYE = Path.of("/var/cache/loupe/bullseye-python");
    static final Path SID = Path.of("/var/cache/loupe/sid-pythons");
    static final Path IN_ROOT = Path.of("../integration-tests/scripts/in-sid.sh").toAbsolutePath().normalize();

    private PythonTargets() {}

    /** A running interpreter and the lines it printed before "ready"; closing it ends it. */
    record Target(Process process, List<String> lines) implements AutoCloseable {
        long pid() {
            return process.pid();
        }

        @Override
        public void close() {
            process.destroyForcibly();
        }
    }

    static Target start(Path python, Path dir, String mode, String... modules) throws IOException {
        return start(null, python, dir, mode, modules);
    }

    /**
     * Runs {@code python} (a path inside {@code root}, chrooted into it by integration-tests/scripts/in-sid.sh, when
     * {@code root} is not null) on code_view.py in {@code mode} over {@code modules}.
     */
    static Target start(Path root, Path python, Path dir, String mode, String... modules) throws IOException {
        Path seen = root == null ? dir : Path.of("/tmp", "loupe-code-view-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        Path real = root == null ? dir : Files.createDirectories(root.resolve(seen.toString().substring(1)));
        Path pythonReal = root == null ? python : root.resolve(python.toString().substring(1));
        assertTrue(Files.isExecutable(pythonReal), pythonReal + " (installed by ./loupe test)");
        try (InputStream in = PythonTargets.class.getResourceAsStream("code_view.py")) {
            Files.write(real.resolve("code_view.py"), in.readAllBytes());
        }
        Path script = seen.resolve("code_view.py");
        List<String> cmd = new ArrayList<>();
        if (root != null) {
            cmd.addAll(List.of(IN_ROOT.toString(), root.toString()));
        }
        cmd.addAll(List.of(python.toString(), script.toString(), mode));
        cmd.addAll(List.of(modules));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()));
        List<String> lines = new ArrayList<>();
        for (String line = r.readLine(); ; line = r.readLine()) {
            if (line == null) {
                p.destroyForcibly();
                throw new IOException(python + " ended before it was ready: " + lines.subList(Math.max(0, lines.size() - 5), lines.size()));
            }
            if (line.equals("ready")) {
                break;
            }
            lines.add(line);
        }
        return new Target(p, lines);
    }
}
