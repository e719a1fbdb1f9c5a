package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.TestPrograms;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Probe targets (entry and RET file offsets) against objdump's disassembly with file offsets (-F). */
class FunctionResolverTest {
    @TempDir
    static Path dir;
    static GoTargets targets;

    @BeforeAll
    static void build() throws Exception {
        targets = GoTargets.shared();
    }

    /** objdump's view of one function: entry file offset and each ret's file offset. */
    private static long[] objdumpOffsets(Path binary, String function) throws Exception {
        String out = TestPrograms.run(List.of("objdump", "-d", "-F", "-w", "--insn-width=16", "--disassemble=" + function,
                binary.toString()));
        Matcher head = Pattern.compile("^([0-9a-f]+) <" + Pattern.quote(function) + "> \\(File Offset: 0x([0-9a-f]+)\\):$",
                Pattern.MULTILINE).matcher(out);
        assertTrue(head.find(), "objdump shows " + function + ":\n" + out);
        long vaddr = Long.parseUnsignedLong(head.group(1), 16);
        long fileOff = Long.parseUnsignedLong(head.group(2), 16);
        List<Long> r = new ArrayList<>(List.of(fileOff));
        Matcher ret = Pattern.compile("^\\s*([0-9a-f]+):\\t[0-9a-f ]+\\t(?:repz |rep |bnd )?(?:ret|retq|lret)\\b", Pattern.MULTILINE)
                .matcher(out);
        while (ret.find()) {
            r.add(Long.parseUnsignedLong(ret.group(1), 16) - vaddr + fileOff);
        }
        return r.stream().mapToLong(Long::longValue).toArray();
    }

    private static long[] ours(FunctionResolver.ProbeTarget t) {
        long[] r = t.returnFileOffsets();
        long[] out = new long[r.length + 1];
        out[0] = t.entryFileOffset();
        System.arraycopy(r, 0, out, 1, r.length);
        return out;
    }

    @Test
    void goMethodInNormalPieAndStrippedPie() throws Exception {
        String fn = "main.(*conn).serve";
        long[] normal = objdumpOffsets(targets.normal, fn);
        long[] pie = objdumpOffsets(targets.pie, fn);
        for (Path b : List.of(targets.normal, targets.pie, targets.strippedPie)) {
            FunctionResolver.Resolution r = FunctionResolver.resolve(b, fn);
            assertTrue(r.go());
            assertEquals(b == targets.strippedPie ? FunctionResolver.SymbolSource.GOPCLNTAB : FunctionResolver.SymbolSource.SYMTAB,
                    r.source());
            assertEquals(1, r.functions().size(), r.toString());
            FunctionResolver.ProbeTarget t = r.functions().get(0);
            assertEquals(fn, t.name());
            assertTrue(t.problem().isEmpty(), t.toString());
            assertTrue(t.returnFileOffsets().length >= 2, "serve has several return paths: " + t);
            // objdump cannot name functions in the stripped build: it has the PIE's layout.
            assertArrayEquals(b == targets.normal ? normal : pie, ours(t), b + ": " + t);
        }
    }

    @Test
    void globsMatchByPatternAndAreCapped() throws Exception {
        FunctionResolver.Resolution r = FunctionResolver.resolve(targets.strippedPie, "main.*");
        List<String> names = r.functions().stream().map(FunctionResolver.ProbeTarget::name).sorted().toList();
        assertTrue(names.containsAll(List.of("main.(*conn).serve", "main.main", "main.work", "main.main.func1")), names.toString());
        assertTrue(names.stream().allMatch(n -> n.startsWith("main.")), names.toString());

        FunctionResolutionException many = assertThrows(FunctionResolutionException.class,
                () -> FunctionResolver.resolve(targets.strippedPie, "runtime.*", 50));
        assertEquals(FunctionResolutionException.Reason.TOO_MANY, many.reason());
        long runtimeCount = GoPclntab.read(targets.strippedPie).orElseThrow().functions().stream()
                .filter(f -> f.name().startsWith("runtime.")).count();
        assertEquals(runtimeCount, many.matches());
        assertTrue(many.getMessage().contains("matches " + runtimeCount + " functions, more than the limit of 50"), many.getMessage());

        FunctionResolutionException none = assertThrows(FunctionResolutionException.class,
                () -> FunctionResolver.resolve(targets.normal, "nosuch.*"));
        assertEquals(FunctionResolutionException.Reason.NO_MATCH, none.reason());
        assertTrue(none.getMessage().contains("no function matches 'nosuch.*'"), none.getMessage());

        assertTrue(FunctionResolver.Glob.of("a\\*b?").matches("a*bc"));
        assertTrue(!FunctionResolver.Glob.of("a\\*b").matches("axb"));
    }

    @Test
    void globsMatchAsTheyDidAsRegularExpressionsInLinearTime() {
        String[][] yes = {{"*", ""}, {"*", "x"}, {"main.*", "main.main"}, {"*.(*conn).serve", "net/http.(*conn).serve"},
                {"a?c", "abc"}, {"a?c", "a\u00e9c"}, {"?", "\ud83d\ude00"}, {"*a*a*b", "xaxab"}, {"a**b", "ab"}, {"\\?", "?"},
                {"ab\\", "ab\\"}, {"*.abi0", "runtime.goexit.abi0"}, {"x*y*z", "xyz"}};
        String[][] no = {{"main.*", "runtime.main"}, {"a?c", "ac"}, {"?", ""}, {"*a*a*b", "xaxa"}, {"\\?", "x"}, {"a", "ab"},
                {"ab*", "a"}, {"*b", "ba"}};
        for (String[] c : yes) {
            assertTrue(FunctionResolver.Glob.of(c[0]).matches(c[1]), c[0] + " ~ " + c[1]);
        }
        for (String[] c : no) {
            assertTrue(!FunctionResolver.Glob.of(c[0]).matches(c[1]), c[0] + " !~ " + c[1]);
        }
        // A hostile binary's name: 64 KB of one letter against a pattern that backtracks (16 s for 4 KB as a regex).
        String name = "a".repeat(64 << 10);
        long t0 = System.nanoTime();
        assertTrue(!FunctionResolver.Glob.of("*a*a*b").matches(name));
        assertTrue(FunctionResolver.Glob.of("*a*a*").matches(name));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms < 5_000, "took " + ms + " ms");
    }

    @Test
    void aFunctionWithoutReturnIsReportedWithTheReason() throws Exception {
        // Ends in a tail jump to runtime.morestack (pclntab names it without the .abi0 suffix).
        FunctionResolver.ProbeTarget t = FunctionResolver.resolve(targets.strippedPie, "runtime.morestack_noctxt").functions().get(0);
        assertEquals(0, t.returnFileOffsets().length, t.toString());
        assertTrue(t.problem().orElseThrow().contains("no return instruction"), t.toString());
        assertEquals(1, objdumpOffsets(targets.pie, "runtime.morestack_noctxt.abi0").length, "objdump finds no ret either");
    }

    @Test
    void cFunctionsUseSymbolSizes() throws Exception {
        Path c = TestPrograms.compile(dir, "looper", TestPrograms.LOOPER);
        for (String fn : List.of("helper_two", "local_helper", "main")) {
            FunctionResolver.Resolution r = FunctionResolver.resolve(c, fn);
            assertEquals(FunctionResolver.SymbolSource.SYMTAB, r.source());
            assertTrue(!r.go());
            FunctionResolver.ProbeTarget t = r.functions().get(0);
            assertArrayEquals(objdumpOffsets(c, fn), ours(t), t + " " + Arrays.toString(objdumpOffsets(c, fn)));
        }
        // Exported libc functions of a stripped shared library come from .dynsym.
        FunctionResolver.Resolution libc = FunctionResolver.resolve(TestPrograms.LIBC.toRealPath(), "getpid");
        assertEquals(FunctionResolver.SymbolSource.DYNSYM, libc.source());
        assertTrue(libc.functions().get(0).problem().isEmpty(), libc.toString());
    }
}
