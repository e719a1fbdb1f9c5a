package dev.loupe.unwinder.dwarf;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SymbolTable;
import dev.loupe.unwinder.fuzz.FuzzInput;
import dev.loupe.unwinder.lines.SourceLine;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Fuzz target for the DWARF line reader: {@link DebugLine#parse} and lookups over a {@code .debug_line} section, and
 * {@link DwarfLineTable} over a SHF_COMPRESSED one (Elf64_Chdr + zlib or zstd). Input: a flags byte (bit 0: compressed; bit 1:
 * DWARF 2-4 units have a compilation directory, joined to their relative names), an address to look up, then the
 * section's bytes. A {@link DwarfException} naming the section is what bad input must
 * give; anything else escaping, a negative line, or a lookup that throws from {@link DwarfLineTable#lines} is a finding.
 */
public final class DebugLineFuzzTarget {
    private DebugLineFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        int flags = in.u8();
        boolean compressed = (flags & 1) != 0;
        DebugLine.CompDirs compDirs = (flags & 2) != 0 ? unit -> "/comp/dir" : DebugLine.CompDirs.NONE;
        long address = in.i64();
        byte[] section = in.rest();
        if (compressed) {
            // Never throws: a bad section means no lines, and a problem that says why.
            DwarfLineTable t = DwarfLineTable.of("fuzz", ByteBuffer.wrap(section), true, SymbolTable.EMPTY);
            List<SourceLine> l = t.lines(address);
            if (!l.isEmpty()) {
                throw new IllegalStateException("lines without a symbol table: " + l);
            }
            if (t.problem() != null && !t.problem().startsWith("fuzz: .debug_line")) {
                throw new IllegalStateException("problem without the file and section named: " + t.problem());
            }
            return;
        }
        try {
            DebugLine d = DebugLine.parse("fuzz", ByteBuffer.wrap(section), null, null, compDirs);
            for (long a : new long[] {address, 0, address + 1, address - 1}) {
                DebugLine.Position p = d.find(a);
                if (p != null && p.line() < 0) {
                    throw new IllegalStateException("negative line " + p);
                }
            }
            if (d.sequenceCount() > section.length) {
                throw new IllegalStateException(d.sequenceCount() + " sequences from " + section.length + " bytes");
            }
        } catch (DwarfException e) {
            if (e.getMessage() == null || !e.getMessage().startsWith("fuzz: .debug_line")) {
                throw new IllegalStateException("error without the file and section named: " + e.getMessage(), e);
            }
        }
    }

    /** A small C program's .debug_line as DWARF 4, DWARF 5, and DWARF 5 zlib- and zstd-compressed (with its Elf64_Chdr). */
    public static void writeSeeds(Path dir) throws Exception {
        Path tmp = Files.createTempDirectory("debugline-seeds");
        for (String v : List.of("dwarf-4", "dwarf-5", "compressed", "zstd")) {
            Path bin = TestPrograms.compile(tmp, "hot_" + v.replace('-', '_'), DebugLineTest.SOURCE, "-O1",
                    v.equals("dwarf-4") ? "-gdwarf-4" : "-gdwarf-5");
            if (v.equals("compressed") || v.equals("zstd")) {
                TestPrograms.run(List.of("objcopy", "--compress-debug-sections=" + (v.equals("zstd") ? "zstd" : "zlib"), bin.toString()));
            }
            ByteBuffer s = ElfFile.open(bin).section(".debug_line").orElseThrow();
            long hot = TestPrograms.nmAddress(bin, "hot");
            ByteBuffer b = ByteBuffer.allocate(9 + s.remaining()).order(ByteOrder.LITTLE_ENDIAN);
            b.put((byte) (v.equals("compressed") || v.equals("zstd") ? 1 : 0)).putLong(hot + 4).put(s);
            Files.write(dir.resolve("seed-" + v), b.array());
        }
    }
}
