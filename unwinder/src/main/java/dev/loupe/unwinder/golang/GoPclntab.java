package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.elf.SectionHeader;
import dev.loupe.unwinder.elf.SymbolTable;

import java.io.IOException;
import java.nio.file.Path;
import java.util.AbstractList;
import java.util.List;
import java.util.Optional;

/**
 * The function table of a Go binary's {@code .gopclntab} (the runtime's own symbol table, kept by
 * {@code -ldflags=-s -w}): every function's name, entry and end (the next function's entry). Formats:
 * Go 1.2–1.15 (magic 0xfffffffb), 1.16–1.17 (0xfffffffa), 1.18–1.19 (0xfffffff0) and 1.20+ (0xfffffff1,
 * also Go 1.26 whose header's textStart is 0).
 *
 * <p>From 1.18 on, entries are offsets from the start of the text; the header's textStart may be
 * unrelocated (PIE, 0 since Go 1.26), so it is used only when it points into executable code, else the
 * {@code runtime.text} symbol, else the {@code .text} section's address.
 *
 * <p>Names are as the runtime reports them, which is not always the symbol table's name: ABI0 wrappers
 * carry their target's name (no {@code .abi0} suffix, so a name can appear twice), and Go's linker
 * stores names with brackets as {@code prefix[...]suffix} (type arguments, array types).
 */
public final class GoPclntab {
    /** A function as the pclntab records it; {@code end} is exclusive. */
    public record GoFunction(String name, long entry, long end) {}

    private static final int MAGIC_12 = 0xfffffffb;
    private static final int MAGIC_116 = 0xfffffffa;
    private static final int MAGIC_118 = 0xfffffff0;
    private static final int MAGIC_120 = 0xfffffff1;
    private static final int MAX_NAME = 64 << 10;

    private final String format;
    private final long textStart;
    private final SymbolTable table;

    private GoPclntab(String format, long textStart, SymbolTable table) {
        this.format = format;
        this.textStart = textStart;
        this.table = table;
    }

    /**
     * The pclntab of an ELF file: the {@code .gopclntab} section ({@code .data.rel.ro.gopclntab} in PIE
     * builds), or in a file without section headers a header found by magic in a non-executable segment;
     * empty if the file is not a Go binary.
     */
    public static Optional<GoPclntab> read(Path binary) throws GoBinaryException, IOException {
        return read(BinaryImage.open(binary));
    }

    static Optional<GoPclntab> read(BinaryImage img) throws GoBinaryException {
        SectionHeader s = img.section(".gopclntab");
        if (s == null) {
            s = img.section(".data.rel.ro.gopclntab");
        }
        SectionHeader text = img.section(".text");
        long sectionText = text == null ? 0 : text.addr();
        java.util.function.LongSupplier runtimeText = () -> runtimeTextSymbol(img); // only when the header's is unusable
        if (s != null) {
            return Optional.of(parse(img.path().toString(), img.contents(s), sectionText, runtimeText, img.loads()));
        }
        // Go's linker always names the section; only a file without section headers (sstrip) is searched,
        // so a stripped C binary costs no scan of its segments.
        return img.sections().isEmpty() ? searchSegments(img, sectionText, runtimeText) : Optional.empty();
    }

    /**
     * Parses pclntab bytes. When the header's textStart (1.18+) is not in an executable segment of
     * {@code loads}, entries count from {@code runtimeText} (the runtime.text symbol, 0 if unknown), else
     * from {@code sectionText} (the .text section's address).
     */
    static GoPclntab parse(String name, byte[] b, long sectionText, long runtimeText, List<LoadSegment> loads)
            throws GoBinaryException {
        return parse(name, b, sectionText, () -> runtimeText, loads);
    }

    private static GoPclntab parse(String name, byte[] b, long sectionText, java.util.function.LongSupplier runtimeTextSymbol,
                                   List<LoadSegment> loads) throws GoBinaryException {
        Reader r = new Reader(name, b);
        if (b.length < 16) {
            throw r.error("too short for a pclntab header (" + b.length + " bytes)");
        }
        int magic = r.u32(0);
        if (b[4] != 0 || b[5] != 0) {
            throw r.error("header padding is not zero");
        }
        int quantum = b[6] & 0xff;
        int ptr = b[7] & 0xff;
        if ((quantum != 1 && quantum != 2 && quantum != 4) || (ptr != 4 && ptr != 8)) {
            throw r.error("implausible header (pc quantum " + quantum + ", pointer size " + ptr + ")");
        }
        SymbolTable.Builder out = new SymbolTable.Builder();
        String format;
        long textStart = 0;
        switch (magic) {
            case MAGIC_12 -> {
                format = "go1.2";
                long nfunc = r.uptr(8, ptr);
                int functab = 8 + ptr;
                checkCount(r, nfunc, functab, 2L * ptr, b.length);
                for (int i = 0; i < nfunc; i++) {
                    long entry = r.uptr(functab + 2 * i * ptr, ptr);
                    long end = r.uptr(functab + (2 * i + 2) * ptr, ptr);
                    long funcoff = r.uptr(functab + (2 * i + 1) * ptr, ptr);
                    long nameoff = r.i32(r.index(funcoff + ptr, 4, "function " + i));
                    add(r, out, i, entry, end, nameoff);
                }
            }
            case MAGIC_116 -> {
                format = "go1.16";
                long nfunc = r.uptr(8, ptr);
                long funcname = r.uptr(8 + 2 * ptr, ptr);
                long pcln = r.uptr(8 + 6 * ptr, ptr);
                int functab = r.index(pcln, 0, "function table");
                checkCount(r, nfunc, functab, 2L * ptr, b.length);
                for (int i = 0; i < nfunc; i++) {
                    long entry = r.uptr(functab + 2 * i * ptr, ptr);
                    long end = r.uptr(functab + (2 * i + 2) * ptr, ptr);
                    long funcoff = r.uptr(functab + (2 * i + 1) * ptr, ptr);
                    long nameoff = r.i32(r.index(pcln + funcoff + ptr, 4, "function " + i));
                    add(r, out, i, entry, end, funcname + nameoff);
                }
            }
            case MAGIC_118, MAGIC_120 -> {
                format = magic == MAGIC_118 ? "go1.18" : "go1.20";
                long nfunc = r.uptr(8, ptr);
                long headerText = r.uptr(8 + 2 * ptr, ptr);
                long funcname = r.uptr(8 + 3 * ptr, ptr);
                long pcln = r.uptr(8 + 7 * ptr, ptr);
                int functab = r.index(pcln, 0, "function table");
                checkCount(r, nfunc, functab, 8, b.length);
                long runtimeText = inExecutable(loads, headerText) ? 0 : runtimeTextSymbol.getAsLong();
                textStart = inExecutable(loads, headerText) ? headerText : runtimeText != 0 ? runtimeText : sectionText;
                if (textStart == 0) {
                    throw r.error("the header's textStart is 0 and there is no runtime.text symbol or .text section to use");
                }
                for (int i = 0; i < nfunc; i++) {
                    long entry = textStart + Integer.toUnsignedLong(r.u32(functab + 8 * i));
                    long end = textStart + Integer.toUnsignedLong(r.u32(functab + 8 * i + 8));
                    long funcoff = Integer.toUnsignedLong(r.u32(functab + 8 * i + 4));
                    long nameoff = r.i32(r.index(pcln + funcoff + 4, 4, "function " + i));
                    add(r, out, i, entry, end, funcname + nameoff);
                }
            }
            default -> throw r.error(String.format("unknown pclntab magic 0x%08x (not a Go 1.2+ pclntab)", magic));
        }
        return new GoPclntab(format, textStart, out.build());
    }

    private static void checkCount(Reader r, long nfunc, int functab, long entrySize, int length) throws GoBinaryException {
        // n entries plus the closing end pc must fit: bounds the loop by the section's size.
        if (nfunc < 0 || nfunc > (length - (long) functab) / entrySize) {
            throw r.error("function count " + Long.toUnsignedString(nfunc) + " does not fit in " + length + " bytes");
        }
    }

    private static void add(Reader r, SymbolTable.Builder out, int i, long entry, long end, long nameAt) throws GoBinaryException {
        if (Long.compareUnsigned(end, entry) < 0) {
            throw r.error("function " + i + " ends (0x" + Long.toHexString(end) + ") before its entry (0x" + Long.toHexString(entry)
                    + "): the table is not sorted");
        }
        int from = r.index(nameAt, 1, "name of function " + i);
        int to = from;
        byte[] b = r.b;
        int stop = (int) Math.min(b.length, (long) from + MAX_NAME);
        while (to < stop && b[to] != 0) {
            to++;
        }
        if (to == b.length) {
            throw r.error("name of function " + i + " is not terminated");
        }
        out.add(entry, end - entry, SymbolTable.Builder.GLOBAL, b, from, to - from);
    }

    private static boolean inExecutable(List<LoadSegment> loads, long vaddr) {
        if (vaddr == 0) {
            return false;
        }
        for (LoadSegment s : loads) {
            if (s.executable() && Long.compareUnsigned(vaddr, s.vaddr()) >= 0 && Long.compareUnsigned(vaddr - s.vaddr(), s.memSize()) < 0) {
                return true;
            }
        }
        return false;
    }

    private static long runtimeTextSymbol(BinaryImage img) {
        // Only .symtab names it; a stripped binary has none (then the header or .text serves).
        if (img.section(".symtab") == null) {
            return 0;
        }
        try {
            dev.loupe.unwinder.elf.ElfFile elf = dev.loupe.unwinder.elf.ElfFile.open(img.path());
            SymbolTable t = elf.symbols();
            for (int i = 0; i < t.size(); i++) {
                if (t.name(i).equals("runtime.text")) {
                    return t.start(i);
                }
            }
        } catch (Exception e) {
            // unreadable symbols: fall back to the header or .text
        }
        return 0;
    }

    /** For binaries without section headers: a pclntab header at a 32-byte boundary in a read-only segment. */
    private static Optional<GoPclntab> searchSegments(BinaryImage img, long sectionText, java.util.function.LongSupplier runtimeText)
            throws GoBinaryException {
        for (LoadSegment s : img.loads()) {
            if (s.executable() || s.fileSize() <= 16) {
                continue;
            }
            int len = (int) Math.min(s.fileSize(), BinaryImage.MAX_READ);
            byte[] seg = img.read(s.offset(), len, "segment at 0x" + Long.toHexString(s.vaddr()));
            for (int o = 0; o + 16 <= seg.length; o += 32) {
                int m = (seg[o] & 0xff) | (seg[o + 1] & 0xff) << 8 | (seg[o + 2] & 0xff) << 16 | (seg[o + 3] & 0xff) << 24;
                if ((m == MAGIC_118 || m == MAGIC_120 || m == MAGIC_116 || m == MAGIC_12) && seg[o + 4] == 0 && seg[o + 5] == 0
                        && seg[o + 6] == 1 && seg[o + 7] == 8) {
                    byte[] tab = java.util.Arrays.copyOfRange(seg, o, seg.length);
                    try {
                        GoPclntab t = parse(img.path().toString(), tab, sectionText, runtimeText, img.loads());
                        if (t.table.size() > 0) {
                            return Optional.of(t);
                        }
                    } catch (GoBinaryException e) {
                        // a false match of the magic: keep looking
                    }
                }
            }
        }
        return Optional.empty();
    }

    /** "go1.2", "go1.16", "go1.18" or "go1.20": the pclntab layout (not the exact Go version). */
    public String format() {
        return format;
    }

    /** The address 1.18+ entry offsets count from (0 for older formats). */
    public long textStart() {
        return textStart;
    }

    public int size() {
        return table.size();
    }

    /** The functions in address order (views over the table: no copy is kept). */
    public List<GoFunction> functions() {
        return new AbstractList<>() {
            @Override
            public GoFunction get(int i) {
                return new GoFunction(table.name(i), table.start(i), table.start(i) + table.symbolSize(i));
            }

            @Override
            public int size() {
                return table.size();
            }
        };
    }

    /** The function containing {@code vaddr} (link-time address), if any. */
    public Optional<GoFunction> lookup(long vaddr) {
        String n = table.lookup(vaddr);
        if (n == null) {
            return Optional.empty();
        }
        int lo = 0;
        int hi = table.size() - 1;
        while (lo < hi) { // the greatest start <= vaddr: the one lookup found
            int mid = (lo + hi + 1) >>> 1;
            if (Long.compareUnsigned(table.start(mid), vaddr) <= 0) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return Optional.of(functions().get(lo));
    }

    /** The functions as a compact symbol table (names by address), as the symbolizer keeps them. */
    public SymbolTable symbolTable() {
        return table;
    }

    /** Bounds-checked little-endian reads over the pclntab bytes. */
    private static final class Reader {
        final String name;
        final byte[] b;

        Reader(String name, byte[] b) {
            this.name = name;
            this.b = b;
        }

        int index(long off, int len, String what) throws GoBinaryException {
            if (off < 0 || off > b.length - (long) len) {
                throw error(what + " at offset " + off + " lies outside the " + b.length + "-byte pclntab");
            }
            return (int) off;
        }

        int u32(int o) throws GoBinaryException {
            index(o, 4, "field");
            return (b[o] & 0xff) | (b[o + 1] & 0xff) << 8 | (b[o + 2] & 0xff) << 16 | (b[o + 3] & 0xff) << 24;
        }

        long i32(int o) throws GoBinaryException {
            return u32(o);
        }

        long uptr(long o, int ptr) throws GoBinaryException {
            int i = index(o, ptr, "field");
            long lo = Integer.toUnsignedLong(u32(i));
            return ptr == 4 ? lo : lo | (long) u32(i + 4) << 32;
        }

        GoBinaryException error(String what) {
            return new GoBinaryException(name + ": .gopclntab: " + what);
        }
    }
}
