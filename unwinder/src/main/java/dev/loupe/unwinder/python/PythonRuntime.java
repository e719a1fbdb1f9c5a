package dev.loupe.unwinder.python;

import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.ManagedRuntime;
import dev.loupe.unwinder.runtime.RuntimeProcess;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * CPython processes, read from outside with no flag in the target: a process is one when it maps {@code python3.X}
 * (Debian links libpython into it) or {@code libpython3.X.so} (embedders) executable. Its {@link PythonProcess} gives
 * the walker the interpreter binary's table with the interpreter loop's rows of kind {@code RULE_PYTHON_EVAL} and the
 * version's layout ({@code python.bpf.h}), and names the {@link FrameType#PYTHON} frames the walk reports: qualified
 * name, file and line. A version without a known layout keeps native frames, said in one log line.
 */
public final class PythonRuntime implements ManagedRuntime {
    private static final System.Logger LOG = System.getLogger(PythonRuntime.class.getName());
    private static final Pattern BINARY = Pattern.compile("(?:lib)?python(\\d)\\.(\\d+)(?:\\.so(?:\\.[0-9.]+)?)?");

    private final Path procRoot;
    final AtomicLong opened = new AtomicLong();
    final AtomicLong unknownVersions = new AtomicLong();
    final AtomicLong codeReads = new AtomicLong();
    final AtomicLong badCode = new AtomicLong();

    private PythonRuntime(Path procRoot) {
        this.procRoot = procRoot;
    }

    /** CPython processes read through {@code procRoot} (normally /proc). */
    public static PythonRuntime reading(Path procRoot) {
        return new PythonRuntime(procRoot);
    }

    @Override
    public String name() {
        return "python";
    }

    @Override
    public boolean detect(List<MapEntry> executable) {
        return ManagedRuntime.anyMapping(executable, m -> version(m.path()) != null);
    }

    /** {major, minor} of a CPython binary's path ({@code /usr/bin/python3.11}, {@code .../libpython3.13.so.1.0}), else null. */
    static int[] version(String path) {
        int slash = path.lastIndexOf('/');
        Matcher m = BINARY.matcher(path.substring(slash + 1));
        if (!m.matches()) {
            return null;
        }
        return new int[] {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2))};
    }

    @Override
    public Optional<RuntimeProcess> open(int pid, String exe) throws IOException {
        try {
            Optional<RuntimeProcess> p = PythonProcess.open(this, procRoot, pid, exe).map(x -> x);
            if (p.isPresent()) {
                opened.incrementAndGet();
            }
            return p;
        } catch (PythonProcess.Unsupported e) {
            unknownVersions.incrementAndGet();
            LOG.log(System.Logger.Level.INFO, "python: pid " + pid + ": " + e.getMessage() + "; its Python frames stay native");
            return Optional.empty();
        }
    }

    @Override
    public Set<FrameType> frameTypes() {
        return Set.of(FrameType.PYTHON);
    }

    @Override
    public Map<String, Long> counters() {
        return Map.of("opened", opened.get(), "unknown_versions", unknownVersions.get(), "code_reads", codeReads.get(),
                "bad_code", badCode.get());
    }
}
