package dev.loupe.unwinder.dwarf;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.ElfFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The unit index of real DWARF packages (binutils' dwp for DWARF 4, version 2; llvm-dwp for DWARF 5) against
 * llvm-dwarfdump's listing of it; truncated and hostile indexes are errors, and a probe of a full table ends.
 */
class DwarfPackageTest {
    @TempDir
    Path dir;

    private Path pack(String v) throws Exception {
        Files.writeString(dir.resolve("a.c"), """
                int b(int);
                static int sq(int x) { return x * x; }
                int a(int x) { int s = 0; for (int i = 0; i < x; i++) s += sq(i) ^ b(i); return s; }
                int main(int c, char **v) { return a(c * 1000); }
                """);
        Files.writeString(dir.resolve("b.c"), "static inline int tw(int x) { return x * 3 + 1; }\nint b(int x) { return tw(x) >> 1; }\n");
        TestPrograms.run(List.of("sh", "-c", "cd '" + dir + "' && gcc -O2 -g " + v + " -gsplit-dwarf a.c b.c -o p" + v));
        // binutils 2.40's dwp writes an empty index for DWARF 5; llvm-dwp 14 spins on some of gcc's -O1 units (a bound).
        String tool = v.equals("-gdwarf-4") ? "dwp" : "llvm-dwp";
        TestPrograms.run(List.of("sh", "-c", "cd '" + dir + "' && timeout 120 " + tool + " -e p" + v + " -o p" + v + ".dwp"));
        return dir.resolve("p" + v + ".dwp");
    }

    @Test
    void everyUnitLlvmDwarfdumpListsIsFoundWithItsContributions() throws Exception {
        for (String v : List.of("-gdwarf-4", "-gdwarf-5")) {
            Path dwp = pack(v);
            ByteBuffer index = ElfFile.openWithoutSymbols(dwp).section(".debug_cu_index").orElseThrow();
            DwarfPackage p = DwarfPackage.parse(dwp.toString(), index);
            String dump = TestPrograms.run(List.of("llvm-dwarfdump", "--debug-cu-index", dwp.toString()));
            assertTrue(dump.contains("version = " + p.version() + ", units = 2,"), dump);
            assertEquals(v.equals("-gdwarf-4") ? 2 : 5, p.version());
            List<String> columns = List.of(dump.lines().filter(l -> l.startsWith("Index")).findFirst().orElseThrow().trim().split("\\s+"));
            Matcher row = Pattern.compile("(?m)^\\s*\\d+ 0x([0-9a-f]{16})((?: \\[0x[0-9a-f]+, 0x[0-9a-f]+\\))+)").matcher(dump);
            int rows = 0;
            while (row.find()) {
                long id = Long.parseUnsignedLong(row.group(1), 16);
                DwarfPackage.Contributions c = p.find(id);
                Matcher cell = Pattern.compile("\\[0x([0-9a-f]+), 0x([0-9a-f]+)\\)").matcher(row.group(2));
                for (int col = 2; cell.find(); col++) {
                    int sect = switch (columns.get(col)) {
                        case "INFO" -> DwarfPackage.SECT_INFO;
                        case "ABBREV" -> DwarfPackage.SECT_ABBREV;
                        case "LINE" -> DwarfPackage.SECT_LINE;
                        case "STR_OFFSETS" -> DwarfPackage.SECT_STR_OFFSETS;
                        case "RNGLISTS" -> DwarfPackage.SECT_RNGLISTS;
                        default -> -1;
                    };
                    if (sect > 0) {
                        long from = Long.parseLong(cell.group(1), 16);
                        assertEquals(from, c.offset(sect), v + " " + columns.get(col));
                        assertEquals(Long.parseLong(cell.group(2), 16) - from, c.size(sect), v + " " + columns.get(col));
                    }
                }
                rows++;
            }
            assertEquals(2, rows, dump);
            assertNull(p.find(0x1234_5678_9abc_def0L));

            int errors = 0;
            for (int n = 0; n < index.limit(); n++) {
                try {
                    DwarfPackage.parse("cut", index.slice(0, n)).find(0);
                } catch (DwarfException e) {
                    assertTrue(e.getMessage().startsWith("cut: .debug_cu_index: "), e.getMessage());
                    errors++;
                }
            }
            assertEquals(index.limit(), errors, v + ": every truncation is refused (the size tables end the section)");
        }
    }

    @Test
    void hostileIndexesAreErrorsAndAFullTableEndsItsProbe() throws Exception {
        // 4 slots, all taken by other ids: a probe for a missing one visits each slot once and ends.
        ByteBuffer full = ByteBuffer.allocate(16 + 4 * 12 + 4 + 2 * 4 * 4).order(ByteOrder.LITTLE_ENDIAN);
        full.putInt(0, 5).putInt(4, 1).putInt(8, 4).putInt(12, 4);
        for (int s = 0; s < 4; s++) {
            full.putLong(16 + 8 * s, 100 + s).putInt(16 + 32 + 4 * s, s + 1);
        }
        full.putInt(16 + 48, DwarfPackage.SECT_INFO);
        DwarfPackage p = assertDoesNotThrowParse(full);
        assertNull(p.find(7));
        // A slot naming a row past the table.
        full.putInt(16 + 32 + 4 * (103 & 3), 9);
        DwarfException e = assertThrows(DwarfException.class, () -> DwarfPackage.parse("bad", full).find(103));
        assertTrue(e.getMessage().contains("names row 9 of 4"), e.getMessage());
        // Slots not a power of two, more units than slots, an unknown version, an unknown column.
        for (int[] header : List.of(new int[] {5, 1, 2, 3}, new int[] {5, 1, 8, 4}, new int[] {3, 1, 1, 1}, new int[] {2, 0, 1, 1})) {
            ByteBuffer b = ByteBuffer.allocate(256).order(ByteOrder.LITTLE_ENDIAN);
            b.putInt(0, header[0]).putInt(4, header[1]).putInt(8, header[2]).putInt(12, header[3]);
            assertThrows(DwarfException.class, () -> DwarfPackage.parse("bad", b));
        }
        ByteBuffer column = full.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        column.putInt(16 + 48, 77);
        e = assertThrows(DwarfException.class, () -> DwarfPackage.parse("bad", column));
        assertTrue(e.getMessage().endsWith("column 0 is section 77"), e.getMessage());
    }

    private static DwarfPackage assertDoesNotThrowParse(ByteBuffer b) {
        try {
            return DwarfPackage.parse("full", b);
        } catch (DwarfException e) {
            throw new AssertionError(e);
        }
    }
}
