package dev.loupe.unwinder.elf;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.ehframe.EhFrameException;
import dev.loupe.unwinder.ehframe.ElfSections;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The three views of an ELF file ({@link ElfFile}, {@link ElfSections}, {@link ElfLoadSegments}) read their
 * headers through {@link ElfHeaders}: the same malformed file gives each the same error, from a file and
 * from an in-memory image alike.
 */
class ElfHeadersTest {
    @TempDir
    Path dir;

    @Test
    void malformedHeadersGiveEveryViewTheSameError() throws Exception {
        Path bin = TestPrograms.compile(dir, "prog", TestPrograms.LOOPER);
        byte[] good = Files.readAllBytes(bin);
        ByteBuffer g = ByteBuffer.wrap(good).order(ByteOrder.LITTLE_ENDIAN);
        long shoff = g.getLong(0x28);
        int shnum = Short.toUnsignedInt(g.getShort(0x3c));
        int phnum = Short.toUnsignedInt(g.getShort(0x38));
        check("empty", new byte[0], "ELF header beyond end of file (offset 0, length 64, file size 0)");
        check("text", "#!/bin/sh\n".repeat(10).getBytes(), "not an ELF file (no \\x7fELF magic)");
        check("elf32", patched(good, b -> b.put(4, (byte) 1)), "not a 64-bit ELF (EI_CLASS 1); only ELF64 x86-64 is supported");
        check("big-endian", patched(good, b -> b.put(5, (byte) 2)), "not little-endian (EI_DATA 2); only ELF64 x86-64 is supported");
        check("arm", patched(good, b -> b.putShort(18, (short) 183)), "not x86-64 (e_machine 183); only ELF64 x86-64 is supported");
        check("phentsize", patched(good, b -> b.putShort(0x36, (short) 20)), "bad program header entry size 20 (expected 56)");
        check("phoff-zero", patched(good, b -> b.putLong(0x20, 0)), phnum + " program headers at offset 0, over the ELF header");
        check("shentsize", patched(good, b -> b.putShort(0x3a, (short) 40)), "bad section header entry size 40 (expected 64)");
        // One section limit for every view: 2^18 (extended numbering puts the count in section header 0).
        check("sections", patched(good, b -> {
            b.putShort(0x3c, (short) 0);
            b.putLong((int) shoff + 32, (1 << 18) + 1);
        }), "section count 262145 is out of range");
        check("shstrndx", patched(good, b -> b.putShort(0x3e, (short) shnum)), "section name table index " + shnum + " beyond "
                + shnum + " sections");
        byte[] cut = Arrays.copyOf(good, (int) shoff + 100);
        check("cut", cut, "section header table beyond end of file (offset " + shoff + ", length " + shnum * 64
                + ", file size " + cut.length + ")");
    }

    private static byte[] patched(byte[] good, Consumer<ByteBuffer> change) {
        byte[] b = good.clone();
        change.accept(ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN));
        return b;
    }

    /** Each view, from a file and (ElfFile, ElfLoadSegments) from an image, fails with "NAME: problem". */
    private void check(String name, byte[] bytes, String problem) throws Exception {
        Path f = dir.resolve(name);
        Files.write(f, bytes);
        String want = f + ": " + problem;
        assertEquals(want, assertThrows(ElfException.class, () -> ElfFile.open(f)).getMessage());
        assertEquals(want, assertThrows(ElfException.class, () -> ElfLoadSegments.read(f)).getMessage());
        EhFrameException e = assertThrows(EhFrameException.class, () -> ElfSections.read(f));
        assertEquals(List.of(EhFrameException.Problem.BAD_ELF, want), List.of(e.problem(), e.getMessage()));
        String inMemory = name + ": " + problem;
        assertEquals(inMemory, assertThrows(ElfException.class, () -> ElfFile.parse(name, ByteBuffer.wrap(bytes))).getMessage());
        assertEquals(inMemory, assertThrows(ElfException.class, () -> ElfLoadSegments.parse(name, ByteBuffer.wrap(bytes))).getMessage());
    }
}
