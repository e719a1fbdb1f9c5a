package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.lines.SourceLine;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lines of real Go 1.15 binaries (Debian 11's golang-1.15, the 0xfffffffb pclntab layout: normal, stripped, PIE,
 * stripped PIE) against that toolchain's own {@code go tool addr2line} for a few hundred pcs spread over the whole
 * binary, names against {@link GoPclntab}, and the inline tree of {@code main.loop} (the inlined {@code add}, line 6,
 * called at line 13) against the source.
 */
class GoOldLineTableTest {
    /** Debian 11's Go 1.15 (integration-tests/scripts/bullseye-go.sh). */
    static final Path ROOT = Path.of("/var/cache/loupe/bullseye-go");
    static final Path GOROOT = ROOT.resolve("usr/lib/go-1.15");

    @TempDir
    static Path dir;
    static final Map<String, Path> builds = new LinkedHashMap<>();

    @BeforeAll
    static void build() throws Exception {
        assertTrue(Files.isExecutable(GOROOT.resolve("bin/go")), GOROOT + "/bin/go is missing: run "
                + "integration-tests/scripts/bullseye-go.sh " + ROOT + " (./loupe test does)");
        Path src = dir.resolve("main.go");
        Files.writeString(src, GoLineTableTest.SOURCE);
        builds.put("normal", go(src, "normal"));
        builds.put("stripped", go(src, "stripped", "-ldflags=-s -w"));
        builds.put("pie", go(src, "pie", "-buildmode=pie"));
        builds.put("stripped-pie", go(src, "stripped-pie", "-buildmode=pie", "-ldflags=-s -w"));
    }

    private static Path go(Path src, String name, String... flags) throws Exception {
        Path out = dir.resolve(name);
        // Go's toolchain runs from the Debian 11 root as it is: GOROOT says where its library lives.
        List<String> cmd = new ArrayList<>(List.of("env", "GOROOT=" + GOROOT, "GOCACHE=" + dir.resolve("gocache"),
                "GOPATH=" + dir.resolve("gopath"), "GO111MODULE=off", "CGO_ENABLED=0", GOROOT.resolve("bin/go").toString(), "build"));
        cmd.addAll(List.of(flags));
        cmd.addAll(List.of("-o", out.toString(), src.toString()));
        TestPrograms.run(cmd);
        return out;
    }

    /** What {@code go tool addr2line} says of each pc: {function, "file:line"} ("?" and "?:0" where it knows none). */
    private static List<String[]> addr2line(Path binary, List<Long> pcs) throws Exception {
        Path in = dir.resolve(binary.getFileName() + ".pcs");
        StringBuilder text = new StringBuilder();
        for (long pc : pcs) {
            text.append("0x").append(Long.toHexString(pc)).append('\n');
        }
        Files.writeString(in, text);
        Process p = new ProcessBuilder(GOROOT.resolve("bin/go").toString(), "tool", "addr2line", binary.toString())
                .redirectInput(in.toFile()).redirectErrorStream(true).start();
        try {
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, "addr2line failed:\n" + out);
            String[] lines = out.split("\n");
            assertEquals(2 * pcs.size(), lines.length, out);
            List<String[]> result = new ArrayList<>();
            for (int i = 0; i < pcs.size(); i++) {
                result.add(new String[] {lines[2 * i], lines[2 * i + 1]});
            }
            return result;
        } finally {
            p.destroyForcibly();
        }
    }

    /**
     * The binary Go's tools read lines from: Go 1.15's look for a section named .gopclntab only, and a PIE's is
     * .data.rel.ro.gopclntab; a copy with it renamed has the same bytes at the same addresses.
     */
    private static Path readableByGo(String build) throws Exception {
        Path bin = builds.get(build);
        if (!build.contains("pie")) {
            return bin;
        }
        Path named = dir.resolve(build + ".named");
        TestPrograms.run(List.of("objcopy", "--rename-section", ".data.rel.ro.gopclntab=.gopclntab", bin.toString(), named.toString()));
        return named;
    }

    @Test
    void fewHundredPcsHaveGo115sOwnFileLineAndFunction() throws Exception {
        for (var b : builds.entrySet()) {
            Path bin = b.getValue();
            GoLineTable table = GoLineTable.open(bin, ElfFile.open(bin));
            assertEquals("go1.2", table.format(), b.getKey());
            GoPclntab functions = GoPclntab.read(bin).orElseThrow();
            assertEquals("go1.2", functions.format(), b.getKey());
            // Four pcs in every fourth function: entry, a quarter, a half and the last byte.
            List<Long> pcs = new ArrayList<>();
            for (int i = 0; i < functions.size(); i += 4) {
                GoPclntab.GoFunction f = functions.functions().get(i);
                long size = f.end() - f.entry();
                for (long at : new long[] {0, size / 4, size / 2, size - 1}) {
                    pcs.add(f.entry() + at);
                }
            }
            List<String[]> truth = addr2line(readableByGo(b.getKey()), pcs);
            int withLine = 0;
            for (int i = 0; i < pcs.size(); i++) {
                long pc = pcs.get(i);
                String at = b.getKey() + " 0x" + Long.toHexString(pc);
                List<SourceLine> lines = table.lines(pc);
                String function = functions.lookup(pc).orElseThrow().name();
                assertEquals(truth.get(i)[0], function, at + ": GoPclntab's name is addr2line's");
                if (truth.get(i)[1].equals("?:0") || truth.get(i)[1].equals(":-1")) { // no file (and line -1 or 0)
                    assertEquals(null, lines.get(0).file(), at);
                    continue;
                }
                withLine++;
                SourceLine leaf = lines.get(0);
                assertEquals(truth.get(i)[1], leaf.file() + ":" + leaf.line(), at);
                assertEquals(function, lines.get(lines.size() - 1).function(), at + ": the outermost frame is the function");
            }
            assertTrue(withLine >= 300, b.getKey() + ": " + withLine + " of " + pcs.size() + " pcs have lines");
            assertTrue(table.problem() == null, b.getKey() + ": " + table.problem());
        }
    }

    @Test
    void theInlinedAddHasItsCallSiteInEveryBuild() throws Exception {
        for (var b : builds.entrySet()) {
            Path bin = b.getValue();
            GoLineTable table = GoLineTable.open(bin, ElfFile.open(bin));
            // A GOPATH build's modinfo is an empty string variable in .bss: read as empty, as Go's debug/buildinfo does.
            assertEquals("go1.15.15", GoBuildInfo.read(bin).orElseThrow().version(), b.getKey());
            assertTrue(table.hasInlineTrees(), b.getKey() + ": Go 1.15 (its build info says so)");
            GoPclntab.GoFunction loop = GoPclntab.read(bin).orElseThrow().functions().stream()
                    .filter(f -> f.name().equals("main.loop")).findFirst().orElseThrow();
            List<Long> pcs = new ArrayList<>();
            for (long pc = loop.entry(); pc < loop.end(); pc++) {
                pcs.add(pc);
            }
            List<String[]> truth = addr2line(readableByGo(b.getKey()), pcs);
            String file = dir.resolve("main.go").toString();
            int inlined = 0;
            for (int i = 0; i < pcs.size(); i++) {
                String at = b.getKey() + " 0x" + Long.toHexString(pcs.get(i));
                List<SourceLine> lines = table.lines(pcs.get(i));
                // ":-1": addr2line's "no file, line -1" for the padding after the RET, where the pcfile table has ended.
                assertEquals(truth.get(i)[1], lines.get(0).file() == null ? ":-1" : lines.get(0).file() + ":" + lines.get(0).line(), at);
                if (truth.get(i)[1].equals(file + ":6")) {
                    inlined++;
                    assertEquals(List.of(new SourceLine("main.add", file, 6, 0), new SourceLine("main.loop", file, 13, 0)), lines, at);
                } else {
                    assertEquals(List.of(new SourceLine("main.loop", lines.get(0).file(), lines.get(0).line(), 0)), lines, at);
                }
            }
            assertEquals(13, inlined, b.getKey() + ": bytes of the inlined add (4 instructions)");
        }
    }

    /**
     * Go 1.16-1.17's layout (0xfffffffa), which no Debian toolchain here builds, and 1.2-1.15's, by tables laid out
     * as go1.16.15's and go1.15.15's debug/gosym read them ({@link GoSeeds#linesPclntab}): every function's pcs.
     */
    @Test
    void handLaidPre118TablesGiveEachFunctionsFileAndLines() throws Exception {
        long text = 0x401000;
        for (String format : List.of("go1.2", "go1.16")) {
            GoLineTable table = GoLineTable.parse("seed", java.nio.ByteBuffer.wrap(GoSeeds.linesPclntab(format, text)), text);
            assertEquals(format, table.format());
            for (int i = 0; i < GoSeeds.FUNCS.size(); i++) {
                GoSeeds.Fn f = GoSeeds.FUNCS.get(i);
                for (long off : new long[] {0, f.size() / 2 - 1, f.size() / 2, f.size() - 1}) {
                    long pc = text + f.offset() + off;
                    assertEquals(List.of(new SourceLine(f.name(), GoSeeds.LINES_FILE, GoSeeds.seedLine(i, off, f.size()), 0)),
                            table.lines(pc), format + " 0x" + Long.toHexString(pc));
                }
            }
            GoSeeds.Fn last = GoSeeds.FUNCS.get(GoSeeds.FUNCS.size() - 1);
            assertEquals(List.of(), table.lines(text + last.offset() + last.size()), format + ": past the last function");
            assertEquals(List.of(), table.lines(text - 1), format + ": before the first");
            assertEquals(null, table.problem(), format);
        }
    }
}
