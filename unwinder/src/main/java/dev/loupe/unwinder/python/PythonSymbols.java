package dev.loupe.unwinder.python;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfHeaders;
import dev.loupe.unwinder.elf.ElfSource;
import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.elf.SymbolScan;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The few symbols of a CPython binary ({@code python3.X} or {@code libpython3.X.so}) this package needs, by file
 * virtual address and size, from {@code .dynsym} and {@code .symtab} where it survives: {@code _PyRuntime} (the
 * runtime state), {@code PyCode_Type} (what makes an object a code object) and {@code _PyEval_EvalFrameDefault} (the
 * interpreter loop whose native frames the Python frames replace); and {@code Py_Version} (3.11+: the version's
 * {@code PY_VERSION_HEX}, a constant in read-only data), where it is.
 */
record PythonSymbols(Map<String, long[]> symbols, List<LoadSegment> loadSegments) {
    static final String RUNTIME = "_PyRuntime";
    static final String CODE_TYPE = "PyCode_Type";
    static final String EVAL = "_PyEval_EvalFrameDefault";
    static final String VERSION = "Py_Version";
    private static final Set<String> WANTED = Set.of(RUNTIME, CODE_TYPE, EVAL, VERSION);

    static PythonSymbols read(Path file) throws IOException, ElfException {
        try (ElfSource src = ElfSource.open(file)) {
            ElfHeaders h = ElfHeaders.read(src);
            Map<String, long[]> out = new HashMap<>();
            SymbolScan.scan(src, h, (names, off, value, size) -> {
                if (names[off] == '_' || names[off] == 'P') {
                    String name = SymbolScan.name(names, off);
                    if (WANTED.contains(name)) {
                        out.putIfAbsent(name, new long[] {value, size});
                    }
                }
            });
            return new PythonSymbols(Map.copyOf(out), h.loadSegments());
        }
    }

    /** Whether the binary is a CPython interpreter: it defines the runtime state and the interpreter loop. */
    boolean interpreter() {
        return vaddr(RUNTIME) >= 0 && vaddr(EVAL) >= 0;
    }

    /** The file virtual address of {@code name}, or -1. */
    long vaddr(String name) {
        long[] v = symbols.get(name);
        return v == null ? -1 : v[0];
    }

    long size(String name) {
        long[] v = symbols.get(name);
        return v == null ? 0 : v[1];
    }
}
