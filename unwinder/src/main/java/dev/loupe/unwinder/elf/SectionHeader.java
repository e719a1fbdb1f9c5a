package dev.loupe.unwinder.elf;

/** One ELF64 section header, with its name from the section name table ("" if the file has none). */
public record SectionHeader(String name, int type, long flags, long addr, long offset, long size, int link, long entsize,
                            long align) {
    public static final int SHT_SYMTAB = 2;
    public static final int SHT_STRTAB = 3;
    public static final int SHT_NOTE = 7;
    public static final int SHT_NOBITS = 8;
    public static final int SHT_DYNSYM = 11;
    /** sh_flags: the contents start with an Elf64_Chdr and are compressed. */
    public static final long SHF_COMPRESSED = 0x800;

    /** Whether the section occupies bytes in the file (not SHT_NOBITS such as .bss). */
    public boolean hasContents() {
        return type != SHT_NOBITS;
    }
}
