package dev.loupe.unwinder.elf;

/** A PT_LOAD program header. */
public record LoadSegment(long offset, long vaddr, long fileSize, long memSize, int flags) {
    public static final int PF_X = 1;

    public boolean executable() {
        return (flags & PF_X) != 0;
    }
}
