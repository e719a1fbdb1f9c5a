package dev.loupe.unwinder.dwarf;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.fuzz.FuzzInput;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Fuzz target for a DWARF package's unit index ({@link DwarfPackage}): input a dwo id to find, then the
 * {@code .debug_cu_index} bytes. A {@link DwarfException} naming the section is what bad input must give; anything else
 * escaping, a contribution past the 32-bit fields, or a slice outside its section is a finding.
 */
public final class DwarfPackageFuzzTarget {
    private DwarfPackageFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        long id = in.i64();
        byte[] index = in.rest();
        try {
            DwarfPackage p = DwarfPackage.parse("fuzz", ByteBuffer.wrap(index));
            DwarfPackage.Contributions c = p.find(id);
            if (c != null) {
                ByteBuffer section = ByteBuffer.allocate(256);
                for (int sect : new int[] {DwarfPackage.SECT_INFO, DwarfPackage.SECT_ABBREV, DwarfPackage.SECT_STR_OFFSETS,
                        DwarfPackage.SECT_RNGLISTS}) {
                    if (c.offset(sect) > 0xffffffffL || c.size(sect) > 0xffffffffL) {
                        throw new IllegalStateException("contribution past 32 bits: " + c.offset(sect) + " " + c.size(sect));
                    }
                    ByteBuffer s = DwarfPackage.slice("fuzz", ".debug_info.dwo", section, c, sect);
                    if (s.limit() > section.limit()) {
                        throw new IllegalStateException("slice larger than its section");
                    }
                }
            }
        } catch (DwarfException e) {
            if (e.getMessage() == null || !e.getMessage().startsWith("fuzz: .debug_")) {
                throw new IllegalStateException("error without the file and section named: " + e.getMessage(), e);
            }
        }
    }

    /** The unit indexes of a two-unit program's packages: binutils' dwp (DWARF 4, version 2) and llvm-dwp (clang, DWARF 5). */
    public static void writeSeeds(Path dir) throws Exception {
        Path tmp = Files.createTempDirectory("dwp-seeds");
        Files.writeString(tmp.resolve("a.c"), "int b(int);\nint main(int c, char **v) { return b(c) * 3; }\n");
        Files.writeString(tmp.resolve("b.c"), "int b(int x) { return x ^ 5; }\n");
        for (String[] v : List.of(new String[] {"gcc -gdwarf-4", "dwp", "dwarf-4"}, new String[] {"clang -gdwarf-5", "llvm-dwp", "dwarf-5"})) {
            TestPrograms.run(List.of("sh", "-c", "cd '" + tmp + "' && " + v[0] + " -O2 -gsplit-dwarf a.c b.c -o p && timeout 120 "
                    + v[1] + " -e p -o p.dwp"));
            ByteBuffer s = ElfFile.openWithoutSymbols(tmp.resolve("p.dwp")).section(".debug_cu_index").orElseThrow();
            long id = s.duplicate().order(ByteOrder.LITTLE_ENDIAN).getLong(16); // slot 0's signature (a unit's or empty)
            ByteBuffer b = ByteBuffer.allocate(8 + s.remaining()).order(ByteOrder.LITTLE_ENDIAN);
            b.putLong(id).put(s);
            Files.write(dir.resolve("seed-" + v[2]), b.array());
        }
    }
}
