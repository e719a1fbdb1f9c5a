package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.SectionHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What clang (C++ with exceptions: zPLR CIEs, LSDAs) and Go with cgo (compressed .debug_frame) emit, against readelf. */
class CompilerOutputTest {
    @TempDir
    Path tmp;

    @Test
    void clangCxxWithExceptions() throws Exception {
        Path src = tmp.resolve("x.cc");
        Files.writeString(src, """
                #include <cstdio>
                #include <stdexcept>
                #include <vector>
                __attribute__((noinline)) int thrower(int n) { if (n > 3) throw std::runtime_error("big"); return n; }
                __attribute__((noinline)) int middle(int n) { std::vector<int> v(n, n); return thrower(n) + v[0]; }
                int main(int argc, char **) {
                  try { return middle(argc * 5); } catch (const std::exception &e) { std::puts(e.what()); }
                  return 0;
                }
                """);
        Path prog = tmp.resolve("x");
        TestPrograms.run(List.of("clang++", "-O2", "-fomit-frame-pointer", "-o", prog.toString(), src.toString()));
        UnwindTable t = check(prog);
        assertTrue(t.stats().fdes() >= 4, t.stats().toString());
    }

    @Test
    void goWithCgo() throws Exception {
        Path src = tmp.resolve("main.go");
        Files.writeString(src, """
                package main

                /*
                int twice(int x) { return 2 * x; }
                */
                import "C"
                import "fmt"

                func main() { fmt.Println(C.twice(21)) }
                """);
        Path prog = tmp.resolve("cg");
        TestPrograms.run(List.of("env", "GOCACHE=" + tmp.resolve("gocache"), "GOPATH=" + tmp.resolve("gopath"), "GO111MODULE=off",
                "/usr/lib/go-1.19/bin/go", "build", "-o", prog.toString(), src.toString()));
        SectionHeader df = ElfSections.read(prog).find(".debug_frame");
        assertTrue(df != null && (df.flags() & SectionHeader.SHF_COMPRESSED) != 0, "Go's linker compresses .debug_frame");
        UnwindTable t = check(prog);
        assertTrue(t.stats().debugFrameFdes() > 500, "Go functions come from .debug_frame: " + t.stats());
    }

    private UnwindTable check(Path prog) throws Exception {
        UnwindTable t = UnwindTableBuilder.build(prog);
        t.verify();
        assertEquals(0, t.stats().skippedEntries() + t.stats().malformedFdes(), t.stats().firstProblems().toString());
        ReadelfOracleTest.Result r = ReadelfOracleTest.compare(prog, t, tmp, Set.of(".eh_frame", ".debug_frame"));
        assertEquals(t.stats().fdes(), r.fdes(), t.stats().toString());
        assertTrue(r.mismatches().isEmpty(), r.mismatches().size() + " mismatches, e.g.\n"
                + String.join("\n", r.mismatches().subList(0, Math.min(20, r.mismatches().size()))));
        return t;
    }
}
