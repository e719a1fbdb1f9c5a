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
 * {@code .debug_abbrev}, {@code .debug_rnglists} / {@code .debug_ranges} and {@code .debug_str}, with a supplementary
 * file's (dwz's alternate file: DW_FORM_GNU_ref_alt / strp_alt, DWARF 5 ref_sup4 / strp_sup point into it). Input: an
 * address to look up, then abbrev, ranges and str (two-byte lengths each), a flag and .debug_aranges if it is set, a
 * flag and the supplementary file's abbrev, str and info if it is set (also read as a skeleton unit's split file),
 * the rest .debug_info. A {@link DwarfException} naming
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
        DebugInfo.Sections sup = null;
        if (in.bool()) {
            ByteBuffer supAbbrev = ByteBuffer.wrap(in.longBytes(4096));
            ByteBuffer supStr = ByteBuffer.wrap(in.longBytes(4096));
            ByteBuffer supInfo = ByteBuffer.wrap(in.longBytes(8192));
            sup = new DebugInfo.Sections(supInfo, supAbbrev, supStr, null, null, null, null, null, null);
        }
        ByteBuffer info = ByteBuffer.wrap(in.rest());
        // Both range sections (and .debug_addr) get the same bytes: a unit's version and forms pick the one read.
        DebugInfo.Sections s = new DebugInfo.Sections(info, abbrev, str, null, null, ranges, ranges, ranges, aranges);
        try {
            DebugInfo d = DebugInfo.open("fuzz", s, BUDGET * 3 / 4);
            if (sup != null) {
                d.supplementary(DebugInfo.openSupplementary("fuzz", sup, BUDGET / 4));
                // The same bytes serve as a skeleton unit's split file (.dwo), with its strings' offsets from the str bytes.
                DebugInfo.Sections dwo = new DebugInfo.Sections(sup.info(), sup.abbrev(), sup.str(), null, sup.str(), null, null,
                        ranges, null);
                d.splitFiles((dwoName, compDir, dwoId, max) -> new DebugInfo.SplitFile("fuzz", dwo));
            }
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

    /**
     * The inline test program's sections as DWARF 4 and DWARF 5, looking up a pc of hot; and after dwz -m of two copies
     * (DWARF 4 with GNU_ref_alt, DWARF 5 with --dwarf-5's ref_sup4), the common file's sections as the supplementary.
     */
    public static void writeSeeds(Path dir) throws Exception {
        Path tmp = Files.createTempDirectory("debuginfo-seeds");
        for (String v : List.of("dwarf-4", "dwarf-5", "dwz-4", "dwz-5", "split-4", "split-5")) {
            String g = "-gdwarf-" + v.charAt(v.length() - 1);
            Path bin = TestPrograms.compile(tmp, "inl_" + v.replace('-', '_'), InlineChainTest.SOURCE, "-O2", g);
            long pc = inlinedPc(bin, ElfFile.open(bin));
            ElfFile common = null;
            if (v.startsWith("split")) { // the same code with -gsplit-dwarf: the .dwo as the supplementary bytes
                bin = TestPrograms.compile(tmp, "inl_" + v.replace('-', '_'), InlineChainTest.SOURCE, "-O2", g, "-gsplit-dwarf");
                try (var files = Files.list(tmp)) {
                    Path dwo = files.filter(f -> f.getFileName().toString().startsWith("inl_" + v.replace('-', '_'))
                            && f.toString().endsWith(".dwo")).findFirst().orElseThrow();
                    common = ElfFile.open(dwo);
                }
            }
            if (v.startsWith("dwz")) {
                Path copy = Files.copy(bin, tmp.resolve(bin.getFileName() + "_copy"));
                Path c = tmp.resolve(v + ".debug");
                TestPrograms.run(v.equals("dwz-5")
                        ? List.of("dwz", "--dwarf-5", "-m", c.toString(), bin.toString(), copy.toString())
                        : List.of("dwz", "-m", c.toString(), bin.toString(), copy.toString()));
                common = ElfFile.open(c);
            }
            ElfFile elf = ElfFile.open(bin);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteBuffer addr = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(pc);
            out.write(addr.array());
            for (String section : List.of(".debug_abbrev", g.equals("-gdwarf-4") ? ".debug_ranges" : ".debug_rnglists", ".debug_str")) {
                writeLong(out, bytes(elf, section));
            }
            out.write(1);
            writeLong(out, bytes(elf, ".debug_aranges"));
            out.write(common == null ? 0 : 1);
            if (common != null) {
                String suffix = v.startsWith("split") ? ".dwo" : "";
                for (String section : List.of(".debug_abbrev", ".debug_str", ".debug_info")) {
                    writeLong(out, bytes(common, section + suffix));
                }
            }
            out.write(bytes(elf, ".debug_info"));
            Files.write(dir.resolve("seed-" + v), out.toByteArray());
        }
    }

    /** As {@link FuzzInput#longBytes} reads it: a little-endian two-byte length, then the bytes. */
    private static void writeLong(ByteArrayOutputStream out, byte[] b) {
        out.write(b.length);
        out.write(b.length >> 8);
        out.write(b, 0, b.length);
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
