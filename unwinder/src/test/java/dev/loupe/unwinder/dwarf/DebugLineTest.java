package dev.loupe.unwinder.dwarf;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SymbolTable;
import dev.loupe.unwinder.lines.SourceLine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * .debug_line against binutils' addr2line, byte by byte over real functions: a C program built with -g as DWARF 5,
 * DWARF 4 and DWARF 5 with zlib-compressed sections, and Debian's libc through libc6-dbg's debug file (DWARF 5,
 * compressed). Hostile input: every truncation of a real section is a DwarfException or a valid table.
 */
public class DebugLineTest {
    public static final String SOURCE = """
            static volatile unsigned long sink;
            __attribute__((noinline)) unsigned long hot(unsigned long n) {
                unsigned long s = 0;
                for (unsigned long i = 0; i < n; i++) {
                    s += i * i ^ (i >> 3);
                }
                return s;
            }
            int main(int argc, char **argv) {
                sink = hot((unsigned long) argc * 1000);
                return 0;
            }
            """;

    @TempDir
    Path dir;

    /** Every byte address of {@code function}: ours equal addr2line's, and at least {@code minKnown} have a line. */
    static int compare(Path dwarfFile, SymbolTable symbols, String function, int minKnown) throws Exception {
        return compare(dwarfFile, symbols, function, minKnown, false);
    }

    /**
     * As above; {@code baseNames}: compare file base names only. Debian builds libc with its compilation directory
     * "./stdlib" as DWARF 5 directory 0; addr2line (BFD) puts .debug_info's comp_dir in front of it again
     * ("./stdlib/./stdlib/msort.c") where the table itself says ./stdlib/msort.c.
     */
    static int compare(Path dwarfFile, SymbolTable symbols, String function, int minKnown, boolean baseNames) throws Exception {
        DwarfLineTable t = DwarfLineTable.open(dwarfFile, ElfFile.openWithoutSymbols(dwarfFile), symbols);
        int i = DwarfFixture.indexOf(symbols, function, dwarfFile);
        List<Long> addrs = DwarfFixture.bytesOf(symbols, i);
        List<String> truth = DwarfFixture.addr2line(dwarfFile, addrs);
        int known = 0;
        for (int k = 0; k < addrs.size(); k++) {
            List<SourceLine> got = t.lines(addrs.get(k));
            String ours = got.isEmpty() ? "??:0" : got.get(0).file() + ":" + got.get(0).line();
            if (baseNames) {
                ours = ours.substring(ours.lastIndexOf('/') + 1);
                truth.set(k, truth.get(k).substring(truth.get(k).lastIndexOf('/') + 1));
            }
            assertEquals(truth.get(k), ours, dwarfFile + " 0x" + Long.toHexString(addrs.get(k)));
            if (!got.isEmpty()) {
                known++;
                assertEquals(symbols.name(i), got.get(got.size() - 1).function(), "the outermost line names the symbol");
            }
        }
        assertTrue(known >= minKnown, function + ": " + known + " addresses with lines of " + addrs.size());
        assertEquals(null, t.problem());
        return known;
    }

    @Test
    void dwarf5Dwarf4AndCompressedMatchAddr2lineOnEveryByteOfHot() throws Exception {
        for (Map.Entry<String, Path> v : DwarfFixture.variants(dir, "hot", SOURCE, "-O1").entrySet()) {
            String variant = v.getKey();
            Path bin = v.getValue();
            int known = compare(bin, ElfFile.open(bin).symbols(), "hot", 20);
            System.out.println(variant + ": " + known + " addresses of hot match addr2line");
        }
    }

    /** Line 5 (the loop body) is where most of hot's bytes are: the known line a profile must show. */
    @Test
    void theLoopBodyIsOnItsSourceLine() throws Exception {
        Path bin = TestPrograms.compile(dir, "hot", SOURCE, "-O1", "-g");
        SymbolTable symbols = ElfFile.open(bin).symbols();
        DwarfLineTable t = DwarfLineTable.open(bin, ElfFile.openWithoutSymbols(bin), symbols);
        int i = DwarfFixture.indexOf(symbols, "hot", bin);
        long onLine5 = 0;
        for (long a = symbols.start(i); a < symbols.start(i) + symbols.symbolSize(i); a++) {
            List<SourceLine> l = t.lines(a);
            if (!l.isEmpty() && l.get(0).line() == 5 && l.get(0).file().equals(dir.resolve("hot.c").toString())) {
                onLine5++;
            }
        }
        assertTrue(onLine5 >= 8, "bytes of hot on hot.c:5: " + onLine5);
    }

    /**
     * Built as make builds, "gcc src/hot.c" from the project's directory: the tables name directory "src" relative
     * to the compilation directory (DWARF 5: directory 0; DWARF 4: .debug_info's DW_AT_comp_dir). Files are named by
     * their full path, as addr2line names them.
     */
    @Test
    void relativeDirectoriesAreJoinedToTheCompilationDirectoryAsAddr2lineJoinsThem() throws Exception {
        for (String v : List.of("-gdwarf-5", "-gdwarf-4")) {
            Path project = Files.createDirectories(dir.resolve("project" + v));
            Path bin = DwarfFixture.compileRelative(project, "hot", SOURCE, "-O1", v);
            String table = TestPrograms.run(List.of("readelf", "--debug-dump=rawline", bin.toString()));
            assertTrue(table.lines().anyMatch(l -> l.matches("\\s*1\\s+(\\(.*\\):\\s*)?src")), v + ": directory 1 is \"src\":\n" + table);
            compare(bin, ElfFile.open(bin).symbols(), "hot", 20);
            DwarfLineTable t = DwarfLineTable.open(bin, ElfFile.openWithoutSymbols(bin), ElfFile.open(bin).symbols());
            long hot = TestPrograms.nmAddress(bin, "hot");
            assertEquals(project.resolve("src/hot.c").toString(), t.lines(hot).get(0).file(), v);
        }
    }

    @Test
    void debianLibcThroughLibc6DbgMatchesAddr2line() throws Exception {
        Path debug = DwarfFixture.libcDebugFile();
        SymbolTable symbols = ElfFile.open(debug).symbols();
        int known = 0;
        for (String f : List.of("qsort_r", "____strtol_l_internal", "getenv")) {
            known += compare(debug, symbols, f, 10, true);
        }
        DwarfLineTable t = DwarfLineTable.open(debug, ElfFile.openWithoutSymbols(debug), symbols);
        long qsort = symbols.start(DwarfFixture.indexOf(symbols, "qsort_r", debug));
        assertEquals("./stdlib/msort.c", t.lines(qsort).get(0).file(), "directory 0 joined to the file name");
        System.out.println("libc6-dbg: " + known + " addresses of qsort_r, ____strtol_l_internal, getenv match addr2line");
    }

    @Test
    void everyTruncationOfARealSectionIsAClearErrorOrAValidTable() throws Exception {
        Path bin = TestPrograms.compile(dir, "hot", SOURCE, "-O1", "-gdwarf-5");
        ByteBuffer whole = ElfFile.open(bin).section(".debug_line").orElseThrow();
        int errors = 0;
        for (int n = 0; n < whole.limit(); n++) {
            try {
                DebugLine d = DebugLine.parse("cut", whole.slice(0, n), null, null);
                d.find(0x1139);
            } catch (DwarfException e) {
                errors++;
                assertTrue(e.getMessage().startsWith("cut: .debug_line: "), e.getMessage());
            }
        }
        assertTrue(errors > whole.limit() / 2, errors + " of " + whole.limit() + " truncations rejected");
        DwarfException e = assertThrows(DwarfException.class,
                () -> DebugLine.parse("bad", ByteBuffer.wrap(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 1}), null, null));
        assertTrue(e.getMessage().contains("truncated"), e.getMessage());
    }

    @Test
    void aCompressedSectionClaimingTooMuchIsRefusedWithoutAllocatingIt() {
        ByteBuffer chdr = ByteBuffer.allocate(40).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        chdr.putInt(0, 1).putLong(8, 1L << 40);
        DwarfLineTable t = DwarfLineTable.of("huge", chdr, true, SymbolTable.EMPTY);
        assertEquals(List.of(), t.lines(0x1000));
        assertTrue(t.problem().contains("inflates to 1099511627776 bytes, more than"), t.problem());
    }
}
