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
        assertTrue(Files.isExecutable(python), python + " (installed by ./loupe test)");
        Path script = dir.resolve("code_view.py");
        try (InputStream in = PythonTargets.class.getResourceAsStream("code_view.py")) {
            Files.write(script, in.readAllBytes());
        }
        List<String> cmd = new ArrayList<>(List.of(python.toString(), script.toString(), mode));
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
