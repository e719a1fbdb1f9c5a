package dev.loupe.unwinder.elf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Every defined, named symbol of a file's .symtab and .dynsym, read once with bounds checked: what the runtimes look
 * up by name in their interpreter's or VM's library (exported data, vtables). A visitor picks the names it wants by a
 * cheap test on the name's bytes before a String is made.
 */
public final class SymbolScan {
    private static final int SYM_SIZE = 24;
    private static final long MAX_TABLE = 64L << 20;

    /** One symbol: its name's bytes at {@code nameOff} of {@code names} (NUL-terminated), value, size, section index. */
    public interface Visitor {
        void symbol(byte[] names, int nameOff, long value, long size) throws IOException;
    }

    private SymbolScan() {}

    /** Visits every symbol with a name, a value and a section, in .dynsym and .symtab order. */
    public static void scan(ElfSource src, ElfHeaders h, Visitor visitor) throws IOException, ElfException {
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
                visitor.symbol(names, nameOff, value, syms.getLong(e + 16));
            }
        }
    }

    /** The NUL-terminated name at {@code off}. */
    public static String name(byte[] names, int off) {
        int end = off;
        while (end < names.length && names[end] != 0) {
            end++;
        }
        return new String(names, off, end - off, StandardCharsets.ISO_8859_1);
    }

    /** Whether the name at {@code off} starts with {@code prefix} (ASCII). */
    public static boolean startsWith(byte[] names, int off, String prefix) {
        if (off + prefix.length() > names.length) {
            return false;
        }
        for (int i = 0; i < prefix.length(); i++) {
            if (names[off + i] != prefix.charAt(i)) {
                return false;
            }
        }
        return true;
    }
}
