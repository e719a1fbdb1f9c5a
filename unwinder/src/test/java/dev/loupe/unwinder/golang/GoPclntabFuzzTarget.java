package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.elf.SymbolTable;
import dev.loupe.unwinder.fuzz.FuzzInput;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Fuzz target for {@link GoPclntab#parse}: the function table of a Go binary's {@code .gopclntab} (every Go
 * layout), which the symbolizer reads from any process's executable to name stripped Go code. Input: a flags
 * byte, the .text address and runtime.text symbol the caller would pass, up to three PT_LOAD segments
 * (vaddr, size, flags), then the section's bytes. {@link GoBinaryException} is what bad input must give;
 * anything else escaping, a table whose functions are out of order or named with a NUL, or a lookup that
 * disagrees with the table is a finding. The same bytes go to {@link GoLineTable} (every layout's line tables): it
 * must fail with a GoBinaryException or answer every pc (no exception, no hang; a pc it cannot read has no lines).
 */
public final class GoPclntabFuzzTarget {
    private GoPclntabFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        in.u8(); // reserved: keeps the layout of kept inputs if a mode is added
        long sectionText = in.i64();
        long runtimeText = in.i64();
        int nLoads = in.intIn(0, 3);
        List<LoadSegment> loads = new ArrayList<>();
        for (int i = 0; i < nLoads; i++) {
            long vaddr = in.i64();
            long size = in.i64();
            loads.add(new LoadSegment(0, vaddr, size, size, in.u8()));
        }
        byte[] tab = in.rest();
        lines(tab, sectionText);
        GoPclntab t;
        try {
            t = GoPclntab.parse("fuzz", tab, sectionText, runtimeText, loads);
        } catch (GoBinaryException e) {
            if (e.getMessage() == null || !e.getMessage().startsWith("fuzz: .gopclntab: ")) {
                throw new IllegalStateException("error without the file and section named: " + e.getMessage(), e);
            }
            return;
        }
        check(t, tab.length);
    }

    private static void lines(byte[] tab, long textStart) {
        GoLineTable lines;
        try {
            lines = GoLineTable.parse("fuzz", ByteBuffer.wrap(tab), textStart);
        } catch (GoBinaryException e) {
            if (e.getMessage() == null || !e.getMessage().startsWith("fuzz: .gopclntab lines: ")) {
                throw new IllegalStateException("error without the file and section named: " + e.getMessage(), e);
            }
            return;
        }
        // Pcs near the text start and near the functions' entries (1.2-1.17: absolute; 1.18+: offsets).
        ByteBuffer b = ByteBuffer.wrap(tab).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 32 && 16 + 16 * i + 8 <= tab.length; i++) {
            for (long pc : new long[] {textStart + 17L * i, b.getLong(16 + 16 * i), b.getLong(16 + 16 * i) + 3}) {
                for (dev.loupe.unwinder.lines.SourceLine l : lines.lines(pc)) {
                    if (l.function() == null || l.line() < 0) {
                        throw new IllegalStateException("line " + l + " at 0x" + Long.toHexString(pc));
                    }
                }
            }
        }
    }

    static void check(GoPclntab t, int bytes) {
        if (!List.of("go1.2", "go1.16", "go1.18", "go1.20").contains(t.format())) {
            throw new IllegalStateException("format " + t.format());
        }
        if ((t.format().equals("go1.18") || t.format().equals("go1.20")) == (t.textStart() == 0)) {
            throw new IllegalStateException(t.format() + " with textStart 0x" + Long.toHexString(t.textStart()));
        }
        if (t.size() > bytes / 8) {
            throw new IllegalStateException(t.size() + " functions from " + bytes + " bytes");
        }
        SymbolTable s = t.symbolTable();
        if (s.size() != t.size()) {
            throw new IllegalStateException("symbol table of " + s.size() + " for " + t.size() + " functions");
        }
        List<GoPclntab.GoFunction> fns = t.functions();
        for (int i = 0; i < fns.size(); i++) {
            GoPclntab.GoFunction f = fns.get(i);
            if (i > 0 && Long.compareUnsigned(fns.get(i - 1).entry(), f.entry()) >= 0) {
                throw new IllegalStateException("functions out of order at " + i + ": " + fns.get(i - 1) + ", " + f);
            }
            if (f.name().indexOf('\0') >= 0) {
                throw new IllegalStateException("a name with a NUL: " + f);
            }
            if (i < 64 || i == fns.size() - 1) {
                Optional<GoPclntab.GoFunction> at = t.lookup(f.entry());
                if (at.isEmpty() || at.get().entry() != f.entry() || !at.get().name().equals(f.name())) {
                    throw new IllegalStateException("lookup of " + f + "'s entry found " + at);
                }
                if (Long.compareUnsigned(f.end(), f.entry()) > 0) {
                    Optional<GoPclntab.GoFunction> last = t.lookup(f.end() - 1);
                    if (!java.util.Objects.equals(last.map(GoPclntab.GoFunction::name).orElse(null), s.lookup(f.end() - 1))) {
                        throw new IllegalStateException("lookup of " + f + "'s last byte found " + last + ", the table "
                                + s.lookup(f.end() - 1));
                    }
                }
            }
        }
    }

    /** Every layout of {@link GoSeeds#FUNCS}; entries of 1.18+ from the header's textStart, runtime.text or .text. */
    public static void writeSeeds(Path dir) throws Exception {
        long text = 0x401000;
        List<LoadSegment> exec = List.of(new LoadSegment(0x1000, text, 0x10000, 0x10000, 5));
        write(dir, "go1.2", text, 0, exec, GoSeeds.pclntab("go1.2", GoSeeds.FUNCS, text, 0));
        write(dir, "go1.16", text, 0, exec, GoSeeds.pclntab("go1.16", GoSeeds.FUNCS, text, 0));
        write(dir, "go1.2-lines", text, 0, exec, GoSeeds.linesPclntab("go1.2", text));
        write(dir, "go1.16-lines", text, 0, exec, GoSeeds.linesPclntab("go1.16", text));
        write(dir, "go1.18-header-text", text, 0, exec, GoSeeds.pclntab("go1.18", GoSeeds.FUNCS, text, text));
        write(dir, "go1.20-runtime-text", text, text + 0x20, exec, GoSeeds.pclntab("go1.20", GoSeeds.FUNCS, text, 0));
        write(dir, "go1.20-pie-section-text", 0x1000, 0, List.of(new LoadSegment(0x1000, 0x1000, 0x8000, 0x8000, 5)),
                GoSeeds.pclntab("go1.20", GoSeeds.FUNCS, 0x1000, text));
    }

    private static void write(Path dir, String name, long sectionText, long runtimeText, List<LoadSegment> loads, byte[] tab)
            throws Exception {
        ByteBuffer b = ByteBuffer.allocate(1 + 8 + 8 + 1 + loads.size() * 17 + tab.length).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 0).putLong(sectionText).putLong(runtimeText).put((byte) loads.size());
        for (LoadSegment l : loads) {
            b.putLong(l.vaddr()).putLong(l.memSize()).put((byte) l.flags());
        }
        b.put(tab);
        Files.write(dir.resolve("seed-" + name), b.array());
    }
}
