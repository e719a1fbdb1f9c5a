package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.TestPrograms;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** gopclntab, build info and runtime.g offsets of Go binaries built here, against Go's own tools. */
class GoBinaryTest {
    static GoTargets targets;

    @BeforeAll
    static void build() throws Exception {
        targets = GoTargets.shared();
    }

    /** nm text symbols that have no pclntab entry: linker markers, not functions. */
    private static final Set<String> MARKERS = Set.of("runtime.text", "runtime.etext");

    @Test
    void pclntabEqualsGoToolNmForNormalPieAndStrippedPie() throws Exception {
        Map<String, Long> nm = GoTargets.nmText(targets.normal);
        Map<String, Long> nmPie = GoTargets.nmText(targets.pie);
        checkAgainstNm(targets.normal, nm);
        checkAgainstNm(targets.pie, nmPie);
        // The stripped PIE has no symbols of its own: its pclntab must give the unstripped PIE's symbols.
        assertFalse(dev.loupe.unwinder.elf.ElfFile.open(targets.strippedPie).hasSection(".symtab"));
        int n = checkAgainstNm(targets.strippedPie, nmPie);
        System.out.printf("stripped PIE: %d pclntab functions equal go tool nm of the unstripped PIE%n", n);
    }

    /**
     * pclntab and nm must name the same functions at the same addresses. nm shows the linker's ABI0
     * wrappers (and assembly functions) with an ".abi0" suffix that pclntab does not record, so the pclntab
     * name must equal nm's without it. Names are not unique (a wrapper is named like its target): compare
     * by address. Type arguments are elided in pclntab names (see {@link #elideTypeArguments}).
     */
    private static int checkAgainstNm(Path binary, Map<String, Long> nm) throws Exception {
        GoPclntab tab = GoPclntab.read(binary).orElseThrow();
        assertEquals("go1.18", tab.format(), "Go 1.19 writes the 1.18 layout");
        Map<Long, String> ours = new HashMap<>();
        for (GoPclntab.GoFunction f : tab.functions()) {
            assertEquals(null, ours.put(f.entry(), f.name()), "two functions at one address");
        }
        Map<Long, String> expected = new HashMap<>();
        nm.forEach((name, addr) -> {
            if (!MARKERS.contains(name)) {
                expected.put(addr, elideTypeArguments(name.endsWith(".abi0") ? name.substring(0, name.length() - 5) : name));
            }
        });
        List<String> diffs = new ArrayList<>();
        for (Long a : new TreeSet<>(expected.keySet())) {
            if (!expected.get(a).equals(ours.get(a))) {
                diffs.add("0x" + Long.toHexString(a) + ": nm " + expected.get(a) + ", pclntab " + ours.get(a));
            }
        }
        for (Long a : ours.keySet()) {
            if (!expected.containsKey(a)) {
                diffs.add("0x" + Long.toHexString(a) + ": pclntab " + ours.get(a) + ", not in nm");
            }
        }
        assertEquals(List.of(), diffs.subList(0, Math.min(20, diffs.size())), binary + ": " + diffs.size() + " differences");
        assertTrue(ours.size() > 1000, binary + ": " + ours.size());
        return ours.size();
    }

    /** Go's linker stores "a[T, U].f" as "a[...].f" in the pclntab: from the first '[' to the last ']'. */
    private static String elideTypeArguments(String name) {
        int i = name.indexOf('[');
        int j = name.lastIndexOf(']');
        return i >= 0 && j > i ? name.substring(0, i) + "[...]" + name.substring(j + 1) : name;
    }

    /** Go 1.26 writes textStart 0 (and PIE slots may be unrelocated): entries then count from .text. */
    @Test
    void zeroTextStartInTheHeaderFallsBackToTheTextSection() throws Exception {
        dev.loupe.unwinder.ehframe.ElfSections es = dev.loupe.unwinder.ehframe.ElfSections.read(targets.strippedPie);
        byte[] b = es.contents(es.find(".data.rel.ro.gopclntab"));
        java.util.Arrays.fill(b, 8 + 2 * 8, 8 + 3 * 8, (byte) 0); // pcHeader.textStart
        GoPclntab zeroed = GoPclntab.parse("t", b, es.find(".text").addr(), 0,
                dev.loupe.unwinder.elf.ElfLoadSegments.read(targets.strippedPie));
        GoPclntab real = GoPclntab.read(targets.strippedPie).orElseThrow();
        assertEquals(es.find(".text").addr(), zeroed.textStart());
        assertEquals(real.functions(), zeroed.functions());
        GoBinaryException e = org.junit.jupiter.api.Assertions.assertThrows(GoBinaryException.class,
                () -> GoPclntab.parse("t", b, 0, 0, List.of()));
        assertTrue(e.getMessage().contains("textStart is 0"), e.getMessage());
    }

    @Test
    void lookupByAddressGivesTheContainingFunction() throws Exception {
        GoPclntab tab = GoPclntab.read(targets.strippedPie).orElseThrow();
        Map<String, Long> nm = GoTargets.nmText(targets.pie);
        long serve = nm.get("main.(*conn).serve");
        assertEquals("main.(*conn).serve", tab.lookup(serve).orElseThrow().name());
        GoPclntab.GoFunction f = tab.lookup(serve + 5).orElseThrow();
        assertEquals("main.(*conn).serve", f.name());
        assertEquals(serve, f.entry());
        assertEquals(f.name(), tab.symbolTable().lookup(f.end() - 1));
        assertFalse(tab.lookup(tab.functions().get(0).entry() - 1).isPresent());
    }

    @Test
    void buildInfoVersionEqualsGoVersion() throws Exception {
        List<Path> bins = new ArrayList<>(List.of(targets.normal, targets.pie, targets.strippedPie, GoTargets.GO.toRealPath()));
        if (java.nio.file.Files.exists(Path.of("/usr/bin/prometheus"))) {
            bins.add(Path.of("/usr/bin/prometheus"));
        }
        for (Path b : bins) {
            String out = TestPrograms.run(List.of(GoTargets.GO.toString(), "version", b.toString())).trim();
            String expected = out.substring(out.lastIndexOf(' ') + 1);
            GoBuildInfo info = GoBuildInfo.read(b).orElseThrow();
            assertEquals(expected, info.version(), b.toString());
            assertTrue(info.modulePath().isPresent(), b + ": " + info);
        }
        assertEquals(List.of("command-line-arguments"), List.of(GoBuildInfo.read(targets.normal).orElseThrow().modulePath().orElseThrow()));
        assertEquals("cmd/go", GoBuildInfo.read(GoTargets.GO.toRealPath()).orElseThrow().modulePath().orElseThrow());
        assertTrue(GoBuildInfo.read(TestPrograms.LIBC.toRealPath()).isEmpty(), "libc is not a Go binary");
    }

    @Test
    void goBuildIdEqualsGoToolBuildidAndCNamesNone() throws Exception {
        List<Path> bins = List.of(targets.normal, targets.pie, targets.strippedPie, GoTargets.GO.toRealPath());
        Set<String> ids = new TreeSet<>();
        for (Path b : bins) {
            String expected = TestPrograms.run(List.of(GoTargets.GO.toString(), "tool", "buildid", b.toString())).trim();
            dev.loupe.unwinder.elf.ElfFile elf = dev.loupe.unwinder.elf.ElfFile.open(b);
            assertEquals(expected, elf.goBuildId().orElseThrow(), b.toString());
            assertEquals(elf.buildId().orElse(expected), elf.anyBuildId().orElseThrow(), b.toString());
            assertEquals(elf.anyBuildId(), dev.loupe.unwinder.elf.ElfFile.buildIdOf(b), b.toString());
            ids.add(expected);
        }
        assertEquals(bins.size(), ids.size(), "each build has its own id: " + ids);
        dev.loupe.unwinder.elf.ElfFile libc = dev.loupe.unwinder.elf.ElfFile.open(TestPrograms.LIBC.toRealPath());
        assertTrue(libc.goBuildId().isEmpty(), "libc has no Go build id");
        assertEquals(libc.buildId().orElseThrow(), libc.anyBuildId().orElseThrow());
        assertEquals(libc.buildId(), dev.loupe.unwinder.elf.ElfFile.buildIdOf(TestPrograms.LIBC.toRealPath()));
    }

    @Test
    void goidOffsetFromDwarfEqualsReadelfAndTheVersionTable() throws Exception {
        GoRuntimeOffsets normal = GoRuntimeOffsets.read(targets.normal).orElseThrow();
        assertEquals(GoRuntimeOffsets.Source.DWARF, normal.goidSource());
        assertEquals(readelfGoidOffset(targets.normal), normal.goidOffset());
        assertEquals(152, normal.goidOffset());
        assertEquals(normal.goidOffset(), GoRuntimeOffsets.goidOffsetForVersion(1, 19).getAsLong());
        assertTrue(normal.registerAbi());
        assertEquals("go1.19.8", normal.goVersion().orElseThrow());

        GoRuntimeOffsets pie = GoRuntimeOffsets.read(targets.pie).orElseThrow();
        assertEquals(GoRuntimeOffsets.Source.DWARF, pie.goidSource());
        assertEquals(152, pie.goidOffset());

        GoRuntimeOffsets stripped = GoRuntimeOffsets.read(targets.strippedPie).orElseThrow();
        assertEquals(GoRuntimeOffsets.Source.VERSION_TABLE, stripped.goidSource(), "-w drops DWARF");
        assertEquals(152, stripped.goidOffset());
        assertTrue(stripped.registerAbi());

        assertTrue(GoRuntimeOffsets.read(TestPrograms.LIBC.toRealPath()).isEmpty());
        assertEquals(160, GoRuntimeOffsets.goidOffsetForVersion(1, 23).getAsLong());
        assertEquals(160, GoRuntimeOffsets.goidOffsetForVersion(1, 24).getAsLong());
        assertEquals(152, GoRuntimeOffsets.goidOffsetForVersion(1, 25).getAsLong());
        assertEquals(152, GoRuntimeOffsets.goidOffsetForVersion(1, 13).getAsLong());
        assertTrue(GoRuntimeOffsets.goidOffsetForVersion(1, 12).isEmpty());
    }

    /** runtime.g's goid member as readelf decodes the DWARF (an independent reader). */
    private static long readelfGoidOffset(Path binary) throws Exception {
        String[] lines = TestPrograms.run(List.of("readelf", "--debug-dump=info", binary.toString())).split("\n");
        boolean inG = false;
        for (int i = 0; i < lines.length; i++) {
            String l = lines[i];
            if (l.contains("Abbrev Number") && l.contains("(DW_TAG_structure_type)")) {
                inG = i + 1 < lines.length && lines[i + 1].trim().endsWith("DW_AT_name        : runtime.g");
            } else if (l.startsWith(" <1>")) {
                inG = false;
            } else if (inG && l.trim().endsWith("DW_AT_name        : goid")) {
                String loc = lines[i + 1];
                return Long.parseLong(loc.substring(loc.lastIndexOf(':') + 1).trim());
            }
        }
        throw new AssertionError("readelf shows no runtime.g.goid");
    }
}
