package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.Symbolizer;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A running stripped Go PIE symbolizes (through its pclntab) to the names go tool nm gives the unstripped build. */
class GoSymbolizeTest {
    @Test
    void strippedGoPieSymbolizesLikeGoToolNmOfTheUnstrippedBuild() throws Exception {
        GoTargets t = GoTargets.shared();
        Map<String, Long> nm = GoTargets.nmText(t.pie);
        Process p = new ProcessBuilder(t.strippedPie.toString(), "wait").redirectErrorStream(true).start();
        try {
            int pid = (int) p.pid();
            List<MapEntry> maps = waitForMapping(pid, t.strippedPie);
            List<long[]> loads = TestPrograms.loads(t.strippedPie);
            GoPclntab tab = GoPclntab.read(t.strippedPie).orElseThrow();
            List<String> names = new ArrayList<>();
            List<Long> addrs = new ArrayList<>();
            nm.forEach((name, vaddr) -> {
                if (!name.equals("runtime.text") && !name.equals("runtime.etext")) {
                    long size = tab.lookup(vaddr).map(f -> f.end() - f.entry()).orElse(1L);
                    names.add(name);
                    addrs.add(TestPrograms.runtimeAddress(t.strippedPie, loads, maps, vaddr + Math.min(3, size - 1)));
                }
            });
            long main = nm.get("main.main");
            assertTrue(TestPrograms.runtimeAddress(t.strippedPie, loads, maps, main) != main, "the PIE is loaded at a bias");
            try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
                long[] a = addrs.stream().mapToLong(Long::longValue).toArray();
                for (int i = 0; i < a.length; i++) {
                    List<Frame> one = new ArrayList<>();
                    s.symbolizeUser(pid, new long[] {a[i]}, 1, one); // a leaf frame: the exact address
                    assertEquals(pclntabName(names.get(i)), one.get(0).function(), names.get(i) + " at 0x" + Long.toHexString(a[i]));
                }
                System.out.println("stripped Go PIE: " + a.length + " functions symbolized as go tool nm names them");
                assertTrue(a.length > 1000);
                assertEquals(0, s.stats().binaryFailures());
            }
        } finally {
            p.destroyForcibly();
            p.waitFor();
        }
    }

    /**
     * The running stripped PIE's frame at main.work's entry carries the source position of the {@code func work} line
     * (Go puts a function's first instruction there) in main.go; with lines off the frame has its name alone.
     */
    @Test
    void aStrippedGoPieFrameCarriesItsFileAndLineUnlessLinesAreOff() throws Exception {
        GoTargets t = GoTargets.shared();
        long work = GoTargets.nmText(t.pie).get("main.work");
        int line = (int) GoTargets.SOURCE.substring(0, GoTargets.SOURCE.indexOf("func work(")).lines().count() + 1;
        Process p = new ProcessBuilder(t.strippedPie.toString(), "wait").redirectErrorStream(true).start();
        try {
            int pid = (int) p.pid();
            List<MapEntry> maps = waitForMapping(pid, t.strippedPie);
            long at = TestPrograms.runtimeAddress(t.strippedPie, TestPrograms.loads(t.strippedPie), maps, work);
            try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
                List<Frame> on = new ArrayList<>();
                s.symbolizeUser(pid, new long[] {at}, 1, on);
                String file = t.strippedPie.getParent().resolve("main.go").toString();
                assertEquals(List.of(new dev.loupe.unwinder.lines.SourceLine("main.work", file, line, 0)), on.get(0).sourceLines());
                s.lines(false);
                List<Frame> off = new ArrayList<>();
                s.symbolizeUser(pid, new long[] {at}, 1, off);
                assertEquals("main.work", off.get(0).function());
                assertEquals(List.of(), off.get(0).sourceLines());
            }
        } finally {
            p.destroyForcibly();
            p.waitFor();
        }
    }

    /** nm's name as the pclntab stores it: no ".abi0" suffix, type arguments elided to "[...]". */
    private static String pclntabName(String nm) {
        String n = nm.endsWith(".abi0") ? nm.substring(0, nm.length() - 5) : nm;
        int i = n.indexOf('[');
        int j = n.lastIndexOf(']');
        return i >= 0 && j > i ? n.substring(0, i) + "[...]" + n.substring(j + 1) : n;
    }

    private static List<MapEntry> waitForMapping(int pid, Path binary) throws Exception {
        for (int i = 0; i < 500; i++) {
            try {
                List<MapEntry> maps = ProcMaps.read(Path.of("/proc"), pid);
                if (maps.stream().anyMatch(m -> m.executable() && m.path().equals(binary.toString()))) {
                    return maps;
                }
            } catch (java.io.IOException notYet) {
                // the process is not there yet
            }
            Thread.sleep(10);
        }
        throw new AssertionError("process " + pid + " did not map " + binary);
    }
}
