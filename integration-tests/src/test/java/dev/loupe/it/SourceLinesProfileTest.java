package dev.loupe.it;

import dev.loupe.agent.ship.ParcaStandIn;
import dev.loupe.pprof.ParcaRules;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.proto.Function;
import dev.loupe.pprof.proto.Line;
import dev.loupe.pprof.proto.Location;
import dev.loupe.pprof.proto.Mapping;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import dev.loupe.unwinder.elf.ElfFile;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 28: source lines of Go code, end to end. The lines target (src/test/go/lines_target) built stripped
 * ({@code -ldflags=-s -w}) and stripped PIE runs its hot loop; one agent run writes a local profile and ships to the
 * Parca stand-in (which applies Parca's rules, lines included). Ground truth for each leaf sample is {@code go tool
 * objdump}'s file:line of that instruction in the unstripped non-PIE build of the same source (same instruction of
 * {@code main.hot}, its encoding checked equal); inlined {@code main.mix} must show its call site in main.hot.
 */
class SourceLinesProfileTest {
    static final Path SOURCE = Path.of(System.getProperty("loupe.repo", "..")).toAbsolutePath().normalize()
            .resolve("integration-tests/src/test/go/lines_target");
    static final int LOOP_LINE = 10;
    static final int CALL_LINE = 11;
    static final int MIX_LINE = 17;
    static final int C_HOT_LINE = 8;
    static final int C_MIX_LINE = 6; // lines_inline.c: mix's body, inlined into step (line 10), inlined into hot (line 16)

    @TempDir
    static Path dir;
    static final List<Process> targets = new ArrayList<>();
    static final Map<String, Path> builds = new LinkedHashMap<>();
    static Path profile;
    static List<Profile> shipped = new ArrayList<>();
    static List<String> rejections;
    static String mainGo;
    static Path cHot;
    static Path cHotDebug;
    static Process cTarget;
    static Process libcTarget;
    static Path cInline;
    static Path cInlineDebug;
    static Process cInlineTarget;

    @BeforeAll
    static void profileTheTargets() throws Exception {
        Path src = Files.createDirectories(dir.resolve("src"));
        Files.copy(SOURCE.resolve("main.go"), src.resolve("main.go"));
        mainGo = src.resolve("main.go").toString();
        Path cache = dir.resolve("gocache");
        builds.put("normal", GoBuild.build(src, dir.resolve("normal"), cache));
        builds.put("pie", GoBuild.build(src, dir.resolve("pie"), cache, "-buildmode=pie"));
        builds.put("stripped", GoBuild.build(src, dir.resolve("lines-stripped"), cache, "-ldflags=-s -w"));
        builds.put("stripped-pie", GoBuild.build(src, dir.resolve("lines-stripped-pie"), cache, "-buildmode=pie", "-ldflags=-s -w"));
        // Go 1.15 (the 0xfffffffb pclntab): the same source, lines from its own objdump.
        Path cache115 = dir.resolve("gocache115");
        builds.put("go1.15", GoBuild.build115(src, dir.resolve("go115"), cache115));
        builds.put("go1.15-pie", GoBuild.build115(src, dir.resolve("go115-pie"), cache115, "-buildmode=pie"));
        builds.put("go1.15-stripped", GoBuild.build115(src, dir.resolve("go115-stripped"), cache115, "-ldflags=-s -w"));
        builds.put("go1.15-stripped-pie", GoBuild.build115(src, dir.resolve("go115-stripped-pie"), cache115, "-buildmode=pie", "-ldflags=-s -w"));
        Process stripped = new ProcessBuilder(builds.get("stripped").toString()).start();
        Process strippedPie = new ProcessBuilder(builds.get("stripped-pie").toString()).start();
        Process stripped115 = new ProcessBuilder(builds.get("go1.15-stripped").toString()).start();
        Process strippedPie115 = new ProcessBuilder(builds.get("go1.15-stripped-pie").toString()).start();
        targets.add(stripped);
        targets.add(strippedPie);
        targets.add(stripped115);
        targets.add(strippedPie115);
        // C: -g, the debug file split off to where Debian's -dbgsym packages put theirs, the binary stripped of all symbols.
        cHot = Targets.build("lines_hot.c", dir, "lines_hot", "-O1", "-g", "-Wl,--build-id");
        Path unstripped = dir.resolve("lines_hot.unstripped");
        Files.copy(cHot, unstripped);
        String id = ElfFile.open(cHot).buildId().orElseThrow();
        cHotDebug = Path.of("/usr/lib/debug/.build-id").resolve(id.substring(0, 2)).resolve(id.substring(2) + ".debug");
        Files.createDirectories(cHotDebug.getParent());
        Commands.run(List.of("objcopy", "--only-keep-debug", cHot.toString(), cHotDebug.toString()), 60).check();
        Commands.run(List.of("objcopy", "--strip-all", cHot.toString()), 60).check();
        assertTrue(!Commands.run(List.of("readelf", "-SW", cHot.toString()), 60).output().contains(".debug_line"), "stripped");
        cTarget = Targets.start(cHot);
        // C with inlined functions: -O2 -g, split and stripped the same way.
        cInline = Targets.build("lines_inline.c", dir, "lines_inline", "-g", "-Wl,--build-id");
        String inlineId = ElfFile.open(cInline).buildId().orElseThrow();
        cInlineDebug = Path.of("/usr/lib/debug/.build-id").resolve(inlineId.substring(0, 2)).resolve(inlineId.substring(2) + ".debug");
        Files.createDirectories(cInlineDebug.getParent());
        Commands.run(List.of("objcopy", "--only-keep-debug", cInline.toString(), cInlineDebug.toString()), 60).check();
        Commands.run(List.of("objcopy", "--strip-all", cInline.toString()), 60).check();
        cInlineTarget = Targets.start(cInline);
        targets.add(cInlineTarget);
        libcTarget = Targets.start(Targets.build("lines_libc.c", dir, "lines_libc", "-O1"));
        targets.add(cTarget);
        targets.add(libcTarget);
        Path out = dir.resolve("profiles");
        ParcaStandIn standIn = new ParcaStandIn().start();
        try {
            try (AgentProcess agent = AgentProcess.start(dir, "--pid", stripped.pid() + "," + strippedPie.pid() + ","
                    + stripped115.pid() + "," + strippedPie115.pid() + "," + cTarget.pid() + ","
                    + libcTarget.pid() + "," + cInlineTarget.pid(), "--frequency", "99",
                    "--duration", "12s", "--interval", "60s", "--output", out.toString(), "--http", "off",
                    "--remote-store-address", standIn.address(), "--remote-store-insecure", "--spool-dir", dir.resolve("spool").toString())) {
                // Seven busy targets share the 2 cores with the agent: its start alone can take minutes.
                assertEquals(0, agent.awaitExit(Duration.ofSeconds(300)), agent.log());
            }
            for (var r : standIn.accepted()) {
                for (var s : r.request().getSeriesList()) {
                    shipped.add(PprofFiles.parse(s.getSamples(0).getRawProfile().toByteArray()));
                }
            }
            rejections = standIn.rejections();
        } finally {
            standIn.close();
        }
        profile = Profiles.onlyProfile(out, targets); // go tool pprof -raw and Parca's rules accept it
    }

    @AfterAll
    static void stopTargets() throws Exception {
        for (Process t : targets) {
            Targets.kill(t);
        }
        if (cHotDebug != null) {
            Files.deleteIfExists(cHotDebug);
        }
        if (cInlineDebug != null) {
            Files.deleteIfExists(cInlineDebug);
        }
    }

    /**
     * Leaf samples of process {@code pid} in the mapping of {@code mappedFile}: ≥ 95 % show addr2line's file and line
     * of their address in {@code debugFile} ({@code baseNames}: file base names compared, see DebugLineTest); more
     * than 30 % on {@code expectedTopLine} where one is given (the hot loop). Returns the figure line.
     */
    private static String assertNativeLines(String what, long pid, String mappedFile, Path debugFile, boolean baseNames,
                                            String expectedTopLine) throws Exception {
        Profile p = Profiles.read(profile);
        ElfFile elf = ElfFile.open(Path.of(mappedFile));
        List<Long> vaddrs = new ArrayList<>();
        List<String> got = new ArrayList<>();
        List<Long> counts = new ArrayList<>();
        for (Sample s : p.getSampleList()) {
            if (s.getLabelList().stream().noneMatch(l -> p.getStringTable((int) l.getKey()).equals("pid") && l.getNum() == pid)) {
                continue;
            }
            Location leaf = p.getLocation((int) s.getLocationId(0) - 1);
            Mapping m = leaf.getMappingId() == 0 ? null : p.getMapping((int) leaf.getMappingId() - 1);
            if (m == null || !p.getStringTable((int) m.getFilename()).equals(mappedFile)) {
                continue;
            }
            vaddrs.add(elf.fileOffsetToVaddr(leaf.getAddress() - m.getMemoryStart() + m.getFileOffset()));
            got.add(leaf.getLineCount() == 0 ? "??:0" : file(p, leaf.getLine(0)) + ":" + leaf.getLine(0).getLine());
            counts.add(s.getValue(0));
        }
        Path in = dir.resolve("addrs-" + pid);
        Files.writeString(in, String.join("\n", vaddrs.stream().map(v -> "0x" + Long.toHexString(v)).toList()) + "\n");
        String truthText = Commands.run(List.of("sh", "-c", "addr2line -e '" + debugFile + "' < '" + in + "'"), 60).check().output();
        List<String> truth = truthText.lines().map(l -> l.replaceAll(" \\(discriminator \\d+\\)", "").trim()).toList();
        assertEquals(vaddrs.size(), truth.size(), truthText);
        long total = 0;
        long exact = 0;
        long onTop = 0;
        List<String> wrong = new ArrayList<>();
        for (int i = 0; i < vaddrs.size(); i++) {
            String t = truth.get(i);
            String g = got.get(i);
            if (baseNames) {
                t = t.substring(t.lastIndexOf('/') + 1);
                g = g.substring(g.lastIndexOf('/') + 1);
            }
            total += counts.get(i);
            if (!t.startsWith("??") && t.equals(g)) {
                exact += counts.get(i);
            } else if (wrong.size() < 5) {
                wrong.add("0x" + Long.toHexString(vaddrs.get(i)) + " " + g + " != " + t);
            }
            if (g.equals(expectedTopLine)) {
                onTop += counts.get(i);
            }
        }
        String figure = String.format("%s lines: %d of %d leaf samples at the exact file:line (%.2f %%)%s", what, exact,
                total, 100.0 * exact / Math.max(1, total), expectedTopLine == null ? "" : ", " + onTop + " on " + expectedTopLine);
        System.out.println(figure);
        assertTrue(total > 100, what + ": leaf samples " + total);
        assertTrue(exact >= 0.95 * total, what + ": exact " + exact + " of " + total + "; e.g. " + wrong);
        if (expectedTopLine != null) {
            assertTrue(onTop > 0.3 * total, what + ": on " + expectedTopLine + ": " + onTop + " of " + total);
        }
        return figure;
    }

    /** The C loop's line from the debug file under /usr/lib/debug/.build-id, the binary itself without any symbols. */
    @Test
    void strippedCBinaryWithItsDebugFileSplitOffHasExactLines() throws Exception {
        assertNativeLines("C, debug file by build id", cTarget.pid(), cHot.toString(), cHotDebug, false,
                Targets.SOURCES.resolve("lines_hot.c").toAbsolutePath().normalize() + ":" + C_HOT_LINE);
        Profile p = Profiles.read(profile);
        for (Mapping m : p.getMappingList()) {
            if (p.getStringTable((int) m.getFilename()).equals(cHot.toString())) {
                assertEquals(List.of(true, true, true, false), List.of(m.getHasFunctions(), m.getHasFilenames(),
                        m.getHasLineNumbers(), m.getHasInlineFrames()), "nothing is inlined in lines_hot.c at -O1: " + m);
            }
        }
    }

    /**
     * Native inlined functions from the debug file's .debug_info: each leaf sample of lines_inline's stripped binary
     * carries addr2line -i -f's chain (mix at its line, step at its call of mix, hot at its call of step), ≥ 95 %.
     */
    @Test
    void cInlinedFunctionsAreLinesOfTheirLocation() throws Exception {
        Profile p = Profiles.read(profile);
        ElfFile elf = ElfFile.open(cInline);
        List<Long> vaddrs = new ArrayList<>();
        List<List<String>> got = new ArrayList<>();
        List<Long> counts = new ArrayList<>();
        Mapping mapping = null;
        for (Sample s : p.getSampleList()) {
            if (s.getLabelList().stream().noneMatch(l -> p.getStringTable((int) l.getKey()).equals("pid")
                    && l.getNum() == cInlineTarget.pid())) {
                continue;
            }
            Location leaf = p.getLocation((int) s.getLocationId(0) - 1);
            Mapping m = leaf.getMappingId() == 0 ? null : p.getMapping((int) leaf.getMappingId() - 1);
            if (m == null || !p.getStringTable((int) m.getFilename()).equals(cInline.toString())) {
                continue;
            }
            mapping = m;
            vaddrs.add(elf.fileOffsetToVaddr(leaf.getAddress() - m.getMemoryStart() + m.getFileOffset()));
            got.add(leaf.getLineList().stream().map(l -> name(p, l) + " " + file(p, l) + ":" + l.getLine()).toList());
            counts.add(s.getValue(0));
        }
        Path in = dir.resolve("addrs-inline");
        Files.writeString(in, String.join("\n", vaddrs.stream().map(v -> "0x" + Long.toHexString(v)).toList()) + "\n");
        // -a: each chain starts with its address line.
        String truthText = Commands.run(List.of("sh", "-c", "addr2line -a -i -f -e '" + cInlineDebug + "' < '" + in + "'"), 60)
                .check().output();
        List<List<String>> truth = new ArrayList<>();
        String[] t = truthText.split("\n");
        for (int i = 0; i < t.length; ) {
            i++; // the address
            List<String> chain = new ArrayList<>();
            for (; i + 1 < t.length && !t[i].startsWith("0x"); i += 2) {
                chain.add(t[i].trim() + " " + t[i + 1].replaceAll(" \\(discriminator \\d+\\)", "").trim());
            }
            truth.add(chain);
        }
        assertEquals(vaddrs.size(), truth.size(), truthText);
        long total = 0;
        long exact = 0;
        long inMix = 0;
        List<String> wrong = new ArrayList<>();
        String source = Targets.SOURCES.resolve("lines_inline.c").toAbsolutePath().normalize().toString();
        for (int i = 0; i < vaddrs.size(); i++) {
            total += counts.get(i);
            if (got.get(i).equals(truth.get(i))) {
                exact += counts.get(i);
            } else if (wrong.size() < 5) {
                wrong.add("0x" + Long.toHexString(vaddrs.get(i)) + " " + got.get(i) + " != " + truth.get(i));
            }
            if (got.get(i).equals(List.of("mix " + source + ":" + C_MIX_LINE, "step " + source + ":10", "hot " + source + ":16"))) {
                inMix += counts.get(i);
            }
        }
        System.out.printf("C inlined functions: %d of %d leaf samples with addr2line -i's exact chain (%.2f %%), %d in mix <- step <- hot%n",
                exact, total, 100.0 * exact / Math.max(1, total), inMix);
        assertTrue(total > 100, "leaf samples " + total);
        assertTrue(exact >= 0.95 * total, "exact " + exact + " of " + total + "; e.g. " + wrong);
        assertTrue(inMix > 0.3 * total, "in mix <- step <- hot: " + inMix + " of " + total);
        assertNotNull(mapping);
        assertTrue(mapping.getHasInlineFrames(), "the mapping says it has inline frames: " + mapping);
        String top = PprofTool.run("-top", "-lines", "-nodecount=8", "-focus=^(hot|step|mix)$", profile.toString());
        assertTrue(top.lines().anyMatch(l -> l.contains("mix " + source + ":" + C_MIX_LINE + " (inline)")), top);
    }

    /** libc's random_r (C) with Debian's libc6-dbg: the debug file found by build id, compressed DWARF 5. */
    @Test
    void debianLibcWithLibc6DbgHasExactLines() throws Exception {
        String libc = Files.readAllLines(Path.of("/proc/" + libcTarget.pid() + "/maps")).stream()
                .filter(l -> l.contains("/libc.so.6")).findFirst().orElseThrow().replaceAll(".* ", "");
        String id = ElfFile.open(Path.of(libc)).buildId().orElseThrow();
        Path debug = Path.of("/usr/lib/debug/.build-id").resolve(id.substring(0, 2)).resolve(id.substring(2) + ".debug");
        assertTrue(Files.exists(debug), debug + " missing: package libc6-dbg (./loupe test installs it)");
        assertNativeLines("libc6-dbg", libcTarget.pid(), libc, debug, true, null);
    }

    /** objdump's (address → "file:line") of main.hot in {@code build}, lines taken from the non-PIE unstripped build. */
    private static Map<Long, String> truth(String build) throws Exception {
        boolean go115 = build.startsWith("go1.15");
        List<String[]> reference = objdump(builds.get(go115 ? "go1.15" : "normal"), go115);
        String unstripped = go115 ? build.replace("-stripped", "") : build.replace("stripped-pie", "pie").replace("stripped", "normal");
        List<String[]> own = objdump(builds.get(unstripped), go115);
        assertEquals(reference.size(), own.size(), build + ": main.hot's instructions");
        Map<Long, String> out = new HashMap<>();
        for (int i = 0; i < own.size(); i++) {
            assertEquals(reference.get(i)[2], own.get(i)[2], build + ": instruction " + i + " is the non-PIE build's");
            out.put(Long.parseUnsignedLong(own.get(i)[1].substring(2), 16), reference.get(i)[0]);
        }
        return out;
    }

    private static List<String[]> objdump(Path binary, boolean go115) throws Exception {
        Commands.Result r = Commands.run(go115
                ? List.of("env", "GOROOT=" + GoBuild.GO115_ROOT, GoBuild.GO115_ROOT.resolve("bin/go").toString(), "tool", "objdump", "-s",
                        "^main.hot$", binary.toString())
                : List.of(GoBuild.GO.toString(), "tool", "objdump", "-s", "^main.hot$", binary.toString()), 60);
        r.check();
        List<String[]> out = new ArrayList<>();
        for (String line : r.output().split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 3 && f[1].startsWith("0x")) {
                out.add(f);
            }
        }
        return out;
    }

    private static String name(Profile p, Line l) {
        return p.getStringTable((int) p.getFunction((int) l.getFunctionId() - 1).getName());
    }

    private static String file(Profile p, Line l) {
        return p.getStringTable((int) p.getFunction((int) l.getFunctionId() - 1).getFilename());
    }

    /**
     * ≥ 95 % of the leaf samples in main.hot show the exact file and line of their instruction, and those in the
     * inlined mix show main.mix at its line, then main.hot at the call's line.
     */
    private static void assertExactLines(String build) throws Exception {
        Profile p = Profiles.read(profile);
        Map<Long, String> truth = truth(build);
        ElfFile elf = ElfFile.open(builds.get(build));
        String exe = builds.get(build).toString();
        long inHot = 0;
        long exact = 0;
        long inlinedSamples = 0;
        List<String> wrong = new ArrayList<>();
        for (Sample s : p.getSampleList()) {
            Location leaf = p.getLocation((int) s.getLocationId(0) - 1);
            Mapping m = leaf.getMappingId() == 0 ? null : p.getMapping((int) leaf.getMappingId() - 1);
            if (m == null || !p.getStringTable((int) m.getFilename()).equals(exe)) {
                continue;
            }
            long vaddr = elf.fileOffsetToVaddr(leaf.getAddress() - m.getMemoryStart() + m.getFileOffset());
            String expected = truth.get(vaddr);
            if (expected == null) {
                continue; // not main.hot (runtime code, the scheduler)
            }
            inHot += s.getValue(0);
            List<String> got = leaf.getLineList().stream().map(l -> name(p, l) + " " + file(p, l) + ":" + l.getLine()).toList();
            List<String> want = expected.equals("main.go:" + MIX_LINE)
                    ? List.of("main.mix " + mainGo + ":" + MIX_LINE, "main.hot " + mainGo + ":" + CALL_LINE)
                    : List.of("main.hot " + mainGo + ":" + expected.substring("main.go:".length()));
            if (got.equals(want)) {
                exact += s.getValue(0);
                inlinedSamples += want.size() > 1 ? s.getValue(0) : 0;
            } else if (wrong.size() < 5) {
                wrong.add("0x" + Long.toHexString(vaddr) + " " + got + " != " + want);
            }
            assertTrue(m.getHasFunctions() && m.getHasFilenames() && m.getHasLineNumbers() && m.getHasInlineFrames(),
                    "the Go binary's mapping says it has functions, files, lines and inline frames: " + m);
        }
        System.out.printf("Go lines %s: %d of %d leaf samples in main.hot at the exact file:line (%.2f %%), %d in the inlined mix%n",
                build, exact, inHot, 100.0 * exact / Math.max(1, inHot), inlinedSamples);
        assertTrue(inHot > 100, build + ": samples in main.hot: " + inHot);
        assertTrue(exact >= 0.95 * inHot, build + ": exact " + exact + " of " + inHot + "; e.g. " + wrong);
        assertTrue(inlinedSamples > 0.1 * inHot, build + ": samples in the inlined mix " + inlinedSamples + " of " + inHot);
    }

    @Test
    void strippedGoBinaryLeafSamplesHaveTheirExactLine() throws Exception {
        assertExactLines("stripped");
    }

    @Test
    void strippedGoPieLeafSamplesHaveTheirExactLine() throws Exception {
        assertExactLines("stripped-pie");
    }

    /** Go 1.15's pclntab (0xfffffffb), stripped; its inline tree gives the inlined mix. */
    @Test
    void strippedGo115BinaryLeafSamplesHaveTheirExactLine() throws Exception {
        assertExactLines("go1.15-stripped");
    }

    @Test
    void strippedGo115PieLeafSamplesHaveTheirExactLine() throws Exception {
        assertExactLines("go1.15-stripped-pie");
    }

    /** The real go tool pprof -lines shows the hot lines, the inlined mix marked "(inline)". */
    @Test
    void goToolPprofLinesShowsTheHotLinesAndTheInlinedCall() throws Exception {
        String top = PprofTool.run("-top", "-lines", "-nodecount=6", "-focus=^main\\.(hot|mix)$", profile.toString());
        assertTrue(top.contains("main.mix " + mainGo + ":" + MIX_LINE + " (inline)"), top);
        assertTrue(top.contains("main.hot " + mainGo + ":" + LOOP_LINE), top);
        String list = PprofTool.run("-list", "^main.hot$", profile.toString());
        assertTrue(list.lines().anyMatch(l -> l.trim().matches("\\S+\\s+\\S+\\s+" + LOOP_LINE + ":\\s+for i := 0; i < n; i\\+\\+ \\{.*")), list);
    }

    /** {@code --lines off}: the same Go target's locations keep their names, without files, lines or inlined calls. */
    @Test
    void linesOffGivesNamesAlone() throws Exception {
        Path out = dir.resolve("profiles-off");
        Process target = targets.get(0);
        try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(target.pid()), "--frequency", "99",
                "--duration", "5s", "--interval", "60s", "--output", out.toString(), "--http", "off", "--lines", "off")) {
            // Seven busy targets share the 2 cores with the agent: its start alone can take minutes.
            assertEquals(0, agent.awaitExit(Duration.ofSeconds(300)), agent.log());
        }
        Profile p = Profiles.checked(Profiles.files(out).get(0));
        long hot = 0;
        for (Location l : p.getLocationList()) {
            assertTrue(l.getLineCount() <= 1, "no inlined lines: " + l);
            for (Line line : l.getLineList()) {
                assertEquals(0, line.getLine(), "no line numbers: " + l);
                hot += name(p, line).equals("main.hot") ? 1 : 0;
            }
        }
        for (Function f : p.getFunctionList()) {
            assertEquals(0, f.getFilename(), "no file names");
        }
        for (Mapping m : p.getMappingList()) {
            assertFalse(m.getHasFilenames() || m.getHasLineNumbers() || m.getHasInlineFrames(), m.toString());
        }
        assertTrue(hot > 0, "main.hot is still named");
    }

    /** The stand-in (Parca's rules, the line and mapping flag rules among them) accepted every request, lines included. */
    @Test
    void parcaReceivesTheLines() {
        assertEquals(List.of(), rejections);
        assertTrue(!shipped.isEmpty(), "requests reached the stand-in");
        long withInlinedLines = 0;
        for (Profile p : shipped) {
            assertEquals(List.of(), ParcaRules.violations(p));
            for (Location l : p.getLocationList()) {
                if (l.getLineCount() == 2 && name(p, l.getLine(0)).equals("main.mix") && l.getLine(0).getLine() == MIX_LINE
                        && file(p, l.getLine(0)).equals(mainGo) && l.getLine(1).getLine() == CALL_LINE) {
                    withInlinedLines++;
                }
            }
        }
        assertTrue(withInlinedLines >= 2, "both binaries' inlined mix locations shipped with their lines: " + withInlinedLines);
    }
}
