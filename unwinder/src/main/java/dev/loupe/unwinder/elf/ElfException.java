package dev.loupe.unwinder.elf;

/** A file that is not a readable ELF64 x86-64 object; the message names the file and the problem. */
public final class ElfException extends Exception {
    public ElfException(String message) {
        super(message);
    }
}
