package dev.loupe.unwinder.python;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfHeaders;
import dev.loupe.unwinder.elf.ElfSource;
import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.elf.SectionHeader;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The few symbols of a CPython binary ({@code python3.X} or {@code libpython3.X.so}) this package needs, by file
 * virtual address and size, from {@code .dynsym} and {@code .symtab} where it survives: {@code _PyRuntime} (the
 * runtime state), {@code PyCode_Type} (what makes an object a code object) and {@code _PyEval_EvalFrameDefault} (the
 * interpreter loop whose native frames the Python frames replace).
 */
record PythonSymbols(Map<String, long[]> symbols, List<LoadSegment> loadSegments) {
    static final String RUNTIME = "_PyRuntime";
    static final String CODE_TYPE = "PyCode_Type";
    static final String EVAL = "_PyEval_EvalFrameDefault";
    private static final Set<String> WANTED = Set.of(RUNTIME, CODE_TYPE, EVAL);
    private static final int SYM_SIZE = 24;
    private static final long MAX_TABLE = 64L << 20;

    static PythonSymbols read(Path file) throws IOException, ElfException {
        try (ElfSource src = ElfSource.open(file)) {
            ElfHeaders h = ElfHeaders.read(src);
            Map<String, long[]> out = new HashMap<>();
            List<SectionHeader> sections = h.sections();
            for (SectionHeader s : sections) {
                if ((s.type() != SectionHeader.SHT_DYNSYM && s.type() != SectionHeader.SHT_SYMTAB) || !s.hasContents()) {
                    continue;
                }
                if (s.entsize() != SYM_SIZE || s.size() > MAX_TABLE || s.link() <= 0 || s.link() >= sections.size()) {
                    throw src.error(s.name() + ": unexpected entry size, size or link");
                }
                SectionHeader strs = sections.get(s.link());
                if (strs.size() > MAX_TABLE || !strs.hasContents()) {
                    throw src.error(s.name() + ": string table " + strs.name() + " unusable");
                }
                src.checkRange(s.offset(), s.size(), s.name());
                src.checkRange(strs.offset(), strs.size(), strs.name());
                ByteBuffer syms = src.view(s.offset(), (int) s.size(), s.name()).order(ByteOrder.LITTLE_ENDIAN);
                byte[] names = src.bytes(strs.offset(), (int) strs.size(), strs.name());
                int base = syms.position();
                long count = s.size() / SYM_SIZE;
                for (long i = 1; i < count; i++) {
                    int e = base + (int) (i * SYM_SIZE);
                    int nameOff = syms.getInt(e);
                    long value = syms.getLong(e + 8);
                    long size = syms.getLong(e + 16);
                    int shndx = Short.toUnsignedInt(syms.getShort(e + 6));
                    if (nameOff <= 0 || nameOff >= names.length || value == 0 || shndx == 0 || names[nameOff] != '_' && names[nameOff] != 'P') {
                        continue;
                    }
                    int end = nameOff;
                    while (end < names.length && names[end] != 0) {
                        end++;
                    }
                    String name = new String(names, nameOff, end - nameOff, StandardCharsets.ISO_8859_1);
                    if (WANTED.contains(name)) {
                        out.putIfAbsent(name, new long[] {value, size});
                    }
                }
            }
            return new PythonSymbols(Map.copyOf(out), h.loadSegments());
        }
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
