package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.elf.SymbolTable;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Function names for Go binaries stripped of {@code .symtab} ({@code -ldflags=-s}), from the pclntab the
 * Go runtime keeps for its own tracebacks. Addresses are the file's link-time addresses, as in
 * {@link dev.loupe.unwinder.elf.ElfFile#symbols()}.
 */
public final class GoSymbolSource {
    private GoSymbolSource() {}

    /**
     * The pclntab's functions of {@code file} if it is a Go binary; empty for any other file. Callers use
     * it when the ELF symbol table is missing (a binary with {@code .symtab} has the same names, and more).
     */
    public static Optional<SymbolTable> symbols(Path file) throws GoBinaryException, IOException {
        return GoPclntab.read(file).map(GoPclntab::symbolTable);
    }
}
