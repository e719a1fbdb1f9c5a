package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SymbolTable;
import dev.loupe.unwinder.lines.LineTable;

/**
 * A mapped binary as parsed, or why it could not be (cached too, so a bad file is read and logged once).
 */
sealed interface Binary {
    /** Not a file with symbols (anonymous memory, a device). */
    Binary ANONYMOUS = new Failed("anonymous");
    /** The file could not be opened (process gone, permission): never cached, never carried over a refresh. */
    Binary UNREADABLE = new Failed("unreadable");

    /**
     * Parsed: {@code elf} maps file offsets to link-time addresses; {@code symbols} may come from a debug file;
     * {@code lines} the source lines (Go's pclntab, DWARF), read as addresses are asked for.
     */
    record Loaded(SymbolTable symbols, ElfFile elf, String buildId, LineTable lines) implements Binary {
        Loaded(SymbolTable symbols, ElfFile elf, String buildId) {
            this(symbols, elf, buildId, LineTable.NONE);
        }
    }

    /** Not usable, and why. */
    record Failed(String reason) implements Binary {}

    /** Estimated heap held, for the cache's byte bound. */
    default long weight() {
        return switch (this) {
            case Loaded l -> 1024 + l.symbols().memoryFootprintBytes() + l.lines().weight();
            case Failed f -> 256;
        };
    }

    default boolean hasFunctions() {
        return this instanceof Loaded l && l.symbols().size() > 0;
    }

    default String buildId() {
        return this instanceof Loaded l ? l.buildId() : null;
    }
}
