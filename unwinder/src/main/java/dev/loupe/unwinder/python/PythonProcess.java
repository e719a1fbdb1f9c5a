package dev.loupe.unwinder.python;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfLoadSegments;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcessMemory;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import dev.loupe.unwinder.runtime.RuntimeProcess;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One CPython process: the names of its Python frames. (The walker's table for its interpreter binary is the binary's,
 * shared by every process that maps it: {@link PythonRuntime#fileTable}.) A code object is read once per address from
 * {@code /proc/PID/mem} and kept under a byte budget ({@link #CODE_CACHE_BYTES}); a frame whose code pointer is not a
 * code object (freed, reused, a layout that does not match) is named as such, never as another function.
 *
 * <p>Thread-safe: the symbolizers and the unwind table thread share it, under this object's lock.
 */
final class PythonProcess implements RuntimeProcess {
    static final long CODE_CACHE_BYTES = 8L << 20;

    /** The process runs a CPython this package cannot read (version or binary): its frames stay native. */
    static final class Unsupported extends Exception {
        Unsupported(String what) {
            super(what, null, false, false);
        }
    }

    private final PythonRuntime runtime;
    private final PythonLayout layout;
    private final ProcessMemory mem;
    private final CodeObjects codes;
    private final String mapping;
    private final long runtimeAddress;
    private final long bias; // the binary's load bias: a static code object's address less it is the file's
    private final StaticCodes statics;
    private long cachedBytes;
    private final Map<Long, CodeObjects.Code> cache = new LinkedHashMap<>(256, 0.75f, true);

    private PythonProcess(PythonRuntime runtime, PythonLayout layout, ProcessMemory mem, long codeType, String exe,
                          long runtimeAddress, long bias, StaticCodes statics) {
        this.runtime = runtime;
        this.layout = layout;
        this.mem = mem;
        this.codes = new CodeObjects(mem, layout.code(), codeType);
        this.mapping = "[python] " + exe;
        this.runtimeAddress = runtimeAddress;
        this.bias = bias;
        this.statics = statics;
    }

    /**
     * Opens process {@code pid}'s CPython: among its {@code executable} mappings, the binary that exports
     * {@code _PyRuntime} (libpython over the executable when both are mapped), read once per file by the runtime.
     *
     * @throws Unsupported a CPython without a known layout, or whose binary lacks a symbol this needs
     * @throws IOException the process is gone or cannot be read
     */
    static Optional<PythonProcess> open(PythonRuntime runtime, Path procRoot, int pid, String exe, List<MapEntry> executable)
            throws IOException, Unsupported {
        MapEntry found = null;
        for (MapEntry m : executable) {
            if (m.executable() && m.fileBacked() && runtime.interpreter(m)
                    && (found == null || m.path().contains("libpython"))) {
                found = m;
            }
        }
        if (found == null) {
            return Optional.empty();
        }
        PythonBinary bin = runtime.cachedBinary(found);
        if (bin == null) {
            bin = runtime.binary(found, found.readableFile(procRoot, pid));
        }
        long bias;
        try {
            bias = ElfLoadSegments.bias(bin.symbols().loadSegments(), found.start(), found.offset());
        } catch (ElfException e) {
            throw new Unsupported(found.path() + ": " + e.getMessage());
        }
        // Opened at the first code object this process holds itself: a short run's frames may all be the binary's own.
        ProcessMemory mem = ProcessMemory.openOnRead(procRoot, pid);
        return Optional.of(new PythonProcess(runtime, bin.layout(), mem, bin.codeTypeVaddr() + bias, exe,
                bin.runtimeVaddr() + bias, bias, bin.statics()));
    }

    /** A process read through {@code mem} with a layout given (for tests: a fake process's memory). */
    static PythonProcess over(PythonRuntime runtime, PythonLayout layout, ProcessMemory mem, long codeType, String exe,
                              long runtimeAddress) {
        return over(runtime, layout, mem, codeType, exe, runtimeAddress, 0, StaticCodes.NONE);
    }

    /** As above, with the binary's load bias and its static code objects (for tests: processes sharing a binary). */
    static PythonProcess over(PythonRuntime runtime, PythonLayout layout, ProcessMemory mem, long codeType, String exe,
                              long runtimeAddress, long bias, StaticCodes statics) {
        return new PythonProcess(runtime, layout, mem, codeType, exe, runtimeAddress, bias, statics);
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
            boolean isStatic = statics.holds(address - bias);
            code = isStatic ? statics.get(address - bias) : null;
            if (code != null) {
                runtime.staticCodeHits.incrementAndGet();
            } else {
                try {
                    runtime.codeReads.incrementAndGet();
                    code = codes.read(address);
                } catch (CodeObjects.NotCode e) {
                    runtime.badCode.incrementAndGet();
                    return RuntimeFrame.of("[python: not a code object]", mapping);
                } catch (IOException e) {
                    return RuntimeFrame.of("[python: process gone]", mapping);
                }
                if (isStatic) {
                    statics.put(address - bias, code);
                }
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
        int line = layout.line(code.lineTable(), code.firstLine(), index);
        return RuntimeFrame.at(code.qualname(), code.filename(), line, code.firstLine(), mapping);
    }

    @Override
    public RuntimeFrame code(long address, boolean callSite, long nowNanos) {
        return null; // an interpreter generates no code
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
