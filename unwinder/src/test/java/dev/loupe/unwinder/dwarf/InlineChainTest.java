package dev.loupe.unwinder.dwarf;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SymbolTable;
import dev.loupe.unwinder.lines.SourceLine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Inlined subroutines from .debug_info against binutils' {@code addr2line -i -f}, on every byte of real functions: a C
 * program built with gcc -O2 where {@code mix} is inlined into {@code step}, inlined into {@code hot} (DWARF 5, DWARF 4,
 * DWARF 5 zlib-compressed), and Debian's libc through libc6-dbg's debug file. Also: the budget, and hostile input.
 */
public class InlineChainTest {
    public static final String SOURCE = """
            static volatile unsigned long sink;
            static inline __attribute__((always_inline)) unsigned long mix(unsigned long x) {
                return (x * 2654435761u) ^ (x >> 7);
            }
            static inline __attribute__((always_inline)) unsigned long step(unsigned long s, unsigned long i) {
                return s + mix(i);
            }
            __attribute__((noinline)) unsigned long hot(unsigned long n) {
                unsigned long s = 0;
                for (unsigned long i = 0; i < n; i++) {
                    s = step(s, i);
                }
                return s;
            }
            int main(int argc, char **argv) {
                sink = hot((unsigned long) argc * 1000);
                return 0;
            }
            """;
    static final int MIX_LINE = 3;
    static final int STEP_CALLS_MIX = 6;
    static final int HOT_CALLS_STEP = 11;

    @TempDir
    Path dir;

    static String render(SourceLine s, boolean baseNames) {
        String file = s.file() == null ? "??" : baseNames ? s.file().substring(s.file().lastIndexOf('/') + 1) : s.file();
        return s.function() + " " + file + ":" + s.line();
    }

    /**
     * Every byte of {@code function}: where we give a line, our chain equals addr2line's (the outermost function is the
     * symbol's name, which addr2line also prints here); returns how many bytes had more than one level.
     */
    static int compare(Path dwarfFile, SymbolTable symbols, String function, boolean baseNames) throws Exception {
        return compare(dwarfFile, dwarfFile, symbols, function, baseNames);
    }

    /** As above, addr2line run on {@code truthFile}: the same code with the DWARF as the compiler wrote it. */
    static int compare(Path dwarfFile, Path truthFile, SymbolTable symbols, String function, boolean baseNames) throws Exception {
        return compare(dwarfFile, "addr2line", truthFile, symbols, function, baseNames);
    }

    /** As above, the truth from {@code tool} (see {@link DwarfFixture#chains}). */
    static int compare(Path dwarfFile, String tool, Path truthFile, SymbolTable symbols, String function, boolean baseNames)
            throws Exception {
        DwarfLineTable t = DwarfLineTable.open(dwarfFile, ElfFile.openWithoutSymbols(dwarfFile), symbols);
        List<Long> addrs = DwarfFixture.bytesOf(symbols, DwarfFixture.indexOf(symbols, function, dwarfFile));
        List<List<String>> truth = DwarfFixture.chains(tool, truthFile, addrs, baseNames);
        int inlined = 0;
        for (int k = 0; k < addrs.size(); k++) {
            List<SourceLine> got = t.lines(addrs.get(k));
            if (got.isEmpty()) {
                continue; // no line at this pc: addr2line then still names functions; the plain-line tests cover it
            }
            List<String> ours = new ArrayList<>();
            for (SourceLine s : got) {
                ours.add(render(s, baseNames));
            }
            List<String> expected = new ArrayList<>(truth.get(k));
            // addr2line names the outermost function by DWARF; we name it by the symbol, as frames without inlining are
            // named (the same in C; libc's symbol table keeps one of a function's aliases, e.g. __qsort_r for qsort_r).
            String last = expected.get(expected.size() - 1);
            expected.set(expected.size() - 1, symbols.lookup(addrs.get(k)) + last.substring(last.indexOf(' ')));
            assertEquals(expected, ours, dwarfFile + " 0x" + Long.toHexString(addrs.get(k)));
            if (got.size() > 1) {
                inlined++;
            }
        }
        assertNull(t.problem());
        assertNull(t.inlineProblem());
        System.out.println(dwarfFile.getFileName() + " " + function + ": " + addrs.size() + " bytes, " + inlined
                + " with inlined functions, equal to " + tool.split(" ")[0] + " -i; inline data " + t.inlineBytes() + " bytes");
        return inlined;
    }

    @Test
    void mixInlinedIntoStepInlinedIntoHotMatchesAddr2lineOnEveryByte() throws Exception {
        for (Map.Entry<String, Path> v : DwarfFixture.variants(dir, "inl", SOURCE, "-O2").entrySet()) {
            String variant = v.getKey();
            Path bin = v.getValue();
            SymbolTable symbols = ElfFile.open(bin).symbols();
            int inlined = compare(bin, symbols, "hot", false);
            assertTrue(inlined >= 4, variant + ": bytes of hot with inlined functions: " + inlined);
            // The known chain, exactly: mix at its line <- step where it calls mix <- hot where it calls step.
            DwarfLineTable t = DwarfLineTable.open(bin, ElfFile.openWithoutSymbols(bin), symbols);
            String c = dir.resolve(bin.getFileName() + ".c").toString();
            long start = TestPrograms.nmAddress(bin, "hot");
            boolean seen = false;
            for (long a = start; a < start + 256 && !seen; a++) {
                List<SourceLine> l = t.lines(a);
                seen = l.equals(List.of(new SourceLine("mix", c, MIX_LINE, 2), new SourceLine("step", c, STEP_CALLS_MIX, 5),
                        new SourceLine("hot", c, HOT_CALLS_STEP, 8)));
            }
            assertTrue(seen, variant + ": no pc of hot shows mix:3 <- step:6 <- hot:11");
        }
    }

    /**
     * dwz's multifile (-m), as Debian's -dbgsym packages are built, in DWARF 4 and 5 units with GNU forms
     * (.gnu_debugaltlink, an absolute name as Debian's /usr/lib/debug/.dwz/...) and with DWARF 5's own (dwz --dwarf-5:
     * .debug_sup, DW_FORM_ref_sup4 / DW_FORM_strp_sup, a name relative to the binary). Two pairs of binaries: the same
     * program twice (step and mix move to the common file: DW_FORM_GNU_ref_alt / ref_sup4 into it), and two that differ
     * in main (their DIEs stay, their names move: DW_FORM_GNU_strp_alt / strp_sup). dwz leaves code alone, so every
     * byte's chain must equal addr2line's on the binary before dwz (binutils 2.40 cannot read the DWARF 5 forms).
     */
    @Test
    void dwzMultifileChainsMatchAddr2lineOnTheBinaryBeforeDwz() throws Exception {
        for (String v : List.of("-gdwarf-4", "-gdwarf-5", "--dwarf-5")) {
            for (boolean same : List.of(true, false)) {
                Path d = Files.createDirectories(dir.resolve("dwz" + v + (same ? "-same" : "-differ")));
                String gflag = v.equals("--dwarf-5") ? "-gdwarf-5" : v;
                Path a = TestPrograms.compile(d, "a", SOURCE, "-O2", gflag);
                Path b = same ? Files.copy(a, d.resolve("b"))
                        : TestPrograms.compile(d, "b", SOURCE.replace("argc * 1000", "argc * 2000"), "-O2", gflag);
                Path before = Files.copy(a, d.resolve("a.before"));
                Path common = d.resolve("common.debug");
                List<String> cmd = new ArrayList<>(List.of("dwz"));
                if (v.equals("--dwarf-5")) {
                    cmd.add("--dwarf-5");
                }
                cmd.addAll(List.of("-m", common.toString(), "-M", v.equals("--dwarf-5") ? "common.debug" : common.toString(),
                        a.toString(), b.toString()));
                TestPrograms.run(cmd);
                String what = v + (same ? " same" : " differing");
                String sections = TestPrograms.run(List.of("readelf", "-SW", a.toString()));
                assertTrue(sections.contains(v.equals("--dwarf-5") ? ".debug_sup" : ".gnu_debugaltlink"), what + "\n" + sections);
                String abbrevs = TestPrograms.run(List.of("readelf", "--debug-dump=abbrev", a.toString()));
                String sup = v.equals("--dwarf-5") ? "DW_FORM_" : "DW_FORM_GNU_";
                String form = same ? sup + (v.equals("--dwarf-5") ? "ref_sup4" : "ref_alt")
                        : sup + (v.equals("--dwarf-5") ? "strp_sup" : "strp_alt");
                assertTrue(abbrevs.contains(form), what + ": dwz used " + form);
                SymbolTable symbols = ElfFile.open(a).symbols();
                int inlined = compare(a, before, symbols, "hot", false);
                assertTrue(inlined >= 4, what + ": bytes of hot with inlined functions: " + inlined);
                // Without the common file: the same lines, the functions named there "?".
                DwarfLineTable with = DwarfLineTable.open(a, ElfFile.openWithoutSymbols(a), symbols);
                Files.move(common, d.resolve("moved.debug"));
                DwarfLineTable without = DwarfLineTable.open(a, ElfFile.openWithoutSymbols(a), symbols);
                long hot = TestPrograms.nmAddress(a, "hot");
                int unnamed = 0;
                for (long pc = hot; pc < hot + 64; pc++) {
                    List<SourceLine> full = with.lines(pc);
                    List<SourceLine> lost = without.lines(pc);
                    assertEquals(full.size(), lost.size(), what);
                    for (int i = 0; i < full.size(); i++) {
                        assertEquals(full.get(i).line(), lost.get(i).line(), what);
                        if (!lost.get(i).function().equals(full.get(i).function())) {
                            assertEquals("?", lost.get(i).function(), what);
                            unnamed++;
                        }
                    }
                }
                assertTrue(unnamed > 0, what + ": without common.debug no function was unnamed");
                assertNull(without.inlineProblem());
            }
        }
    }

    /**
     * Split DWARF built as make builds (from the project's directory, "src/inl.c -o out/inl"): the binary holds skeleton
     * units (DWARF 5 DW_UT_skeleton; gcc's DWARF 4 DW_AT_GNU_dwo_name), the inlined functions are in a .dwo named
     * relative to the compilation directory (gcc: out/inl.dwo; clang: inl.dwo), read with the binary's .debug_addr,
     * ranges in .debug_rnglists.dwo or the binary's .debug_ranges, names through .debug_str_offsets.dwo. binutils 2.40,
     * elfutils 0.188 and llvm-symbolizer 14 give no inlined functions for split units, so the truth is the same source
     * built without split DWARF (the same .text, checked): addr2line -i for gcc, llvm-symbolizer -i for clang (binutils
     * misses clang 14's inline ranges). Then the binary deployed elsewhere, and without any .dwo: plain lines.
     */
    @Test
    void splitDwarfChainsMatchTheSameCodeBuiltWhole() throws Exception {
        for (String[] build : List.of(new String[] {"gcc", "-gdwarf-5", "addr2line"}, new String[] {"gcc", "-gdwarf-4", "addr2line"},
                new String[] {"clang", "-gdwarf-5", "llvm-symbolizer --output-style=GNU"})) {
            String cc = build[0];
            String v = build[1];
            String what = cc + " " + v;
            Path project = Files.createDirectories(dir.resolve("split-" + cc + v));
            Path whole = DwarfFixture.compileRelative(cc, project, "inl", SOURCE, "-O2", v); // the truth: project/inl
            Files.createDirectories(project.resolve("out"));
            TestPrograms.run(List.of("sh", "-c", "cd '" + project + "' && " + cc + " -fno-omit-frame-pointer -O2 " + v
                    + " -gsplit-dwarf src/inl.c -o out/inl"));
            Path bin = project.resolve("out/inl");
            assertEquals(text(whole), text(bin), what + ": -gsplit-dwarf changed the code");
            Path dwo;
            try (var found = Files.walk(project)) {
                dwo = found.filter(f -> f.toString().endsWith(".dwo")).findFirst().orElseThrow();
            }
            String skeleton = TestPrograms.run(List.of("readelf", "--debug-dump=info", bin.toString()));
            assertTrue(skeleton.contains(v.equals("-gdwarf-5") ? "DW_UT_skeleton" : "DW_AT_GNU_dwo_name"), what + "\n" + skeleton);
            assertTrue(skeleton.contains(": " + project.relativize(dwo)), what + ": the .dwo is named relative to the compilation directory");
            SymbolTable symbols = ElfFile.open(bin).symbols();
            int inlined = compare(bin, build[2], whole, symbols, "hot", false);
            assertTrue(inlined >= 4, what + ": bytes of hot with inlined functions: " + inlined);

            // The binary deployed elsewhere: its .dwo found in the compilation directory, then beside it.
            Path elsewhere = Files.createDirectories(dir.resolve("deployed-" + cc + v));
            Path copy = Files.copy(bin, elsewhere.resolve("inl"));
            assertEquals(inlined, compare(copy, build[2], whole, symbols, "hot", false), what + ": in the compilation directory");
            Path beside = Files.move(dwo, elsewhere.resolve(dwo.getFileName()));
            assertEquals(inlined, compare(copy, build[2], whole, symbols, "hot", false), what + ": beside the binary");

            // No .dwo anywhere: plain lines, no inlined functions, no problem.
            Files.delete(beside);
            DwarfLineTable plain = DwarfLineTable.open(copy, ElfFile.openWithoutSymbols(copy), symbols);
            DwarfLineTable withDwo = DwarfLineTable.open(whole, ElfFile.openWithoutSymbols(whole), ElfFile.open(whole).symbols());
            long hot = TestPrograms.nmAddress(copy, "hot");
            int lines = 0;
            for (long pc = hot; pc < hot + 64; pc++) {
                List<SourceLine> l = plain.lines(pc);
                List<SourceLine> full = withDwo.lines(pc);
                assertEquals(full.isEmpty(), l.isEmpty(), what);
                if (!l.isEmpty()) {
                    assertEquals(1, l.size(), what + ": " + l);
                    assertEquals(full.get(0).file() + ":" + full.get(0).line(), l.get(0).file() + ":" + l.get(0).line());
                    lines++;
                }
            }
            assertTrue(lines > 20, what + ": pcs with lines without the .dwo: " + lines);
            assertNull(plain.inlineProblem());
        }
    }

    /**
     * Two split units linked together: the second skeleton's bases are not zero (DWARF 4: DW_AT_GNU_ranges_base into the
     * binary's .debug_ranges; DWARF 5: its own .debug_addr base), and each .dwo is read with its own skeleton's.
     */
    @Test
    void twoSplitUnitsEachUseTheirSkeletonsBases() throws Exception {
        String other = OTHER;
        String main = MAIN_WITH_OTHER;
        for (String v : List.of("-gdwarf-4", "-gdwarf-5")) {
            Path d = Files.createDirectories(dir.resolve("two" + v));
            Files.writeString(d.resolve("other.c"), other);
            Files.writeString(d.resolve("inl.c"), main);
            String cc = "cd '" + d + "' && gcc -fno-omit-frame-pointer -O2 " + v + " other.c inl.c -o ";
            TestPrograms.run(List.of("sh", "-c", cc + "whole"));
            TestPrograms.run(List.of("sh", "-c", cc.replace(" other.c", " -gsplit-dwarf other.c") + "split"));
            Path whole = d.resolve("whole");
            Path split = d.resolve("split");
            assertEquals(text(whole), text(split), v);
            if (v.equals("-gdwarf-4")) {
                assertTrue(TestPrograms.run(List.of("readelf", "--debug-dump=info", split.toString()))
                        .matches("(?s).*DW_AT_GNU_ranges_base: 0x[1-9a-f].*"), "the second skeleton's ranges base is not 0");
            }
            SymbolTable symbols = ElfFile.open(split).symbols();
            int inlined = 0;
            for (String f : List.of("hot", "other")) {
                inlined += compare(split, whole, symbols, f, false) > 0 ? 1 : 0;
            }
            assertEquals(2, inlined, v + ": both units' functions have inlined functions");
        }
    }

    /** A second unit for {@link #SOURCE}'s main to call, with its own inlined function. */
    private static final String OTHER = """
            static inline __attribute__((always_inline)) unsigned long twist(unsigned long x) { return (x << 3) ^ (x >> 5); }
            __attribute__((noinline)) unsigned long other(unsigned long n) {
                unsigned long s = 0;
                for (unsigned long i = 0; i < n; i++) { if (i & 1) s += twist(i); else s -= twist(s); }
                return s;
            }
            """;
    private static final String MAIN_WITH_OTHER = SOURCE.replace("sink = hot((unsigned long) argc * 1000);",
            "extern unsigned long other(unsigned long); sink = hot((unsigned long) argc * 1000) + other(argc);");

    /**
     * Two split units read three ways, each giving the chains of the same code built whole: from their .dwo files
     * compressed with zlib by objcopy; from a DWARF package of them, {@code split.dwp} beside the binary, the .dwo files
     * gone; and from that package with its sections compressed with zstd. DWARF 4: gcc and binutils' dwp (index
     * version 2), addr2line -i the truth. DWARF 5: clang and llvm-dwp (version 5), llvm-symbolizer -i the truth (binutils
     * 2.40's dwp crashes or writes an empty index for DWARF 5, and llvm-dwp 14 spins on gcc 12's DWARF 5 units).
     */
    @Test
    void dwarfPackagesAndCompressedDwoFilesGiveTheChainsOfTheSameCodeBuiltWhole() throws Exception {
        for (String[] build : List.of(new String[] {"gcc", "-gdwarf-4", "dwp", "addr2line"},
                new String[] {"clang", "-gdwarf-5", "llvm-dwp", "llvm-symbolizer --output-style=GNU"})) {
            String v = build[1];
            Path d = Files.createDirectories(dir.resolve("dwp" + v));
            Files.writeString(d.resolve("other.c"), OTHER);
            Files.writeString(d.resolve("inl.c"), MAIN_WITH_OTHER);
            String cc = "cd '" + d + "' && " + build[0] + " -fno-omit-frame-pointer -O2 " + v + " other.c inl.c -o ";
            TestPrograms.run(List.of("sh", "-c", cc + "whole"));
            TestPrograms.run(List.of("sh", "-c", cc.replace(" other.c", " -gsplit-dwarf other.c") + "split"));
            Path whole = d.resolve("whole");
            Path split = d.resolve("split");
            assertEquals(text(whole), text(split), v);
            TestPrograms.run(List.of("sh", "-c", "cd '" + d + "' && timeout 120 " + build[2] + " -e split -o package"));
            List<Path> dwos;
            try (var found = Files.walk(d)) {
                dwos = found.filter(f -> f.toString().endsWith(".dwo")).toList();
            }
            assertEquals(2, dwos.size(), dwos.toString());
            SymbolTable symbols = ElfFile.open(split).symbols();

            for (Path dwo : dwos) {
                TestPrograms.run(List.of("objcopy", "--compress-debug-sections=zlib", dwo.toString()));
                assertEquals("ZLIB", DwarfFixture.compression(dwo, ".debug_info.dwo"), dwo.toString());
            }
            for (String f : List.of("hot", "other")) {
                assertTrue(compare(split, build[3], whole, symbols, f, false) > 0,
                        v + " " + f + ": inlined functions from zlib-compressed .dwo files");
            }

            for (Path dwo : dwos) {
                Files.delete(dwo);
            }
            Path dwp = Files.move(d.resolve("package"), d.resolve("split.dwp"));
            String index = TestPrograms.run(List.of("llvm-dwarfdump", "--debug-cu-index", dwp.toString()));
            assertTrue(index.contains("version = " + (v.equals("-gdwarf-4") ? 2 : 5) + ", units = 2,"), index);
            for (String f : List.of("hot", "other")) {
                assertTrue(compare(split, build[3], whole, symbols, f, false) > 0, v + " " + f + ": inlined functions from the package");
            }

            TestPrograms.run(List.of("objcopy", "--compress-debug-sections=zstd", dwp.toString()));
            assertEquals("ZSTD", DwarfFixture.compression(dwp, ".debug_info.dwo"));
            for (String f : List.of("hot", "other")) {
                assertTrue(compare(split, build[3], whole, symbols, f, false) > 0,
                        v + " " + f + ": inlined functions from the zstd-compressed package");
            }
        }
    }

    private static String text(Path bin) throws Exception {
        return TestPrograms.run(List.of("sh", "-c", "objcopy -O binary -j .text '" + bin + "' /dev/stdout | od -An -tx1 | tr -d ' \\n'"));
    }

    @Test
    void debianLibcThroughLibc6DbgMatchesAddr2line() throws Exception {
        Path debug = DwarfFixture.libcDebugFile();
        SymbolTable symbols = ElfFile.open(debug).symbols();
        int inlined = 0;
        for (String f : List.of("qsort_r", "____strtol_l_internal", "getenv", "__libc_malloc", "_IO_fwrite")) {
            inlined += compare(debug, symbols, f, true);
        }
        assertTrue(inlined > 50, "libc bytes with inlined functions: " + inlined);
    }

    @Test
    void pastItsBudgetABinaryKeepsItsPlainLinesAndSaysSoOnce() throws Exception {
        Path bin = TestPrograms.compile(dir, "inl", SOURCE, "-O2", "-gdwarf-5");
        ElfFile elf = ElfFile.open(bin);
        Map<String, ByteBuffer> sections = DwarfFixture.sections(elf);
        long start = TestPrograms.nmAddress(bin, "hot");
        DwarfLineTable roomy = DwarfLineTable.of("roomy", sections, elf.symbols(), 1 << 20);
        DwarfLineTable tight = DwarfLineTable.of("tight", sections, elf.symbols(), 4096);
        int chains = 0;
        for (long a = start; a < start + 128; a++) {
            List<SourceLine> full = roomy.lines(a);
            List<SourceLine> plain = tight.lines(a);
            if (!full.isEmpty()) {
                assertEquals(1, plain.size(), "plain line");
                assertEquals(full.get(0).file(), plain.get(0).file());
                assertEquals(full.get(0).line(), plain.get(0).line());
                assertEquals("hot", plain.get(0).function());
                chains += full.size() > 1 ? 1 : 0;
            }
        }
        assertTrue(chains > 0);
        assertNull(tight.problem());
        assertNotNull(tight.inlineProblem());
        assertTrue(tight.inlineProblem().contains("budget"), tight.inlineProblem());
        assertTrue(roomy.inlineBytes() > 0 && roomy.inlineBytes() < (1 << 20), "" + roomy.inlineBytes());
    }

    /** The unit index from .debug_aranges and from the units' own first DIEs (a file without aranges) agree. */
    @Test
    void withoutArangesTheUnitsOwnRangesGiveTheSameChains() throws Exception {
        for (String v : List.of("-gdwarf-5", "-gdwarf-4")) {
            Path bin = TestPrograms.compile(dir, "ar" + v.replace("-", "_"), SOURCE, "-O2", v);
            ElfFile elf = ElfFile.open(bin);
            Map<String, ByteBuffer> sections = DwarfFixture.sections(elf);
            assertNotNull(sections.get(".debug_aranges"), "gcc writes .debug_aranges");
            DwarfLineTable with = DwarfLineTable.of("with", sections, elf.symbols(), 1 << 20);
            sections.remove(".debug_aranges");
            DwarfLineTable without = DwarfLineTable.of("without", sections, elf.symbols(), 1 << 20);
            int chains = 0;
            for (String f : List.of("hot", "main")) {
                long start = TestPrograms.nmAddress(bin, f);
                for (long a = start; a < start + 48; a++) {
                    List<SourceLine> l = with.lines(a);
                    assertEquals(l, without.lines(a), v + " 0x" + Long.toHexString(a));
                    chains += l.size() > 1 ? 1 : 0;
                }
            }
            assertTrue(chains > 0, v);
            assertNull(without.inlineProblem());
        }
    }

    /** Every truncation of a real .debug_info (and .debug_abbrev): plain lines at least, a clear problem at most. */
    @Test
    void everyTruncationOfRealInfoAndAbbrevKeepsPlainLinesOrSaysWhy() throws Exception {
        for (String v : List.of("-gdwarf-5", "-gdwarf-4")) {
            Path bin = TestPrograms.compile(dir, "cut" + v.replace("-", "_"), SOURCE, "-O2", v);
            ElfFile elf = ElfFile.open(bin);
            Map<String, ByteBuffer> sections = DwarfFixture.sections(elf);
            long start = TestPrograms.nmAddress(bin, "hot");
            int problems = 0;
            int cuts = 0;
            for (String cut : List.of(".debug_info", ".debug_abbrev", ".debug_rnglists", ".debug_ranges", ".debug_aranges")) {
                ByteBuffer whole = sections.get(cut);
                if (whole == null) {
                    continue;
                }
                for (int n = 0; n < whole.limit(); n++) {
                    Map<String, ByteBuffer> s = new HashMap<>(sections);
                    s.put(cut, whole.slice(0, n));
                    DwarfLineTable t = DwarfLineTable.of("cut", s, elf.symbols(), 1 << 20);
                    for (long a = start; a < start + 64; a += 3) {
                        List<SourceLine> l = t.lines(a);
                        assertTrue(l.isEmpty() || l.get(l.size() - 1).function().equals("hot"), l.toString());
                    }
                    cuts++;
                    if (t.inlineProblem() != null) {
                        problems++;
                        assertTrue(t.inlineProblem().startsWith("cut: .debug_"), t.inlineProblem());
                    }
                }
            }
            assertTrue(problems > cuts / 4, v + ": " + problems + " problems of " + cuts + " cuts");
        }
    }
}
