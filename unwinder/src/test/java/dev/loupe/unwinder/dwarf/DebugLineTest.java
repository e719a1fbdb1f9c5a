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
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * .debug_line against binutils' addr2line, byte by byte over real functions: a C program built with -g as DWARF 5,
 * DWARF 4 and DWARF 5 with zlib- and zstd-compressed sections, and Debian's libc through libc6-dbg's debug file (DWARF 5,
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

    /**
     * One build, copied and compressed by objcopy with zlib and with zstd: every byte of hot and main gets the same
     * lines and inline chain as from the uncompressed file, whose first lines are elfutils' eu-addr2line's.
     */
    @Test
    void zlibAndZstdCompressedCopiesOfOneBuildGiveItsLinesExactly() throws Exception {
        Path plain = TestPrograms.compile(dir, "hot", SOURCE, "-O2", "-gdwarf-5");
        SymbolTable symbols = ElfFile.open(plain).symbols();
        List<Long> addrs = new java.util.ArrayList<>();
        for (String f : List.of("hot", "main")) {
            addrs.addAll(DwarfFixture.bytesOf(symbols, DwarfFixture.indexOf(symbols, f, plain)));
        }
        DwarfLineTable want = DwarfLineTable.open(plain, ElfFile.openWithoutSymbols(plain), symbols);
        List<String> eu = DwarfFixture.euAddr2line(plain, addrs);
        int known = 0;
        for (int k = 0; k < addrs.size(); k++) {
            List<SourceLine> l = want.lines(addrs.get(k));
            assertEquals(eu.get(k), l.isEmpty() ? "??:0" : l.get(0).file() + ":" + l.get(0).line(), "0x" + Long.toHexString(addrs.get(k)));
            known += l.isEmpty() ? 0 : 1;
        }
        assertTrue(known > addrs.size() / 2, known + " of " + addrs.size());
        for (String type : List.of("zlib", "zstd")) {
            Path packed = dir.resolve("hot-" + type);
            Files.copy(plain, packed);
            TestPrograms.run(List.of("objcopy", "--compress-debug-sections=" + type, packed.toString()));
            for (String section : List.of(".debug_line", ".debug_info", ".debug_abbrev")) { // objcopy leaves what would grow
                assertEquals(type.toUpperCase(java.util.Locale.ROOT), DwarfFixture.compression(packed, section), packed + " " + section);
            }
            DwarfLineTable got = DwarfLineTable.open(packed, ElfFile.openWithoutSymbols(packed), symbols);
            for (long a : addrs) {
                assertEquals(want.lines(a), got.lines(a), type + " 0x" + Long.toHexString(a));
            }
            assertEquals(null, got.problem());
            assertEquals(null, got.inlineProblem());
            System.out.println(type + ": " + known + " of " + addrs.size() + " bytes of hot and main with lines, as uncompressed");
        }
    }

    /** A zstd-compressed .debug_line cut short, corrupted or shorter than its header says: no lines, a problem naming it. */
    @Test
    void aCorruptZstdSectionGivesNoLinesAndSaysWhy() throws Exception {
        Path bin = TestPrograms.compile(dir, "hot", SOURCE, "-O1", "-gdwarf-5");
        TestPrograms.run(List.of("objcopy", "--compress-debug-sections=zstd", bin.toString()));
        assertEquals("ZSTD", DwarfFixture.compression(bin, ".debug_line"));
        ByteBuffer whole = ElfFile.open(bin).section(".debug_line").orElseThrow();
        byte[] b = new byte[whole.remaining()];
        whole.get(b);
        long hot = TestPrograms.nmAddress(bin, "hot");
        SymbolTable symbols = ElfFile.open(bin).symbols();
        assertTrue(DwarfLineTable.of("whole", ByteBuffer.wrap(b), true, symbols).lines(hot + 4).size() == 1, "the section as it is reads");

        DwarfLineTable cut = DwarfLineTable.of("cut", ByteBuffer.wrap(b, 0, 24 + (b.length - 24) / 2).slice(), true, symbols);
        assertEquals(List.of(), cut.lines(hot + 4));
        assertTrue(cut.problem().startsWith("cut: .debug_line: corrupt zstd stream: "), cut.problem());

        byte[] bad = b.clone();
        Arrays.fill(bad, 24, 28, (byte) 0); // the frame's magic number
        DwarfLineTable corrupt = DwarfLineTable.of("corrupt", ByteBuffer.wrap(bad), true, symbols);
        assertEquals(List.of(), corrupt.lines(hot + 4));
        assertTrue(corrupt.problem().startsWith("corrupt: .debug_line: corrupt zstd stream: "), corrupt.problem());

        byte[] longer = b.clone();
        ByteBuffer.wrap(longer).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(8, 1 << 20);
        DwarfLineTable lie = DwarfLineTable.of("lie", ByteBuffer.wrap(longer), true, symbols);
        assertEquals(List.of(), lie.lines(hot + 4));
        assertTrue(lie.problem().matches("lie: \\.debug_line decompressed to \\d+ bytes, its header says 1048576"), lie.problem());

        byte[] other = b.clone();
        other[0] = 7;
        DwarfLineTable unknown = DwarfLineTable.of("unknown", ByteBuffer.wrap(other), true, symbols);
        assertEquals(List.of(), unknown.lines(hot + 4));
        assertEquals("unknown: .debug_line: compression type 7 (only zlib and zstd are read)", unknown.problem());
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
