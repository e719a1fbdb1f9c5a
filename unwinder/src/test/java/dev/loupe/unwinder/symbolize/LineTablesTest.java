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
}
