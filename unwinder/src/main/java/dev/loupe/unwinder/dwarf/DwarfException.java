package dev.loupe.unwinder.dwarf;

/** DWARF that cannot be read (malformed, truncated, unsupported); the message names the file, section and problem. */
public final class DwarfException extends Exception {
    public DwarfException(String message) {
        super(message);
    }
}
