package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.golang.GoLineTable;
import dev.loupe.unwinder.lines.LineTable;

import java.nio.file.Path;

/** The line table of a mapped binary: Go's pclntab, else none. Never throws: a bad table means no lines. */
final class LineTables {
    private static final System.Logger LOG = System.getLogger(ProcSymbolizer.class.getName());

    private LineTables() {}

    /** {@code file}: the binary as it can be opened now (its pclntab is mapped from it). */
    static LineTable open(Path file, ElfFile elf) {
        try {
            if (elf.hasSection(".gopclntab") || elf.hasSection(".data.rel.ro.gopclntab")) {
                GoLineTable go = GoLineTable.open(file, elf);
                if (go != null) {
                    return go;
                }
            }
        } catch (Exception e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "no source lines for " + file + ": " + e.getMessage());
        }
        return LineTable.NONE;
    }
}
