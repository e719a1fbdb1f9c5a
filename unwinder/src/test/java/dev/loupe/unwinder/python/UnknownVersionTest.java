package dev.loupe.unwinder.python;

import dev.loupe.unwinder.proc.ProcMaps;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A CPython whose version has no layout (here Debian's python3.11 copied as {@code python3.7}, its {@code Py_Version}
 * constant made 3.7's, which is what a 3.7 looks like from outside): detected, not opened (its frames stay native),
 * counted once per process.
 */
class UnknownVersionTest {
    @TempDir
    Path dir;

    @Test
    void anUnknownVersionIsDetectedButNotOpened() throws Exception {
        Path python37 = Files.copy(PythonTargets.PYTHON311, dir.resolve("python3.7"));
        assertTrue(python37.toFile().setExecutable(true));
        VersionFromBinaryTest.patchPyVersion(python37, 0x030700f0); // 3.7.0 final
        ProcessBuilder pb = new ProcessBuilder(python37.toString(), "-c", "import sys; print('ready', flush=True); sys.stdin.readline()");
        pb.environment().put("PYTHONHOME", "/usr"); // its standard library, from where the copy is not
        Process p = pb.redirectErrorStream(true).start();
        // What the runtime logs (System.Logger goes to java.util.logging here): one line for the binary, however often asked.
        List<String> logged = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger(PythonRuntime.class.getName());
        java.util.logging.Handler h = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                logged.add(r.getMessage());
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        jul.addHandler(h);
        try {
            assertEquals("ready", new BufferedReader(new InputStreamReader(p.getInputStream())).readLine());
            PythonRuntime runtime = PythonRuntime.reading(Path.of("/proc"));
            assertTrue(runtime.detect(ProcMaps.read(Path.of("/proc"), (int) p.pid()).stream().filter(m -> m.executable()).toList()));
            assertTrue(runtime.open((int) p.pid(), "python3.7").isEmpty());
            assertTrue(runtime.open((int) p.pid(), "python3.7").isEmpty(), "asked again (another consumer, a later process)");
            assertEquals(Map.of("opened", 0L, "unknown_versions", 1L, "code_reads", 0L, "bad_code", 0L, "binaries_read", 0L,
                    "static_code_hits", 0L, "found_by_content", 0L),
                    runtime.counters(), "the binary found unreadable once, and said once");
            dev.loupe.unwinder.proc.MapEntry exec = ProcMaps.read(Path.of("/proc"), (int) p.pid()).stream()
                    .filter(m -> m.executable() && m.path().equals(python37.toString())).findFirst().orElseThrow();
            assertTrue(runtime.fileTable(exec, python37, dev.loupe.unwinder.ehframe.UnwindTableBuilder.build(python37)).isEmpty(),
                    "no interpreter table: the binary is walked by its own table, its Python frames native");
            assertEquals(List.of("python: " + python37 + ": CPython 3.7 has no known layout; its Python frames stay native"),
                    logged, "one log line");
        } finally {
            jul.removeHandler(h);
            p.destroyForcibly();
        }
    }
}
