package dev.loupe.unwinder.python;

import dev.loupe.unwinder.ehframe.EhFrameException;
import dev.loupe.unwinder.ehframe.FdeRanges;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.proc.FileKey;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.ManagedRuntime;
import dev.loupe.unwinder.runtime.RuntimeProcess;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * CPython processes, read from outside with no flag in the target: a process is one when it maps {@code python3.X}
 * (Debian links libpython into it) or {@code libpython3.X.so} (embedders) executable, or any binary that turned out to
 * be a CPython interpreter when its table was built ({@link #detectFile}: a renamed copy, a program with libpython
 * linked in statically); its version is read from the binary itself ({@link PythonBinary#version}). The walker walks that binary
 * with its {@link #fileTable}: the binary's own rows, the interpreter loop's of kind {@code RULE_PYTHON_EVAL}, and the
 * version's layout ({@code python.bpf.h}), built once per binary and shared by every process that maps it, so a
 * process's Python frames are walked from its first sample with nothing read for it. Its {@link PythonProcess} names
 * the {@link FrameType#PYTHON} frames the walk reports: qualified name, file and line. A binary read once per file
 * ({@link PythonBinary}); a version without a known layout keeps native frames, said in one log line per binary.
 */
public final class PythonRuntime implements ManagedRuntime {
    private static final System.Logger LOG = System.getLogger(PythonRuntime.class.getName());
    private static final Pattern BINARY = Pattern.compile("(?:lib)?python(\\d)\\.(\\d+)(?:\\.so(?:\\.[0-9.]+)?)?");

    /** Binaries read (or found unreadable) lately, by identity; a few per host. */
    static final int BINARIES = 16;

    private final Path procRoot;
    private final Map<FileKey, Object> binaries = new LinkedHashMap<>(BINARIES, 0.75f, true); // PythonBinary or Unsupported
    final AtomicLong binariesRead = new AtomicLong();
    final AtomicLong opened = new AtomicLong();
    final AtomicLong unknownVersions = new AtomicLong();
    final AtomicLong codeReads = new AtomicLong();
    final AtomicLong badCode = new AtomicLong();
    final AtomicLong staticCodeHits = new AtomicLong(); // code objects of a binary's own data, read by an earlier process
    final AtomicLong foundByContent = new AtomicLong();
    /** Interpreter binaries not named as such, found by their symbols ({@link #detectFile}), by file identity. */
    private final Set<Inode> interpreters = ConcurrentHashMap.newKeySet();

    private record Inode(int devMajor, int devMinor, long inode) {
        static Inode of(MapEntry m) {
            return new Inode(m.devMajor(), m.devMinor(), m.inode());
        }
    }

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
        return ManagedRuntime.anyMapping(executable, this::interpreter);
    }

    /** Whether {@code m} maps a CPython interpreter binary: named as one, or found to be one by {@link #detectFile}. */
    boolean interpreter(MapEntry m) {
        return version(m.path()) != null || (!interpreters.isEmpty() && interpreters.contains(Inode.of(m)));
    }

    /**
     * A binary named as CPython's, or one whose symbols make it an interpreter ({@code _PyRuntime} and
     * {@code _PyEval_EvalFrameDefault}), whatever its name: then remembered by its identity, so that {@link #detect}
     * knows its processes without reading anything.
     */
    @Override
    public boolean detectFile(MapEntry m, Path file) throws IOException {
        if (interpreter(m)) {
            return true;
        }
        PythonSymbols syms;
        try {
            syms = PythonSymbols.read(file);
        } catch (dev.loupe.unwinder.elf.ElfException e) {
            return false;
        }
        if (!syms.interpreter()) {
            return false;
        }
        if (interpreters.size() >= 4 * BINARIES) {
            interpreters.clear(); // a bound; binaries still mapped are found again when their tables are rebuilt
        }
        interpreters.add(Inode.of(m));
        foundByContent.incrementAndGet();
        return true;
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
        return open(pid, exe, ProcMaps.read(procRoot, pid).stream().filter(MapEntry::executable).toList());
    }

    @Override
    public Optional<RuntimeProcess> open(int pid, String exe, List<MapEntry> executable) throws IOException {
        try {
            Optional<RuntimeProcess> p = PythonProcess.open(this, procRoot, pid, exe, executable).map(x -> x);
            if (p.isPresent()) {
                opened.incrementAndGet();
            }
            return p;
        } catch (PythonProcess.Unsupported e) {
            return Optional.empty(); // said once for its binary
        }
    }

    /**
     * The interpreter binary {@code m} maps as the walker walks it: its own table ({@code own}) with the loop's rows
     * of the Python kind and the layout words first (see {@link EvalTable}), in file addresses (the walker adds the
     * mapping's load bias to the layout's one address). Empty for a binary this package cannot read (its frames stay
     * native, said once).
     */
    @Override
    public Optional<UnwindTable> fileTable(MapEntry m, Path file, UnwindTable own) throws IOException {
        if (!interpreter(m)) {
            return Optional.empty();
        }
        PythonBinary bin;
        try {
            bin = binary(m, file);
        } catch (PythonProcess.Unsupported e) {
            return Optional.empty();
        }
        String name = "[python] " + m.path().substring(m.path().lastIndexOf('/') + 1);
        try {
            List<long[]> loop = EvalRanges.find(file, bin.symbols().loadSegments(), bin.evalLow(), bin.evalHigh(),
                    FdeRanges.read(file), own);
            UnwindTable t = EvalTable.build(name, own, 0, loop, bin.layout().kernelWords(bin.runtimeVaddr()));
            LOG.log(System.Logger.Level.INFO, "python: " + m.path() + " (" + bin.layout() + "): interpreter table of "
                    + t.rowCount() + " rows, the loop in " + loop.size() + " part(s)");
            return Optional.of(t);
        } catch (EhFrameException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "python: " + m.path() + ": no interpreter table (" + e.getMessage()
                    + "); its Python frames stay native");
            return Optional.empty();
        }
    }

    /**
     * The binary {@code m} maps (readable at {@code file}), read on first use and kept with a few others, as is a
     * failure to read it (logged then, once).
     */
    PythonBinary binary(MapEntry m, Path file) throws IOException, PythonProcess.Unsupported {
        FileKey key = FileKey.of(m, Files.readAttributes(file, BasicFileAttributes.class));
        synchronized (binaries) {
            Object known = binaries.get(key);
            if (known instanceof PythonBinary b) {
                return b;
            }
            if (known instanceof PythonProcess.Unsupported u) {
                throw u;
            }
        }
        Object read;
        try {
            read = PythonBinary.read(m.path(), file);
            binariesRead.incrementAndGet();
        } catch (PythonProcess.Unsupported e) {
            unknownVersions.incrementAndGet();
            LOG.log(System.Logger.Level.INFO, "python: " + m.path() + ": " + e.getMessage() + "; its Python frames stay native");
            read = e;
        }
        synchronized (binaries) {
            binaries.put(key, read);
            if (binaries.size() > BINARIES) {
                binaries.remove(binaries.keySet().iterator().next());
            }
        }
        if (read instanceof PythonProcess.Unsupported u) {
            throw u;
        }
        return (PythonBinary) read;
    }

    /** Its binary is found by the file's identity alone, read already for the kernel's table of it. */
    @Override
    public boolean opensFromSampledMappings() {
        return true;
    }

    /**
     * The binary read already for the file {@code m} maps, by device and inode alone (no I/O: a sample's mapping names
     * the file the kernel walked, whose table it checked against the file's size and mtime), or null.
     */
    PythonBinary cachedBinary(MapEntry m) {
        long device = FileKey.device(m.devMajor(), m.devMinor());
        synchronized (binaries) {
            PythonBinary found = null;
            for (Map.Entry<FileKey, Object> e : binaries.entrySet()) {
                if (e.getKey().device() == device && e.getKey().inode() == m.inode() && e.getValue() instanceof PythonBinary b) {
                    found = b; // the last match is the most recently used (access order)
                }
            }
            return found;
        }
    }

    @Override
    public Set<FrameType> frameTypes() {
        return Set.of(FrameType.PYTHON);
    }

    @Override
    public Map<String, Long> counters() {
        return Map.of("opened", opened.get(), "unknown_versions", unknownVersions.get(), "code_reads", codeReads.get(),
                "bad_code", badCode.get(), "binaries_read", binariesRead.get(), "static_code_hits", staticCodeHits.get(),
                "found_by_content", foundByContent.get());
    }
}
