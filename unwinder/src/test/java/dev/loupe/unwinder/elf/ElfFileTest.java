package dev.loupe.unwinder.elf;

import dev.loupe.unwinder.TestPrograms;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ElfFileTest {
    static final Path LIBC = Path.of("/lib/x86_64-linux-gnu/libc.so.6");

    @TempDir
    Path dir;

    /** Every nm -D function symbol of libc resolves to a symbol at the same address (aliases share one). */
    @Test
    void libcDynamicSymbolsMatchNm() throws Exception {
        ElfFile elf = ElfFile.open(LIBC);
        assertEquals(ElfFile.ET_DYN, elf.type());
        List<Object[]> nm = TestPrograms.nmFunctions(LIBC, true);
        assertTrue(nm.size() > 1000, "nm found " + nm.size());
        Map<Long, Set<String>> aliases = new HashMap<>();
        for (Object[] s : nm) {
            aliases.computeIfAbsent((Long) s[0], k -> new java.util.HashSet<>()).add((String) s[1]);
        }
        int checked = 0;
        for (var e : aliases.entrySet()) {
            String got = elf.symbols().lookup(e.getKey());
            assertTrue(got != null && e.getValue().contains(got), "0x" + Long.toHexString(e.getKey()) + ": " + got + " not in " + e.getValue());
            checked++;
        }
        assertTrue(checked > 1000);
    }

    @Test
    void symtabOfBuiltProgramMatchesNmAndAddr2line() throws Exception {
        Path bin = TestPrograms.compile(dir, "prog", TestPrograms.LOOPER, "-g");
        ElfFile elf = ElfFile.open(bin);
        List<Object[]> nm = TestPrograms.nmFunctions(bin, false).stream().filter(s -> !s[1].equals("data_start")).toList();
        for (Object[] s : TestPrograms.functions(bin)) {
            long addr = (Long) s[0];
            long inside = addr + Math.min(2, Math.max(0, (Long) s[1] - 1));
            String name = (String) s[2];
            assertEquals(name, elf.symbols().lookup(addr), "at 0x" + Long.toHexString(addr));
            assertTrue(nm.stream().anyMatch(n -> (Long) n[0] == addr && n[1].equals(name)), "nm lists " + name);
            String a2l = TestPrograms.run(List.of("addr2line", "-f", "-e", bin.toString(), "0x" + Long.toHexString(inside)));
            assertEquals(a2l.split("\n")[0], elf.symbols().lookup(inside), "addr2line inside " + name);
        }
        assertTrue(elf.symbols().size() >= 3);
    }

    @Test
    void buildIdMatchesReadelf() throws Exception {
        for (Path f : List.of(LIBC, TestPrograms.compile(dir, "p2", TestPrograms.LOOPER, "-Wl,--build-id=sha1"))) {
            String notes = TestPrograms.run(List.of("readelf", "-n", f.toString()));
            Matcher m = Pattern.compile("Build ID: ([0-9a-f]+)").matcher(notes);
            assertTrue(m.find(), notes);
            assertEquals(m.group(1), ElfFile.open(f).buildId().orElseThrow(), f.toString());
        }
    }

    @Test
    void pieAndNonPieLoadSegments() throws Exception {
        ElfFile pie = ElfFile.open(TestPrograms.compile(dir, "pie", TestPrograms.LOOPER, "-fPIE", "-pie"));
        ElfFile exec = ElfFile.open(TestPrograms.compile(dir, "nopie", TestPrograms.LOOPER, "-fno-pie", "-no-pie"));
        assertEquals(ElfFile.ET_DYN, pie.type());
        assertEquals(ElfFile.ET_EXEC, exec.type());
        LoadSegment text = exec.loadSegments().stream().filter(LoadSegment::executable).findFirst().orElseThrow();
        assertTrue(text.vaddr() >= 0x400000, "non-PIE text is linked high: 0x" + Long.toHexString(text.vaddr()));
        assertEquals(text.vaddr() + 0x10, exec.fileOffsetToVaddr(text.offset() + 0x10));
        assertEquals(-1, exec.fileOffsetToVaddr(Long.MAX_VALUE / 2));
    }

    @Test
    void truncatedFilesGiveClearErrors() throws Exception {
        byte[] libc = Files.readAllBytes(LIBC);
        Path head = dir.resolve("head.so");
        Files.write(head, Arrays.copyOf(libc, 100));
        ElfException e = assertThrows(ElfException.class, () -> ElfFile.open(head));
        assertTrue(e.getMessage().startsWith(head + ": ") && e.getMessage().contains("beyond end of file"), e.getMessage());

        // Cut inside the section header table (at the end of the file).
        Path cut = dir.resolve("cut.so");
        Files.write(cut, Arrays.copyOf(libc, libc.length - 100));
        ElfException e2 = assertThrows(ElfException.class, () -> ElfFile.open(cut));
        assertTrue(e2.getMessage().contains("section header table beyond end of file"), e2.getMessage());
    }

    @Test
    void nonElfAndGarbageAreRejected() throws Exception {
        Path text = dir.resolve("notes.txt");
        Files.writeString(text, "just some text, long enough to cover an ELF header.......................................\n");
        assertTrue(assertThrows(ElfException.class, () -> ElfFile.open(text)).getMessage().contains("not an ELF file"));

        byte[] garbage = new byte[4096];
        new java.util.Random(7).nextBytes(garbage);
        garbage[0] = 0x7f;
        garbage[1] = 'E';
        garbage[2] = 'L';
        garbage[3] = 'F';
        garbage[4] = 2;
        garbage[5] = 1;
        garbage[18] = 62;
        garbage[19] = 0;
        ElfException e = assertThrows(ElfException.class, () -> ElfFile.parse("garbage", ByteBuffer.wrap(garbage)));
        assertTrue(e.getMessage().startsWith("garbage: "), e.getMessage());

        Path empty = dir.resolve("empty");
        Files.write(empty, new byte[0]);
        assertThrows(ElfException.class, () -> ElfFile.open(empty));
    }

    @Test
    void symbolTableSizesAndGaps() {
        SymbolTable.Builder b = new SymbolTable.Builder();
        b.add(0x200, 0x10, "b");
        b.add(0x100, 0x20, "a");
        b.add(0x300, 0, "c");
        b.add(0x100, 0x20, "a_alias");
        SymbolTable t = b.build();
        assertEquals(3, t.size());
        assertEquals("a", t.lookup(0x100));
        assertEquals("a", t.lookup(0x11f));
        assertNull(t.lookup(0x120), "past a's size");
        assertNull(t.lookup(0xff));
        assertEquals("b", t.lookup(0x20f));
        assertEquals("c", t.lookup(0x100000), "size 0 covers to the next symbol (none)");
    }
}
