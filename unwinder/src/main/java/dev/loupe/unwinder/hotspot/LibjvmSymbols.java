package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfHeaders;
import dev.loupe.unwinder.elf.ElfSource;
import dev.loupe.unwinder.elf.SectionHeader;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The few libjvm.so symbols this package needs, by file virtual address: the exported {@code gHotSpot*} variables
 * ({@code .dynsym}) and, where {@code .symtab} survives, the C++ vtables ({@code _ZTV...}) of the code blob classes,
 * which tell blob kinds apart in JVMs whose CodeBlob has no kind field.
 */
final class LibjvmSymbols {
    private static final int SYM_SIZE = 24;
    private static final long MAX_TABLE = 64L << 20;

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
                    int shndx = Short.toUnsignedInt(syms.getShort(e + 6));
                    if (nameOff <= 0 || nameOff >= names.length || value == 0 || shndx == 0) {
                        continue;
                    }
                    if (!startsWith(names, nameOff, "gHotSpot") && !startsWith(names, nameOff, "_ZTV")) {
                        continue;
                    }
                    int end = nameOff;
                    while (end < names.length && names[end] != 0) {
                        end++;
                    }
                    out.putIfAbsent(new String(names, nameOff, end - nameOff, StandardCharsets.ISO_8859_1), value);
                }
            }
            return new LibjvmSymbols(out, h.loadSegments());
        }
    }

    private static boolean startsWith(byte[] b, int off, String prefix) {
        if (off + prefix.length() > b.length) {
            return false;
        }
        for (int i = 0; i < prefix.length(); i++) {
            if (b[off + i] != prefix.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    /** The file virtual address of {@code name}, or -1. */
    long vaddr(String name) {
        Long v = symbols.get(name);
        return v == null ? -1 : v;
    }
}
