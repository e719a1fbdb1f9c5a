package dev.loupe.unwinder.dwarf;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.fuzz.FuzzInput;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Fuzz target for the inline reader: {@link DebugInfo#open} and {@link DebugInfo#chain} over {@code .debug_info},
 * {@code .debug_abbrev}, {@code .debug_rnglists} / {@code .debug_ranges} and {@code .debug_str}. Input: an address to
 * look up, then abbrev, ranges and str (two-byte lengths each), a flag and .debug_aranges if it is set, the rest
 * .debug_info. A {@link DwarfException} naming
 * the section is what bad input must give; anything else escaping, a chain past the budget or without its functions
 * is a finding.
 */
public final class DebugInfoFuzzTarget {
    private static final long BUDGET = 1 << 20;

    private DebugInfoFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        long address = in.i64();
        ByteBuffer abbrev = ByteBuffer.wrap(in.longBytes(16384));
        ByteBuffer ranges = ByteBuffer.wrap(in.longBytes(4096));
        ByteBuffer str = ByteBuffer.wrap(in.longBytes(4096));
        ByteBuffer aranges = in.bool() ? ByteBuffer.wrap(in.longBytes(4096)) : null;
        ByteBuffer info = ByteBuffer.wrap(in.rest());
        // Both range sections get the same bytes: a unit's version picks the one it reads.
        DebugInfo.Sections s = new DebugInfo.Sections(info, abbrev, str, null, null, null, ranges, ranges, aranges);
        try {
            DebugInfo d = DebugInfo.open("fuzz", s, BUDGET);
            for (long a : new long[] {address, address + 1, address - 1}) {
                DebugInfo.Chain c = d.chain(a);
                if (c != null) {
                    for (DebugInfo.Scope scope : c.scopes()) {
                        if (scope.name() == null || scope.callLine() < 0 || scope.declLine() < 0) {
                            throw new IllegalStateException("bad scope " + scope);
                        }
                    }
                }
            }
            if (d.bytes() > BUDGET) {
                throw new IllegalStateException(d.bytes() + " bytes held, over the " + BUDGET + "-byte budget");
            }
        } catch (DwarfException e) {
            if (e.getMessage() == null || !e.getMessage().startsWith("fuzz: .debug_")) {
                throw new IllegalStateException("error without the file and section named: " + e.getMessage(), e);
            }
        }
    }

    /** The inline test program's sections as DWARF 4 and DWARF 5, looking up a pc of hot. */
    public static void writeSeeds(Path dir) throws Exception {
        Path tmp = Files.createTempDirectory("debuginfo-seeds");
        for (String v : List.of("dwarf-4", "dwarf-5")) {
            Path bin = TestPrograms.compile(tmp, "inl_" + v.replace('-', '_'), InlineChainTest.SOURCE, "-O2", "-g" + v);
            ElfFile elf = ElfFile.open(bin);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteBuffer addr = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(inlinedPc(bin, elf));
            out.write(addr.array());
            for (String section : List.of(".debug_abbrev", v.equals("dwarf-4") ? ".debug_ranges" : ".debug_rnglists", ".debug_str")) {
                byte[] b = bytes(elf, section);
                out.write(b.length); // FuzzInput.u16: little-endian
                out.write(b.length >> 8);
                out.write(b);
            }
            byte[] aranges = bytes(elf, ".debug_aranges");
            out.write(1);
            out.write(aranges.length);
            out.write(aranges.length >> 8);
            out.write(aranges);
            out.write(bytes(elf, ".debug_info"));
            Files.write(dir.resolve("seed-" + v), out.toByteArray());
        }
    }

    /** The first pc of hot where mix is inlined in step in hot. */
    private static long inlinedPc(Path bin, ElfFile elf) throws Exception {
        DebugInfo d = DebugInfo.open("seed", new DebugInfo.Sections(elf.section(".debug_info").orElseThrow(),
                elf.section(".debug_abbrev").orElseThrow(), elf.section(".debug_str").orElse(null), null, null, null,
                elf.section(".debug_ranges").orElse(null), elf.section(".debug_rnglists").orElse(null),
                elf.section(".debug_aranges").orElse(null)), BUDGET);
        long hot = TestPrograms.nmAddress(bin, "hot");
        for (long a = hot; a < hot + 256; a++) {
            DebugInfo.Chain c = d.chain(a);
            if (c != null && c.scopes().size() == 3) {
                return a;
            }
        }
        throw new IllegalStateException("no pc of hot with mix inlined in step");
    }

    private static byte[] bytes(ElfFile elf, String section) throws Exception {
        ByteBuffer b = elf.section(section).orElse(ByteBuffer.allocate(0));
        byte[] out = new byte[b.remaining()];
        b.get(b.position(), out);
        return out;
    }
}
