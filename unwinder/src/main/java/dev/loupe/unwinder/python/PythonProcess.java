package dev.loupe.unwinder.python;

import dev.loupe.unwinder.ehframe.EhFrameException;
import dev.loupe.unwinder.ehframe.FdeRanges;
import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.ehframe.UnwindTableBuilder;
import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfLoadSegments;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.proc.ProcessGoneException;
import dev.loupe.unwinder.proc.ProcessMemory;
import dev.loupe.unwinder.runtime.CodeTable;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import dev.loupe.unwinder.runtime.RuntimeProcess;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One CPython process: its interpreter binary's table for the walker (built once: the binary does not change under a
 * running process) and the names of its Python frames. A code object is read once per address from
 * {@code /proc/PID/mem} and kept under a byte budget ({@link #CODE_CACHE_BYTES}); a frame whose code pointer is not a
 * code object (freed, reused, a layout that does not match) is named as such, never as another function.
 *
 * <p>Thread-safe: the symbolizers and the unwind table thread share it, under this object's lock.
 */
final class PythonProcess implements RuntimeProcess {
    private static final System.Logger LOG = System.getLogger(PythonProcess.class.getName());
    static final long CODE_CACHE_BYTES = 8L << 20;

    /** The process runs a CPython this package cannot read (version or binary): its frames stay native. */
    static final class Unsupported extends Exception {
        Unsupported(String what) {
            super(what, null, false, false);
        }
    }

    private final PythonRuntime runtime;
    private final int pid;
    private final PythonLayout layout;
    private final ProcessMemory mem;
    private final CodeObjects codes;
    private final String mapping;
    private final Path binary;
    private final long bias;
    private final long runtimeAddress;
    private final long evalLow;
    private final long evalHigh;
    private final List<LoadSegment> segments;
    private final List<CodeTable.Range> ranges;
    private CodeTable table;
    private boolean tableFailed;
    private long cachedBytes;
    private final Map<Long, CodeObjects.Code> cache = new LinkedHashMap<>(256, 0.75f, true);

    private PythonProcess(PythonRuntime runtime, int pid, PythonLayout layout, ProcessMemory mem, long codeType, String exe,
                          Path binary, long bias, long runtimeAddress, long evalLow, long evalHigh, List<CodeTable.Range> ranges,
                          List<LoadSegment> segments) {
        this.runtime = runtime;
        this.pid = pid;
        this.layout = layout;
        this.mem = mem;
        this.codes = new CodeObjects(mem, layout.code(), codeType);
        this.mapping = "[python] " + exe;
        this.binary = binary;
        this.bias = bias;
        this.runtimeAddress = runtimeAddress;
        this.evalLow = evalLow;
        this.evalHigh = evalHigh;
        this.ranges = ranges;
        this.segments = segments;
    }

    /**
     * Opens process {@code pid}'s CPython: the mapped binary that exports {@code _PyRuntime} (libpython over the
     * executable when both are mapped), its version from its name, that version's layout.
     *
     * @throws Unsupported a CPython without a known layout, or whose binary lacks a symbol this needs
     * @throws IOException the process is gone or cannot be read
     */
    static Optional<PythonProcess> open(PythonRuntime runtime, Path procRoot, int pid, String exe) throws IOException, Unsupported {
        List<MapEntry> maps = ProcMaps.read(procRoot, pid);
        MapEntry found = null;
        for (MapEntry m : maps) {
            if (m.executable() && m.fileBacked() && PythonRuntime.version(m.path()) != null
                    && (found == null || m.path().contains("libpython"))) {
                found = m;
            }
        }
        if (found == null) {
            return Optional.empty();
        }
        int[] v = PythonRuntime.version(found.path());
        Optional<PythonLayout> table = PythonLayout.forVersion(v[0], v[1]);
        if (table.isEmpty() && !(v[0] == 3 && v[1] >= 13)) {
            throw new Unsupported("CPython " + v[0] + "." + v[1] + " has no known layout");
        }
        Path file = readable(procRoot, pid, found);
        PythonSymbols syms;
        long bias;
        try {
            syms = PythonSymbols.read(file);
            bias = ElfLoadSegments.bias(syms.loadSegments(), found.start(), found.offset());
        } catch (ElfException e) {
            throw new Unsupported(found.path() + ": " + e.getMessage());
        }
        long rt = syms.vaddr(PythonSymbols.RUNTIME);
        long codeType = syms.vaddr(PythonSymbols.CODE_TYPE);
        long eval = syms.vaddr(PythonSymbols.EVAL);
        long evalSize = syms.size(PythonSymbols.EVAL);
        if (rt < 0 || codeType < 0 || eval < 0 || evalSize <= 0) {
            throw new Unsupported(found.path() + " lacks " + PythonSymbols.RUNTIME + ", " + PythonSymbols.CODE_TYPE + " or "
                    + PythonSymbols.EVAL);
        }
        List<CodeTable.Range> ranges = new ArrayList<>();
        for (MapEntry m : maps) {
            if (m.executable() && m.path().equals(found.path()) && m.inode() == found.inode()) {
                ranges.add(new CodeTable.Range(m.start(), m.end()));
            }
        }
        ProcessMemory mem = ProcessMemory.open(procRoot, pid);
        PythonLayout layout;
        try {
            layout = table.isPresent() ? table.get() : DebugOffsets.read(mem, rt + bias, v[0], v[1]); // 3.13+: its own
        } catch (IOException | Unsupported | RuntimeException e) {
            mem.close();
            throw e;
        }
        return Optional.of(new PythonProcess(runtime, pid, layout, mem, codeType + bias, exe, file, bias, rt + bias, eval,
                eval + evalSize, ranges, syms.loadSegments()));
    }

    private static Path readable(Path procRoot, int pid, MapEntry m) throws IOException {
        Path pidDir = procRoot.resolve(Integer.toString(pid));
        Path viaMapFiles = pidDir.resolve("map_files").resolve(m.mapFilesName());
        if (Files.isReadable(viaMapFiles)) {
            return viaMapFiles;
        }
        Path viaRoot = pidDir.resolve("root").resolve(m.path().substring(1));
        if (!m.deleted() && Files.isReadable(viaRoot)) {
            return viaRoot;
        }
        throw new IOException(m.path() + " of pid " + pid + " is not readable");
    }

    /** The layout in use (for tests: the walker's view of this process). */
    PythonLayout layout() {
        return layout;
    }

    /** {@code _PyRuntime}'s address in the process. */
    long runtimeAddress() {
        return runtimeAddress;
    }

    @Override
    public synchronized RuntimeFrame taggedFrame(FrameType type, long value) {
        if (type != FrameType.PYTHON) {
            return null;
        }
        PythonFrameStep.Error err = PythonFrameStep.error(value);
        long address = PythonFrameStep.codeAddress(value);
        if (address == 0) {
            return RuntimeFrame.of("[python: " + (err == null ? "unknown error" : err.text()) + "]", mapping);
        }
        CodeObjects.Code code = cache.get(address);
        if (code == null) {
            try {
                runtime.codeReads.incrementAndGet();
                code = codes.read(address);
            } catch (CodeObjects.NotCode e) {
                runtime.badCode.incrementAndGet();
                return RuntimeFrame.of("[python: not a code object]", mapping);
            } catch (IOException e) {
                return RuntimeFrame.of("[python: process gone]", mapping);
            }
            cache.put(address, code);
            cachedBytes += code.bytes();
            var it = cache.entrySet().iterator();
            while (cachedBytes > CODE_CACHE_BYTES && it.hasNext()) {
                cachedBytes -= it.next().getValue().bytes();
                it.remove();
            }
        }
        int index = PythonFrameStep.instructionIndex(value);
        int line = index < 0 ? 0 : layout.variant() == PythonLayout.Variant.V39
                ? LineTable.lnotab39(code.lineTable(), code.firstLine(), index) // f_lasti: a byte offset
                : LineTable.line311(code.lineTable(), code.firstLine(), index);
        return new RuntimeFrame(code.qualname(), code.filename(), line, List.of(), mapping);
    }

    @Override
    public RuntimeFrame code(long address, boolean callSite, long nowNanos) {
        return null; // an interpreter generates no code
    }

    @Override
    public synchronized CodeTable codeTable(long nowNanos) {
        if (table == null && !tableFailed) {
            try {
                UnwindTable file = UnwindTableBuilder.build(binary);
                List<long[]> loop = EvalRanges.find(binary, segments, evalLow, evalHigh, FdeRanges.read(binary), file);
                UnwindTable t = EvalTable.build("[python] pid " + pid, file, bias, loop, layout.kernelWords(runtimeAddress));
                table = new CodeTable(t, ranges, 1);
                LOG.log(System.Logger.Level.INFO, "python: pid " + pid + " (" + layout + "): interpreter table of " + t.rowCount() + " rows, the loop in " + loop.size() + " part(s)");
            } catch (EhFrameException | IOException | RuntimeException e) {
                tableFailed = true; // the binary's own table still walks it natively
                // A process that exited meanwhile (a churn's short interpreters) is no news: debug, not a warning each.
                LOG.log(e instanceof IOException ? System.Logger.Level.DEBUG : System.Logger.Level.WARNING,
                        "python: pid " + pid + ": no interpreter table (" + e.getMessage()
                        + "); its Python frames stay native");
            }
        }
        return table;
    }

    @Override
    public void close() {
        try {
            mem.close();
        } catch (IOException e) {
            // a file descriptor only
        }
    }
}
