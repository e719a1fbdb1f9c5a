package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.SectionHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * .debug_frame (plain, zlib-compressed, DWARF64, CIE versions 3 and 4) and unusual .eh_frame encodings,
 * each checked row by row against readelf.
 */
class DebugFrameTest {
    static final String PROGRAM = """
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            __attribute__((noinline)) int rec(int n, char *buf) { char a[100]; memcpy(a, buf, 8); a[n % 100] = n; if (n == 0) return a[0]; return rec(n - 1, a) + a[3]; }
            __attribute__((noinline)) int big(int n) { volatile char x[70000]; x[n] = 1; return x[n / 2]; }
            __attribute__((noinline)) int dyn(int n) { char *p = __builtin_alloca(n * 16 + 1); memset(p, n, n * 16); return p[n] + rec(n, p); }
            int main(int argc, char **argv) { printf("%d %d %d\\n", rec(argc * 10, argv[0]), big(argc), dyn(argc)); return 0; }
            """;

    @TempDir
    Path tmp;

    @ParameterizedTest
    @ValueSource(strings = {"-g", "-g -gz"})
    void gccDebugFrameMatchesReadelf(String debugFlag) throws Exception {
        List<String> flags = new ArrayList<>(List.of(debugFlag.split(" ")));
        flags.addAll(List.of("-fno-asynchronous-unwind-tables", "-fomit-frame-pointer"));
        Path prog = TestPrograms.compile(tmp, "prog", PROGRAM, flags.toArray(String[]::new));
        SectionHeader df = ElfSections.read(prog).find(".debug_frame");
        assertEquals(debugFlag.contains("-gz"), (df.flags() & SectionHeader.SHF_COMPRESSED) != 0, "SHF_COMPRESSED");
        UnwindTable t = UnwindTableBuilder.build(prog);
        t.verify();
        assertTrue(t.stats().sections().contains(".debug_frame"), t.stats().toString());
        assertTrue(t.stats().debugFrameFdes() >= 4, "rec, big, dyn, main from .debug_frame: " + t.stats());
        ReadelfOracleTest.Result r = ReadelfOracleTest.compare(prog, t, tmp, Set.of(".eh_frame", ".debug_frame"));
        assertEquals(t.stats().fdes(), r.fdes());
        assertTrue(r.mismatches().isEmpty(), String.join("\n", r.mismatches()));
        assertEquals(0, t.stats().skippedEntries() + t.stats().malformedFdes(), t.stats().firstProblems().toString());
    }

    @Test
    void handWrittenCfiCoversEveryOpAndEncoding() throws Exception {
        Path src = tmp.resolve("cfi-ops.s");
        try (InputStream in = getClass().getResourceAsStream("/ehframe/cfi-ops.s")) {
            Files.write(src, in.readAllBytes());
        }
        Path prog = tmp.resolve("cfi-ops");
        TestPrograms.run(List.of("gcc", "-nostartfiles", "-no-pie", "-Wl,-e,main", "-o", prog.toString(), src.toString()));
        UnwindTable t = UnwindTableBuilder.build(prog);
        t.verify();
        BuildStats s = t.stats();
        assertEquals(5, s.fdes(), s.toString());
        assertEquals(2, s.debugFrameFdes(), s.toString());
        assertEquals(0, s.skippedEntries() + s.malformedFdes(), s.firstProblems().toString());
        ReadelfOracleTest.Result r = ReadelfOracleTest.compare(prog, t, tmp, Set.of(".eh_frame", ".debug_frame"));
        assertEquals(5, r.fdes());
        assertTrue(r.rows() >= 30, "rows " + r.rows());
        assertTrue(r.mismatches().isEmpty(), String.join("\n", r.mismatches()));
        // the file exercises every rule kind the compiler can produce except PLT and SIGNAL (GdbStackTest has those)
        Set<String> kinds = new HashSet<>();
        for (long rule : t.ruleWords()) {
            kinds.add(UnwindRule.toString(rule).replaceAll("[+-]\\d+", "N"));
        }
        List<String> want = new ArrayList<>(List.of("rspN", "rspN rbp=cN", "rbpN rbp=cN", "rbpN rbp=?", "rbpN",
                "stop(end of stack)", "stop(unsupported CFA expression)", "stop(unsupported CFA register)",
                "stop(unsupported return-address rule)", "stop(unsupported signal frame)", "stop(no unwind info)"));
        want.removeAll(kinds);
        assertEquals(List.of(), want, "rule kinds not produced; produced: " + kinds);
    }
}
