package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SymbolTable;
import dev.loupe.unwinder.golang.GoBinaryException;
import dev.loupe.unwinder.golang.GoSymbolSource;

import java.io.IOException;
import java.nio.file.Path;

/** The symbol source for Go binaries without {@code .symtab}: their pclntab's function names. */
final class StrippedGoSymbols {
    private static final System.Logger LOG = System.getLogger(StrippedGoSymbols.class.getName());

    private StrippedGoSymbols() {}

    /**
     * The pclntab's functions when {@code elf} is a Go binary (it has the section; nothing else is read for
     * other files), else {@code fallback}. An unreadable pclntab, or one whose table would take more than
     * {@code maxBytes} of heap, keeps the fallback and is logged.
     */
    static SymbolTable orElse(Path file, ElfFile elf, SymbolTable fallback, long maxBytes) {
        if (!elf.hasSection(".gopclntab") && !elf.hasSection(".data.rel.ro.gopclntab")) {
            return fallback;
        }
        try {
            SymbolTable go = GoSymbolSource.symbols(file).orElse(null);
            if (go != null && go.memoryFootprintBytes() > maxBytes) {
                LOG.log(System.Logger.Level.WARNING, file + ": Go function table of " + go.size() + " functions exceeds the symbol cache");
                return fallback;
            }
            return go != null && go.size() > fallback.size() ? go : fallback;
        } catch (GoBinaryException | IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "ignoring the pclntab of " + file + ": " + e.getMessage());
            return fallback;
        }
    }
}
