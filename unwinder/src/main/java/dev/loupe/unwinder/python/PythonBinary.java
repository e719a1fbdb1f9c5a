package dev.loupe.unwinder.python;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfSource;
import dev.loupe.unwinder.elf.LoadSegment;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Optional;

/**
 * What this package needs from one CPython binary ({@code python3.X}, or {@code libpython3.X.so} for embedders), read
 * once per file and shared by every process that maps it: its version (from its name), the few symbols, and the
 * version's layout: a table for 3.9 to 3.12, the binary's own {@code _Py_DebugOffsets} for 3.13+ (the head of
 * {@code _PyRuntime}, statically initialized, so the file holds what a process's memory would), and the code objects
 * read from its initialized data ({@link StaticCodes}).
 */
record PythonBinary(int major, int minor, PythonSymbols symbols, PythonLayout layout, StaticCodes statics) {

    /**
     * Reads the binary {@code path} names (as a mapping does) from {@code file}.
     *
     * @throws PythonProcess.Unsupported no known layout for its version, or it lacks a symbol this package needs
     * @throws IOException it cannot be read now
     */
    static PythonBinary read(String path, Path file) throws IOException, PythonProcess.Unsupported {
        int[] v = PythonRuntime.version(path);
        if (v == null) {
            throw new PythonProcess.Unsupported(path + " is not named as a CPython binary");
        }
        Optional<PythonLayout> table = PythonLayout.forVersion(v[0], v[1]);
        if (table.isEmpty() && !(v[0] == 3 && DebugOffsets.FIELDS.containsKey(v[1]))) {
            throw new PythonProcess.Unsupported("CPython " + v[0] + "." + v[1] + " has no known layout");
        }
        PythonSymbols syms;
        try {
            syms = PythonSymbols.read(file);
        } catch (ElfException e) {
            throw new PythonProcess.Unsupported(path + ": " + e.getMessage());
        }
        long rt = syms.vaddr(PythonSymbols.RUNTIME);
        if (rt < 0 || syms.vaddr(PythonSymbols.CODE_TYPE) < 0 || syms.vaddr(PythonSymbols.EVAL) < 0
                || syms.size(PythonSymbols.EVAL) <= 0) {
            throw new PythonProcess.Unsupported(path + " lacks " + PythonSymbols.RUNTIME + ", " + PythonSymbols.CODE_TYPE
                    + " or " + PythonSymbols.EVAL);
        }
        PythonLayout layout = table.isPresent() ? table.get()
                : DebugOffsets.parse(initialBytes(file, syms, rt, 8 * DebugOffsets.words(v[1])), v[0], v[1]);
        return new PythonBinary(v[0], v[1], syms, layout, new StaticCodes(syms.loadSegments()));
    }

    /** {@code length} bytes the file initializes at virtual address {@code vaddr} (in a segment's file part). */
    private static ByteBuffer initialBytes(Path file, PythonSymbols syms, long vaddr, int length)
            throws IOException, PythonProcess.Unsupported {
        for (LoadSegment s : syms.loadSegments()) {
            if (vaddr >= s.vaddr() && vaddr + length <= s.vaddr() + s.fileSize()) {
                try (ElfSource src = ElfSource.open(file)) {
                    return ByteBuffer.wrap(src.bytes(s.offset() + (vaddr - s.vaddr()), length, PythonSymbols.RUNTIME))
                            .order(ByteOrder.LITTLE_ENDIAN);
                } catch (ElfException e) {
                    throw new PythonProcess.Unsupported(file + ": " + e.getMessage());
                }
            }
        }
        throw new PythonProcess.Unsupported(PythonSymbols.RUNTIME + " at 0x" + Long.toHexString(vaddr)
                + " is not initialized from the file");
    }

    long runtimeVaddr() {
        return symbols.vaddr(PythonSymbols.RUNTIME);
    }

    long codeTypeVaddr() {
        return symbols.vaddr(PythonSymbols.CODE_TYPE);
    }

    long evalLow() {
        return symbols.vaddr(PythonSymbols.EVAL);
    }

    long evalHigh() {
        return evalLow() + symbols.size(PythonSymbols.EVAL);
    }
}
