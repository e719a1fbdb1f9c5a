package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.ehframe.ElfSections;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SectionHeader;
import dev.loupe.unwinder.elf.SymbolTable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The instruction-length decoder and ReturnFinder against {@code objdump -d}: every instruction boundary
 * and every return of every function of real binaries (Go's own toolchain binary, a gcc -O2 C program,
 * libc with its AVX2/AVX-512 string functions).
 */
class DecoderObjdumpTest {
    @TempDir
    Path tmp;

    /** Results of one binary's comparison. */
    record Result(int functions, long instructions, long returns, int skippedBad, List<String> mismatches) {}

    @Test
    void everyFunctionOfTheGoToolchainBinary() throws Exception {
        Path go = GoTargets.GO.toRealPath();
        long t0 = System.nanoTime();
        GoPclntab tab = GoPclntab.read(go).orElseThrow();
        long parseMs = (System.nanoTime() - t0) / 1_000_000;
        List<long[]> fns = new ArrayList<>();
        for (GoPclntab.GoFunction f : tab.functions()) {
            fns.add(new long[] {f.entry(), f.end()});
        }
        Result r = compare(go, fns);
        System.out.printf("go toolchain binary: pclntab %d functions parsed in %d ms; %s%n", tab.size(), parseMs, r);
        assertTrue(r.functions() > 10_000, r.toString());
        assertEquals(List.of(), r.mismatches());
        // A function with embedded data that objdump cannot decode is not a check either way; they must be rare.
        assertTrue(r.skippedBad() < 20, r.toString());
    }

    @Test
    void everyFunctionOfAGccO2Program() throws Exception {
        Path prog = TestPrograms.compile(tmp, "c", """
                #include <stdio.h>
                #include <stdlib.h>
                #include <string.h>
                #include <math.h>
                struct node { long v; struct node *next; };
                __attribute__((noinline)) static long sum(struct node *n) { long s = 0; for (; n; n = n->next) s += n->v; return s; }
                __attribute__((noinline)) double norm(const double *x, int n) { double s = 0; for (int i = 0; i < n; i++) s += x[i] * x[i]; return sqrt(s); }
                __attribute__((noinline)) int classify(int c) {
                  switch (c) { case 0: return 7; case 1: return 11; case 2: return 13; case 5: return 17; case 9: return -3; default: return c * 3; }
                }
                __attribute__((noinline)) unsigned long long mix(unsigned long long a) { return (a * 0xC3C3C3C3C3C3C3C3ull) ^ (a >> 13) ^ 0xC3; }
                __attribute__((noinline)) void fill(char *b, int n) { memset(b, 0xC3, n); for (int i = 0; i < n; i++) b[i] ^= (char)(i * 0xC3); }
                int main(int argc, char **argv) {
                  struct node b = {2, 0}, a = {1, &b}; double x[64]; char buf[256];
                  for (int i = 0; i < 64; i++) x[i] = i * 0.5 + argc;
                  fill(buf, argc * 100);
                  printf("%ld %f %d %llu %d\\n", sum(&a), norm(x, 64), classify(argc), mix(argc), buf[3]);
                  return 0;
                }
                """, "-mavx2", "-fno-math-errno");
        List<long[]> fns = functionsFromSymbols(prog);
        Result r = compare(prog, fns);
        System.out.println("gcc -O2 -mavx2 program: " + r);
        assertTrue(r.functions() >= 6, r.toString());
        assertEquals(List.of(), r.mismatches());
        assertEquals(0, r.skippedBad(), r.toString());
    }

    @Test
    void everyFunctionOfLibc() throws Exception {
        Path libc = TestPrograms.LIBC.toRealPath();
        // Its AVX2/EVEX string functions are local symbols (not in .dynsym): decode all of .text, from
        // each exported symbol to the next, as objdump does.
        Result r = compare(libc, wholeText(libc));
        System.out.println("libc, all of .text (VEX, EVEX): " + r);
        assertTrue(r.functions() > 1000, r.toString());
        assertEquals(List.of(), r.mismatches());
    }

    /** .text cut at every symbol start: the places objdump restarts its linear decoding. */
    private static List<long[]> wholeText(Path file) throws Exception {
        SectionHeader text = ElfSections.read(file).find(".text");
        SymbolTable t = ElfFile.open(file).symbols();
        java.util.TreeSet<Long> cuts = new java.util.TreeSet<>(List.of(text.addr(), text.addr() + text.size()));
        for (int i = 0; i < t.size(); i++) {
            if (t.start(i) > text.addr() && t.start(i) < text.addr() + text.size()) {
                cuts.add(t.start(i));
            }
        }
        List<long[]> out = new ArrayList<>();
        Long prev = null;
        for (long c : cuts) {
            if (prev != null) {
                out.add(new long[] {prev, c});
            }
            prev = c;
        }
        return out;
    }

    private static List<long[]> functionsFromSymbols(Path file) throws Exception {
        SymbolTable t = ElfFile.open(file).symbols();
        List<long[]> out = new ArrayList<>();
        for (int i = 0; i < t.size(); i++) {
            if (t.symbolSize(i) > 0) {
                out.add(new long[] {t.start(i), t.start(i) + t.symbolSize(i)});
            }
        }
        return out;
    }

    /** Decodes each function [entry, end) inside .text and compares with objdump's listing of .text. */
    static Result compare(Path file, List<long[]> functions) throws Exception {
        ElfSections es = ElfSections.read(file);
        SectionHeader text = es.find(".text");
        byte[] code = es.contents(text);
        Objdump od = Objdump.disassemble(file, ".text");
        int checked = 0;
        int skipped = 0;
        long insns = 0;
        long rets = 0;
        List<String> mismatches = new ArrayList<>();
        for (long[] f : functions) {
            if (f[0] < text.addr() || f[1] > text.addr() + text.size() || f[1] <= f[0]) {
                continue; // not in .text (e.g. .init, .plt)
            }
            int from = (int) (f[0] - text.addr());
            int to = (int) (f[1] - text.addr());
            int first = od.indexAtOrAfter(f[0]);
            int last = od.indexAtOrAfter(f[1]);
            boolean bad = false;
            for (int k = first; k < last; k++) {
                bad |= od.bad[k];
            }
            if (bad) {
                skipped++;
                continue;
            }
            checked++;
            // Boundaries: our linear decode must visit exactly objdump's instruction starts, with its lengths.
            int k = first;
            int p = from;
            String problem = null;
            while (p < to) {
                int len = X86InstructionLength.length(code, p, to);
                long addr = text.addr() + p;
                if (k >= last || od.addrs[k] != addr || od.lengths[k] != len) {
                    problem = String.format("0x%x: we decode %d bytes, objdump %s", addr, len,
                            k < last ? String.format("0x%x length %d", od.addrs[k], od.lengths[k]) : "nothing");
                    break;
                }
                p += len;
                k++;
                insns++;
            }
            if (problem == null && k != last) {
                problem = String.format("objdump has %d more instructions in the function", last - k);
            }
            ReturnFinder.Returns found = ReturnFinder.find(code, from, to);
            List<Long> expected = new ArrayList<>();
            for (int j = first; j < last; j++) {
                if (od.isReturn[j]) {
                    expected.add(od.addrs[j] - f[0]);
                }
            }
            List<Long> ours = Arrays.stream(found.returnOffsets()).mapToLong(x -> x).boxed().toList();
            if (problem == null && !ours.equals(expected)) {
                problem = "returns at " + ours + ", objdump " + expected;
            }
            rets += ours.size();
            if (problem != null && mismatches.size() < 20) {
                mismatches.add(String.format("function 0x%x-0x%x: %s", f[0], f[1], problem));
            }
        }
        return new Result(checked, insns, rets, skipped, mismatches);
    }
}
