package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.lines.SourceLine;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lines of real Go binaries (golang-1.19: normal, stripped, PIE, stripped PIE) against {@code go tool objdump}'s
 * file:line of every instruction of {@code main.loop}, and the inline tree against the source: {@code add}'s body
 * (line 6) is inlined into {@code loop} at line 13.
 */
class GoLineTableTest {
    static final String SOURCE = """
            package main

            import "os"

            func add(a, b int) int {
            	return a*31 + b
            }

            //go:noinline
            func loop(n int) int {
            	s := 0
            	for i := 0; i < n; i++ {
            		s = add(s, i)
            	}
            	return s
            }

            func main() {
            	println(loop(len(os.Args) * 1000))
            }
            """;

    @TempDir
    static Path dir;
    static Map<String, Path> builds = new LinkedHashMap<>();

    @BeforeAll
    static void build() throws Exception {
        Path src = dir.resolve("main.go");
        Files.writeString(src, SOURCE);
        builds.put("normal", go(src, "normal"));
        builds.put("stripped", go(src, "stripped", "-ldflags=-s -w"));
        builds.put("pie", go(src, "pie", "-buildmode=pie"));
        builds.put("stripped-pie", go(src, "stripped-pie", "-buildmode=pie", "-ldflags=-s -w"));
    }

    private static Path go(Path src, String name, String... flags) throws Exception {
        Path out = dir.resolve(name);
        List<String> cmd = new ArrayList<>(List.of("env", "GOCACHE=" + dir.resolve("gocache"), "GOPATH=" + dir.resolve("gopath"),
                "GO111MODULE=off", "CGO_ENABLED=0", GoTargets.GO.toString(), "build"));
        cmd.addAll(List.of(flags));
        cmd.addAll(List.of("-o", out.toString(), src.toString()));
        TestPrograms.run(cmd);
        return out;
    }

    /** One instruction as objdump prints it: address, "file:line" (":0" where it has none) and encoding. */
    record Instruction(long address, String line, String bytes) {}

    private static List<Instruction> objdump(Path binary, String function) throws Exception {
        List<Instruction> out = new ArrayList<>();
        String text = TestPrograms.run(List.of(GoTargets.GO.toString(), "tool", "objdump", "-s", "^" + function + "$", binary.toString()));
        for (String line : text.split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 3 && f[1].startsWith("0x")) {
                out.add(new Instruction(Long.parseUnsignedLong(f[1].substring(2), 16), f[0], f[2]));
            }
        }
        return out;
    }

    /**
     * The file:line of each instruction of {@code main.loop} in {@code build}: objdump's own where it can read them;
     * Go 1.19's objdump reads no lines from a PIE (":0"), nor anything from a stripped binary, so those take the
     * line of the same instruction (same index, same encoding: checked) of the non-PIE build.
     */
    private static Map<Long, String> truth(String build) throws Exception {
        List<Instruction> reference = objdump(builds.get("normal"), "main.loop");
        List<Instruction> own = objdump(builds.get(build.replace("stripped-pie", "pie").replace("stripped", "normal")), "main.loop");
        assertEquals(reference.size(), own.size(), build);
        Map<Long, String> out = new LinkedHashMap<>();
        for (int i = 0; i < own.size(); i++) {
            assertEquals(reference.get(i).bytes(), own.get(i).bytes(), build + ": instruction " + i + " is the non-PIE one");
            assertTrue(reference.get(i).line().startsWith("main.go:"), reference.get(i).line());
            out.put(own.get(i).address(), reference.get(i).line());
        }
        return out;
    }

    @Test
    void everyInstructionOfLoopHasObjdumpsLineAndTheInlinedAddHasItsCallSite() throws Exception {
        for (var b : builds.entrySet()) {
            Path bin = b.getValue();
            GoLineTable table = GoLineTable.open(bin, ElfFile.open(bin));
            assertEquals("go1.18", table.format(), b.getKey());
            assertTrue(table.hasInlineTrees(), b.getKey() + ": moduledata.gofunc found");
            Map<Long, String> truth = truth(b.getKey());
            assertEquals(15, truth.size(), b.getKey() + ": instructions of main.loop");
            // The link-time address is the runtime one minus the load bias; objdump prints link-time addresses.
            int inlined = 0;
            for (var e : truth.entrySet()) {
                List<SourceLine> lines = table.lines(e.getKey());
                SourceLine leaf = lines.get(0);
                String at = b.getKey() + " 0x" + Long.toHexString(e.getKey());
                assertEquals(e.getValue(), Path.of(leaf.file()).getFileName() + ":" + leaf.line(), at);
                assertEquals(dir.resolve("main.go").toString(), leaf.file(), at);
                if (e.getValue().equals("main.go:6")) {
                    inlined++;
                    assertEquals(List.of(new SourceLine("main.add", leaf.file(), 6, 0), new SourceLine("main.loop", leaf.file(), 13, 0)),
                            lines, at);
                } else {
                    assertEquals(List.of(new SourceLine("main.loop", leaf.file(), leaf.line(), 0)), lines, at);
                }
            }
            assertEquals(4, inlined, b.getKey() + ": instructions of the inlined add");
        }
    }

    @Test
    void addressesOutsideGoCodeHaveNoLines() throws Exception {
        Path bin = builds.get("normal");
        GoLineTable table = GoLineTable.open(bin, ElfFile.open(bin));
        assertEquals(List.of(), table.lines(0x10));
        assertEquals(List.of(), table.lines(-1));
    }

    @Test
    void aTruncatedOrForeignPclntabIsAClearError() throws Exception {
        Path bin = builds.get("normal");
        ByteBuffer whole = ElfFile.open(bin).section(".gopclntab").orElseThrow();
        GoBinaryException e = assertThrows(GoBinaryException.class,
                () -> GoLineTable.parse("t", ByteBuffer.wrap(new byte[] {(byte) 0xfe, -1, -1, -1, 0, 0, 1, 8}), 0x401000));
        assertTrue(e.getMessage().contains("magic 0xfffffffe: not a Go 1.2+ pclntab"), e.getMessage());
        GoBinaryException shortHeader = assertThrows(GoBinaryException.class,
                () -> GoLineTable.parse("t", ByteBuffer.wrap(new byte[] {(byte) 0xfb, -1, -1, -1, 0, 0, 1, 8}), 0x401000));
        assertTrue(shortHeader.getMessage().contains("field at offset 8 lies outside the 8-byte pclntab"), shortHeader.getMessage());
        GoBinaryException cut = assertThrows(GoBinaryException.class, () -> GoLineTable.parse("cut", whole.slice(0, 4000), 0x401000));
        assertTrue(cut.getMessage().contains("does not fit in 4000 bytes"), cut.getMessage());
        // Every function record overwritten with 0xff: lookups find offsets outside the table and give no lines, never throw.
        byte[] b = new byte[whole.remaining()];
        whole.get(0, b);
        ByteBuffer header = ByteBuffer.wrap(b).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        long nfunc = header.getLong(8);
        long pcln = header.getLong(8 + 7 * 8);
        java.util.Arrays.fill(b, (int) (pcln + 8 * (nfunc + 1)), b.length, (byte) 0xff);
        GoLineTable hostile = GoLineTable.parse("hostile", ByteBuffer.wrap(b), ElfFile.open(bin).sectionHeader(".text").orElseThrow().addr());
        long loop = objdump(bin, "main.loop").get(0).address();
        assertEquals(List.of(), hostile.lines(loop));
        assertTrue(hostile.problem().contains("hostile: .gopclntab lines: "), hostile.problem());
    }
}
