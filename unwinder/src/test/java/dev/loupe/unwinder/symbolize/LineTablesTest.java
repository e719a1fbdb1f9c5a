package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.dwarf.DebugLineTest;
import dev.loupe.unwinder.dwarf.DwarfLineTable;
import dev.loupe.unwinder.dwarf.InlineChainTest;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.lines.LineTable;
import dev.loupe.unwinder.lines.SourceLine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Where a binary's DWARF comes from, as gdb looks: /usr/lib/debug/.build-id in the process's root, then the
 * .gnu_debuglink name next to the binary, in its .debug directory and under /usr/lib/debug; a file with another build
 * id at a debuglink place is not taken. The process's root is a directory standing for a container's file system.
 */
class LineTablesTest {
    @TempDir
    Path dir;

    @Test
    void debugFilesAreFoundWhereGdbLooksInsideTheProcessRoot() throws Exception {
        Path root = Files.createDirectories(dir.resolve("root"));
        Path app = Files.createDirectories(root.resolve("opt/app"));
        Path bin = TestPrograms.compile(app, "prog", DebugLineTest.SOURCE, "-O1", "-g", "-Wl,--build-id");
        String id = ElfFile.open(bin).buildId().orElseThrow();
        Path debug = dir.resolve("prog.debug");
        TestPrograms.splitDebugFile(bin, debug, "--strip-debug"); // keeps .symtab, adds .gnu_debuglink "prog.debug"
        ElfFile elf = ElfFile.open(bin);
        String mapped = "/opt/app/prog";
        long hot = TestPrograms.nmAddress(bin, "hot");

        assertEquals(List.of(), LineTables.debugFiles(bin, elf, root, mapped, id), "no debug file anywhere yet");
        for (Path place : List.of(app.resolve("prog.debug"), app.resolve(".debug/prog.debug"),
                root.resolve("usr/lib/debug/opt/app/prog.debug"), TestPrograms.buildIdPath(root.resolve("usr/lib/debug"), id))) {
            Files.createDirectories(place.getParent());
            Files.copy(debug, place);
            assertEquals(List.of(place), LineTables.debugFiles(bin, elf, root, mapped, id), place.toString());
            LineTable t = LineTables.open(bin, elf, root, mapped, id, elf.symbols());
            assertInstanceOf(DwarfLineTable.class, t, place.toString());
            List<SourceLine> at = t.lines(hot + 0x10);
            assertEquals("hot", at.get(0).function());
            assertEquals(app.resolve("prog.c").toString(), at.get(0).file(), place.toString());
            Files.delete(place);
        }

        // Another build's debug file under the debuglink's name: its build id differs, so it is not this binary's.
        Path other = TestPrograms.compile(dir, "other", DebugLineTest.SOURCE.replace("i >> 3", "i >> 4"), "-O1", "-g",
                "-Wl,--build-id");
        Files.copy(other, app.resolve("prog.debug"));
        assertEquals(List.of(), LineTables.debugFiles(bin, elf, root, mapped, id));
        assertEquals(LineTable.NONE, LineTables.open(bin, elf, root, mapped, id, elf.symbols()));
    }

    /**
     * Debian's -dbgsym layout, inside a container's root: dwz -m moved the common DIEs to
     * /usr/lib/debug/.dwz/x86_64-linux-gnu/NAME.debug (named so, absolute, in the debug file's .gnu_debugaltlink), the
     * debug file sits under /usr/lib/debug/.build-id, the binary is stripped. The host has no such .dwz file: it is
     * found in the process's root. Every pc of hot gets the chain the same code had before dwz.
     */
    @Test
    void dwzCommonFileOfADbgsymPackageIsFoundInsideTheProcessRoot() throws Exception {
        Path root = Files.createDirectories(dir.resolve("root"));
        Path bin = TestPrograms.compile(Files.createDirectories(root.resolve("usr/bin")), "prog", InlineChainTest.SOURCE,
                "-O2", "-g", "-Wl,--build-id");
        Path before = Files.copy(bin, dir.resolve("prog.before"));
        Path twin = Files.copy(bin, dir.resolve("prog.twin"));
        String dwzName = "/usr/lib/debug/.dwz/x86_64-linux-gnu/loupe-test-" + dir.getFileName() + ".debug";
        Path common = root.resolve(dwzName.substring(1));
        Files.createDirectories(common.getParent());
        assertFalse(Files.exists(Path.of(dwzName)), "the host has no " + dwzName);
        TestPrograms.run(List.of("dwz", "-m", common.toString(), "-M", dwzName, bin.toString(), twin.toString()));
        String id = ElfFile.open(bin).buildId().orElseThrow();
        Path debug = TestPrograms.buildIdPath(root.resolve("usr/lib/debug"), id);
        Files.createDirectories(debug.getParent());
        TestPrograms.run(List.of("objcopy", "--only-keep-debug", bin.toString(), debug.toString()));
        TestPrograms.run(List.of("objcopy", "--strip-all", bin.toString()));
        assertTrue(TestPrograms.run(List.of("readelf", "-p", ".gnu_debugaltlink", debug.toString())).contains(dwzName));

        ElfFile elf = ElfFile.open(bin);
        ElfFile unstripped = ElfFile.open(before);
        LineTable t = LineTables.open(bin, elf, root, "/usr/bin/prog", id, unstripped.symbols());
        assertInstanceOf(DwarfLineTable.class, t);
        DwarfLineTable truth = DwarfLineTable.open(before, ElfFile.openWithoutSymbols(before), unstripped.symbols());
        long hot = TestPrograms.nmAddress(before, "hot");
        int chains = 0;
        for (long pc = hot; pc < hot + 64; pc++) {
            List<SourceLine> want = truth.lines(pc);
            assertEquals(want, t.lines(pc), "0x" + Long.toHexString(pc));
            chains += want.size() > 1 && !want.get(0).function().equals("?") ? 1 : 0;
        }
        assertTrue(chains >= 4, "pcs of hot with named inlined functions: " + chains);
        assertEquals(null, ((DwarfLineTable) t).inlineProblem());
    }

    /**
     * A real Debian debug package inside a container's root: libc6-dbg's debug file for this libc (Debian's .build-id
     * layout; installed on the host by ./loupe test) copied to ROOT/usr/lib/debug/.build-id/xx/rest.debug, libc itself
     * to ROOT/lib/x86_64-linux-gnu. The root's file is found first by build id, and every byte of four libc functions
     * has the line elfutils' eu-addr2line gives from that file (file base names compared: Debian builds libc with the
     * compilation directory "./stdlib" as DWARF 5 directory 0, which eu-addr2line and addr2line prefix twice).
     */
    @Test
    void debianLibcDebugPackageInsideTheProcessRootMatchesEuAddr2line() throws Exception {
        Path libc = TestPrograms.LIBC.toRealPath();
        String id = ElfFile.open(libc).buildId().orElseThrow();
        Path hostDebug = TestPrograms.buildIdPath(Path.of("/usr/lib/debug"), id);
        assertTrue(Files.exists(hostDebug), "no " + hostDebug + " (package libc6-dbg; ./loupe test installs it)");
        Path root = Files.createDirectories(dir.resolve("root"));
        Path debug = TestPrograms.buildIdPath(root.resolve("usr/lib/debug"), id);
        Files.createDirectories(debug.getParent());
        Files.copy(hostDebug, debug);
        Path bin = Files.createDirectories(root.resolve("lib/x86_64-linux-gnu")).resolve("libc.so.6");
        Files.copy(libc, bin);
        ElfFile elf = ElfFile.open(bin);
        String mapped = "/lib/x86_64-linux-gnu/libc.so.6";
        assertEquals(debug, LineTables.debugFiles(bin, elf, root, mapped, id).get(0), "the root's debug file comes first");

        var symbols = ElfFile.open(debug).symbols(); // .symtab: static functions too
        LineTable t = LineTables.open(bin, elf, root, mapped, id, symbols);
        assertInstanceOf(DwarfLineTable.class, t);
        int known = 0;
        int bytes = 0;
        for (String function : List.of("qsort_r", "getenv", "____strtol_l_internal", "__libc_malloc")) {
            long at = TestPrograms.nmAddress(debug, function);
            int i = -1;
            for (int k = 0; k < symbols.size() && i < 0; k++) {
                i = symbols.start(k) == at ? k : -1;
            }
            assertTrue(i >= 0, function);
            StringBuilder addrs = new StringBuilder();
            for (long a = at; a < at + symbols.symbolSize(i); a++) {
                addrs.append("0x").append(Long.toHexString(a)).append('\n');
            }
            Path in = dir.resolve(function + ".addrs");
            Files.writeString(in, addrs);
            List<String> truth = TestPrograms.run(List.of("sh", "-c", "eu-addr2line -e '" + debug + "' < '" + in + "'")).lines().toList();
            assertEquals(symbols.symbolSize(i), truth.size(), function);
            for (int k = 0; k < truth.size(); k++) {
                long a = at + k;
                String want = truth.get(k).replaceAll(":(\\d+):\\d+$", ":$1");
                want = want.substring(want.lastIndexOf('/') + 1);
                List<SourceLine> got = t.lines(a);
                String ours = got.isEmpty() ? "??:0" : got.get(0).file().substring(got.get(0).file().lastIndexOf('/') + 1) + ":" + got.get(0).line();
                assertEquals(want, ours, function + " 0x" + Long.toHexString(a));
                known += got.isEmpty() ? 0 : 1;
                bytes++;
            }
        }
        assertTrue(known > bytes * 9 / 10, known + " of " + bytes + " bytes with lines");
        System.out.println("libc6-dbg in a process root: " + known + " of " + bytes + " bytes of 4 functions with eu-addr2line's line");
    }
}
