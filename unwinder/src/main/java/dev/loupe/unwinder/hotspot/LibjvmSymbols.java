package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfHeaders;
import dev.loupe.unwinder.elf.ElfSource;
import dev.loupe.unwinder.elf.SymbolScan;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The few libjvm.so symbols this package needs, by file virtual address: the exported {@code gHotSpot*} variables
 * ({@code .dynsym}) and, where {@code .symtab} survives, the C++ vtables ({@code _ZTV...}) of the code blob classes,
 * which tell blob kinds apart in JVMs whose CodeBlob has no kind field, and {@code StubCodeDesc::_list}, the stubs'
 * names.
 */
final class LibjvmSymbols {

    private final Map<String, Long> symbols;
    final List<dev.loupe.unwinder.elf.LoadSegment> loadSegments;

    private LibjvmSymbols(Map<String, Long> symbols, List<dev.loupe.unwinder.elf.LoadSegment> loadSegments) {
        this.symbols = symbols;
        this.loadSegments = loadSegments;
    }

    static LibjvmSymbols read(Path file) throws IOException, ElfException {
        try (ElfSource src = ElfSource.open(file)) {
            ElfHeaders h = ElfHeaders.read(src);
            Map<String, Long> out = new HashMap<>();
            SymbolScan.scan(src, h, (names, off, value, size) -> {
                if (SymbolScan.startsWith(names, off, "gHotSpot") || SymbolScan.startsWith(names, off, "_ZTV")
                        || SymbolScan.startsWith(names, off, HotSpotJvm.STUB_LIST_SYMBOL)) {
                    out.putIfAbsent(SymbolScan.name(names, off), value);
                }
            });
            return new LibjvmSymbols(out, h.loadSegments());
        }
    }

    /** The file virtual address of {@code name}, or -1. */
    long vaddr(String name) {
        Long v = symbols.get(name);
        return v == null ? -1 : v;
    }
}
