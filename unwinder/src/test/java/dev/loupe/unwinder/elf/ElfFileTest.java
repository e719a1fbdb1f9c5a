package dev.loupe.unwinder.elf;

import dev.loupe.unwinder.TestPrograms;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ElfFileTest {
    static final Path LIBC = TestPrograms.LIBC;
    static final Path LIBJVM = Path.of(System.getProperty("java.home"), "lib", "server", "libjvm.so");

    @TempDir
    Path dir;

    static Map<Long, Set<String>> aliases(List<Object[]> nm) {
        Map<Long, Set<String>> m = new HashMap<>();
        for (Object[] s : nm) {
            m.computeIfAbsent((Long) s[0], k -> new HashSet<>()).add((String) s[1]);
        }
        return m;
    }

    /** Every nm -D function symbol of libc resolves to a symbol at the same address (aliases share one). */
    @Test
    void libcDynamicSymbolsMatchNm() throws Exception {
        ElfFile elf = ElfFile.open(LIBC);
        assertEquals(ElfFile.ET_DYN, elf.type());
        Map<Long, Set<String>> aliases = aliases(TestPrograms.nmFunctions(LIBC, true));
        assertTrue(aliases.size() > 1000, "nm found " + aliases.size());
        for (var e : aliases.entrySet()) {
            String got = elf.symbols().lookup(e.getKey());
            assertTrue(got != null && e.getValue().contains(got), "0x" + Long.toHexString(e.getKey()) + ": " + got + " not in " + e.getValue());
        }
        // Preferred alias: fewer leading underscores (getpid over __getpid), then global over weak.
        long getpid = TestPrograms.nmFunctions(LIBC, true).stream().filter(s -> s[1].equals("getpid")).map(s -> (Long) s[0])
                .findFirst().orElseThrow();
        assertEquals("getpid", elf.symbols().lookup(getpid + 1));
    }

    /**
     * A C++ library with a 70k-entry .symtab and a 3 MB .strtab (names gathered through the window):
     * every FUNC symbol readelf lists resolves to itself or an alias, and nm agrees on the addresses
     * (nm also lists NOTYPE labels as 't', so it is not the list of functions here).
     */
    @Test
    void largeCppSymtabMatchesReadelfAndNm() throws Exception {
        assertTrue(Files.exists(LIBJVM), "no libjvm.so in the JDK running the tests: " + LIBJVM);
        ElfFile elf = ElfFile.open(LIBJVM);
        Map<Long, Set<String>> aliases = new HashMap<>();
        for (Object[] s : TestPrograms.functions(LIBJVM)) {
            aliases.computeIfAbsent((Long) s[0], k -> new HashSet<>()).add((String) s[2]);
        }
        Map<Long, Set<String>> nm = aliases(TestPrograms.nmFunctions(LIBJVM, false));
        assertTrue(aliases.size() > 10_000, "readelf found " + aliases.size());
        for (var e : aliases.entrySet()) {
            String got = elf.symbols().lookup(e.getKey());
            assertTrue(got != null && e.getValue().contains(got), "0x" + Long.toHexString(e.getKey()) + ": " + got + " not in " + e.getValue());
            assertTrue(nm.getOrDefault(e.getKey(), Set.of()).contains(got), "nm lists " + got);
        }
        assertEquals(aliases.size(), elf.symbols().size(), "one symbol per distinct function address");
    }

    @ParameterizedTest
    @ValueSource(strings = {"-O0", "-O2"})
    void symtabOfBuiltProgramMatchesNmAndAddr2line(String opt) throws Exception {
        Path bin = TestPrograms.compile(dir, "prog", TestPrograms.LOOPER, "-g", opt);
        ElfFile elf = ElfFile.open(bin);
        assertTrue(elf.hasSection(".symtab"));
        List<Object[]> nm = TestPrograms.nmFunctions(bin, false);
        List<Object[]> fns = TestPrograms.functions(bin);
        List<Long> inside = new ArrayList<>();
        for (Object[] s : fns) {
            long addr = (Long) s[0];
            String name = (String) s[2];
            assertEquals(name, elf.symbols().lookup(addr), "at 0x" + Long.toHexString(addr));
            assertTrue(nm.stream().anyMatch(n -> (Long) n[0] == addr && n[1].equals(name)), "nm lists " + name);
            inside.add(addr + Math.min(2, Math.max(0, (Long) s[1] - 1)));
        }
        List<String> a2l = TestPrograms.addr2line(bin, inside);
        for (int i = 0; i < inside.size(); i++) {
            assertEquals(a2l.get(i), elf.symbols().lookup(inside.get(i)), "addr2line at 0x" + Long.toHexString(inside.get(i)));
        }
        assertTrue(fns.stream().anyMatch(s -> s[2].equals("local_helper")), "static function in .symtab");
        assertTrue(elf.symbols().size() >= 5);
    }

    @Test
    void buildIdMatchesReadelf() throws Exception {
        for (Path f : List.of(LIBC, TestPrograms.compile(dir, "p2", TestPrograms.LOOPER, "-Wl,--build-id=sha1"),
                TestPrograms.compile(dir, "p3", TestPrograms.LOOPER, "-Wl,--build-id=md5"))) {
            assertEquals(readelfBuildId(f), ElfFile.open(f).buildId().orElseThrow(), f.toString());
        }
        Path none = TestPrograms.compile(dir, "p4", TestPrograms.LOOPER, "-Wl,--build-id=none");
        assertTrue(ElfFile.open(none).buildId().isEmpty());
    }

    private static String readelfBuildId(Path f) throws Exception {
        String notes = TestPrograms.run(List.of("readelf", "-n", f.toString()));
        Matcher m = Pattern.compile("Build ID: ([0-9a-f]+)").matcher(notes);
        assertTrue(m.find(), notes);
        return m.group(1);
    }

    /** Without section headers (as in some memory dumps) the build id still comes from PT_NOTE. */
    @Test
    void buildIdFromProgramHeadersAlone() throws Exception {
        Path bin = TestPrograms.compile(dir, "nosh", TestPrograms.LOOPER);
        byte[] b = Files.readAllBytes(bin);
        ByteBuffer h = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(0x28, 0); // e_shoff
        h.putShort(0x3c, (short) 0); // e_shnum
        h.putShort(0x3e, (short) 0); // e_shstrndx
        Path stripped = dir.resolve("nosh-stripped");
        Files.write(stripped, b);
        ElfFile elf = ElfFile.open(stripped);
        assertEquals(readelfBuildId(bin), elf.buildId().orElseThrow());
        assertEquals(readelfBuildId(stripped), elf.buildId().orElseThrow());
        assertEquals(0, elf.symbols().size(), "no sections, no symbol tables");
        assertFalse(elf.loadSegments().isEmpty());
    }

    /** ELF extended numbering (e_shnum = 0, e_shstrndx = SHN_XINDEX; real values in section 0). */
    @Test
    void extendedSectionNumbering() throws Exception {
        Path bin = TestPrograms.compile(dir, "ext", TestPrograms.LOOPER);
        byte[] b = Files.readAllBytes(bin);
        ByteBuffer h = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        long shoff = h.getLong(0x28);
        int shnum = Short.toUnsignedInt(h.getShort(0x3c));
        int shstrndx = Short.toUnsignedInt(h.getShort(0x3e));
        h.putLong((int) shoff + 32, shnum);
        h.putInt((int) shoff + 40, shstrndx);
        h.putShort(0x3c, (short) 0);
        h.putShort(0x3e, (short) 0xffff);
        Path ext = dir.resolve("ext-x");
        Files.write(ext, b);
        assertTrue(TestPrograms.run(List.of("readelf", "-SW", ext.toString())).contains(".symtab"), "readelf agrees it is valid");
        ElfFile orig = ElfFile.open(bin);
        ElfFile patched = ElfFile.open(ext);
        assertEquals(orig.symbols().size(), patched.symbols().size());
        long spin = TestPrograms.nmAddress(bin, "spin_here");
        assertEquals("spin_here", patched.symbols().lookup(spin + 1));
        assertTrue(patched.hasSection(".eh_frame"));
    }

    @Test
    void pieAndNonPieLoadSegmentsMatchReadelf() throws Exception {
        Path pieBin = TestPrograms.compile(dir, "pie", TestPrograms.LOOPER, "-fPIE", "-pie");
        Path execBin = TestPrograms.compile(dir, "nopie", TestPrograms.LOOPER, "-fno-pie", "-no-pie");
        ElfFile pie = ElfFile.open(pieBin);
        ElfFile exec = ElfFile.open(execBin);
        assertEquals(ElfFile.ET_DYN, pie.type());
        assertEquals(ElfFile.ET_EXEC, exec.type());
        for (Path f : List.of(pieBin, execBin, LIBC)) {
            List<long[]> expected = TestPrograms.loads(f);
            List<LoadSegment> got = ElfFile.open(f).loadSegments();
            assertEquals(expected.size(), got.size(), f.toString());
            for (int i = 0; i < got.size(); i++) {
                long[] e = expected.get(i);
                LoadSegment g = got.get(i);
                assertArrayEquals(e, new long[] {g.offset(), g.vaddr(), g.fileSize(), g.memSize(), g.executable() ? 1 : 0}, f + " LOAD " + i);
            }
        }
        LoadSegment text = exec.loadSegments().stream().filter(LoadSegment::executable).findFirst().orElseThrow();
        assertTrue(text.vaddr() >= 0x400000, "non-PIE text is linked high: 0x" + Long.toHexString(text.vaddr()));
        assertEquals(text.vaddr() + 0x10, exec.fileOffsetToVaddr(text.offset() + 0x10));
        assertEquals(-1, exec.fileOffsetToVaddr(Long.MAX_VALUE / 2));
        assertEquals(-1, exec.fileOffsetToVaddr(-5));
    }

    /** section() reads the bytes readelf says the section has, from a file (re-opened) and an image. */
    @Test
    void sectionBytesMatchReadelf() throws Exception {
        Path bin = TestPrograms.compile(dir, "sec", TestPrograms.LOOPER);
        Matcher m = Pattern.compile("\\]\\s+\\.eh_frame\\s+\\S+\\s+[0-9a-f]+\\s+([0-9a-f]+)\\s+([0-9a-f]+)")
                .matcher(TestPrograms.run(List.of("readelf", "-SW", bin.toString())));
        assertTrue(m.find());
        int off = Integer.parseInt(m.group(1), 16);
        int size = Integer.parseInt(m.group(2), 16);
        byte[] file = Files.readAllBytes(bin);
        byte[] expected = Arrays.copyOfRange(file, off, off + size);
        ElfFile elf = ElfFile.open(bin);
        assertEquals(ByteBuffer.wrap(expected), elf.section(".eh_frame").orElseThrow());
        assertEquals(ByteBuffer.wrap(expected), ElfFile.parse("img", ByteBuffer.wrap(file)).section(".eh_frame").orElseThrow());
        assertTrue(elf.section(".no_such_section").isEmpty());
        assertTrue(elf.section(".bss").isEmpty(), "SHT_NOBITS has no bytes");
        Files.write(bin, new byte[] {1, 2, 3}, java.nio.file.StandardOpenOption.APPEND);
        ElfException e = assertThrows(ElfException.class, () -> elf.section(".eh_frame"));
        assertTrue(e.getMessage().contains("changed size"), e.getMessage());
    }

    @Test
    void truncatedFilesGiveClearErrors() throws Exception {
        byte[] libc = Files.readAllBytes(LIBC);
        Path head = dir.resolve("head.so");
        Files.write(head, Arrays.copyOf(libc, 100));
        ElfException e = assertThrows(ElfException.class, () -> ElfFile.open(head));
        assertTrue(e.getMessage().startsWith(head + ": ") && e.getMessage().contains("beyond end of file"), e.getMessage());
        assertTrue(e.getMessage().contains("file size 100"), e.getMessage());

        // Cut in the middle of the section header table.
        long shoff = TestPrograms.sectionHeaderOffset(LIBC);
        Path cut = dir.resolve("cut.so");
        Files.write(cut, Arrays.copyOf(libc, (int) shoff + 64 * 20 + 10));
        ElfException e2 = assertThrows(ElfException.class, () -> ElfFile.open(cut));
        assertTrue(e2.getMessage().contains("section header table beyond end of file (offset " + shoff + ","), e2.getMessage());
        assertTrue(e2.getMessage().startsWith(cut + ": "), e2.getMessage());

        // Intact headers, but .symtab points past the end of the file.
        Path prog = TestPrograms.compile(dir, "prog", TestPrograms.LOOPER);
        byte[] p = Files.readAllBytes(prog);
        int symtab = sectionIndex(prog, ".symtab");
        ByteBuffer h = ByteBuffer.wrap(p).order(ByteOrder.LITTLE_ENDIAN);
        int sh = (int) h.getLong(0x28) + symtab * 64;
        h.putLong(sh + 24, p.length - 10);
        Path bad = dir.resolve("bad-symtab");
        Files.write(bad, p);
        ElfException e3 = assertThrows(ElfException.class, () -> ElfFile.open(bad));
        assertEquals(bad + ": .symtab beyond end of file (offset " + (p.length - 10) + ", length " + h.getLong(sh + 32)
                + ", file size " + p.length + ")", e3.getMessage());

        // A symbol whose name offset lies outside the string table.
        byte[] q = Files.readAllBytes(prog);
        ByteBuffer hq = ByteBuffer.wrap(q).order(ByteOrder.LITTLE_ENDIAN);
        long symOff = hq.getLong(sh + 24);
        long count = hq.getLong(sh + 32) / 24;
        int fn = -1;
        for (int i = 0; i < count && fn < 0; i++) {
            int o = (int) symOff + i * 24;
            if ((q[o + 4] & 0xf) == 2 && hq.getLong(o + 8) != 0 && hq.getShort(o + 6) != 0) {
                fn = i;
            }
        }
        hq.putInt((int) symOff + fn * 24, 0x7fffff00);
        Path badName = dir.resolve("bad-name");
        Files.write(badName, q);
        ElfException e4 = assertThrows(ElfException.class, () -> ElfFile.open(badName));
        assertTrue(e4.getMessage().contains(".symtab entry " + fn + " names offset " + 0x7fffff00 + ", beyond .strtab"), e4.getMessage());
    }

    static int sectionIndex(Path f, String name) throws Exception {
        Matcher m = Pattern.compile("\\[\\s*(\\d+)\\]\\s+" + Pattern.quote(name) + "\\s").matcher(
                TestPrograms.run(List.of("readelf", "-SW", f.toString())));
        assertTrue(m.find(), name);
        return Integer.parseInt(m.group(1));
    }

    @Test
    void nonElfAndGarbageAreRejected() throws Exception {
        Path text = dir.resolve("notes.txt");
        Files.writeString(text, "just some text, long enough to cover an ELF header.......................................\n");
        assertEquals(text + ": not an ELF file (no \\x7fELF magic)", assertThrows(ElfException.class, () -> ElfFile.open(text)).getMessage());

        byte[] garbage = new byte[4096];
        new java.util.Random(7).nextBytes(garbage);
        byte[] ident = {0x7f, 'E', 'L', 'F', 2, 1};
        System.arraycopy(ident, 0, garbage, 0, ident.length);
        garbage[18] = 62;
        garbage[19] = 0;
        ElfException e = assertThrows(ElfException.class, () -> ElfFile.parse("garbage", ByteBuffer.wrap(garbage)));
        assertTrue(e.getMessage().startsWith("garbage: "), e.getMessage());

        Path empty = dir.resolve("empty");
        Files.write(empty, new byte[0]);
        assertTrue(assertThrows(ElfException.class, () -> ElfFile.open(empty)).getMessage().contains("ELF header beyond end of file"));

        byte[] libcHead = Arrays.copyOf(Files.readAllBytes(LIBC), 4096);
        byte[] elf32 = libcHead.clone();
        elf32[4] = 1;
        assertTrue(assertThrows(ElfException.class, () -> ElfFile.parse("e32", ByteBuffer.wrap(elf32))).getMessage()
                .contains("not a 64-bit ELF"));
        byte[] be = libcHead.clone();
        be[5] = 2;
        assertTrue(assertThrows(ElfException.class, () -> ElfFile.parse("be", ByteBuffer.wrap(be))).getMessage()
                .contains("not little-endian"));
        byte[] arm = libcHead.clone();
        arm[18] = (byte) 183; // EM_AARCH64
        assertEquals("arm: not x86-64 (e_machine 183); only ELF64 x86-64 is supported",
                assertThrows(ElfException.class, () -> ElfFile.parse("arm", ByteBuffer.wrap(arm))).getMessage());
    }

    /**
     * Thousands of corrupted variants of a real binary: each parses or fails with ElfException, never an
     * unchecked exception, never a hang.
     */
    @Test
    void corruptedBinariesOnlyEverThrowElfException() throws Exception {
        Path bin = TestPrograms.compile(dir, "fuzz", TestPrograms.LOOPER);
        byte[] orig = Files.readAllBytes(bin);
        ByteBuffer h = ByteBuffer.wrap(orig).order(ByteOrder.LITTLE_ENDIAN);
        int shoff = (int) h.getLong(0x28);
        int phoff = (int) h.getLong(0x20);
        java.util.Random rnd = new java.util.Random(42);
        int parsed = 0;
        int rejected = 0;
        long deadline = System.nanoTime() + 60_000_000_000L;
        for (int iter = 0; iter < 5000; iter++) {
            assertTrue(System.nanoTime() < deadline, "fuzzing took too long (a loop that does not end?)");
            byte[] b = orig.clone();
            int mutations = 1 + rnd.nextInt(8);
            for (int k = 0; k < mutations; k++) {
                // Aim at the structures the parser trusts: ELF header, program and section headers.
                int area = rnd.nextInt(4);
                int at = switch (area) {
                    case 0 -> rnd.nextInt(64);
                    case 1 -> phoff + rnd.nextInt(56 * 13);
                    case 2 -> shoff + rnd.nextInt(Math.max(1, b.length - shoff));
                    default -> rnd.nextInt(b.length);
                };
                if (at < b.length) {
                    b[at] = rnd.nextInt(3) == 0 ? (byte) 0xff : (byte) rnd.nextInt(256);
                }
            }
            if (rnd.nextInt(5) == 0) {
                b = Arrays.copyOf(b, rnd.nextInt(b.length));
            }
            try {
                ElfFile f = ElfFile.parse("fuzz" + iter, ByteBuffer.wrap(b));
                f.symbols().lookup(rnd.nextLong());
                f.fileOffsetToVaddr(rnd.nextInt(b.length + 1));
                f.section(".text");
                parsed++;
            } catch (ElfException e) {
                assertTrue(e.getMessage().startsWith("fuzz" + iter + ": "), e.getMessage());
                rejected++;
            } catch (Throwable t) {
                throw new AssertionError("iteration " + iter + " threw " + t, t);
            }
        }
        assertTrue(parsed > 100 && rejected > 100, "parsed " + parsed + ", rejected " + rejected);
    }

    /**
     * A separate debug file, split off a library we build (objcopy --only-keep-debug, strip --strip-unneeded),
     * has the full .symtab the stripped library lacks: it names the static function that .dynsym leaves out.
     */
    @Test
    void debugFileNamesStaticFunctionsThatDynsymLacks() throws Exception {
        Path lib = TestPrograms.compile(dir, "libsplit.so", TestPrograms.STATIC_IN_LIBRARY, TestPrograms.LIBRARY_FLAGS);
        long before = TestPrograms.nmAddress(lib, "exported_before");
        long middle = TestPrograms.nmAddress(lib, "static_middle");
        long after = TestPrograms.nmAddress(lib, "exported_after");
        assertTrue(before < middle && middle < after, "the static function lies between the exported ones");
        Path debug = dir.resolve("libsplit.debug");
        TestPrograms.splitDebugFile(lib, debug, "--strip-unneeded");
        ElfFile stripped = ElfFile.open(lib);
        ElfFile d = ElfFile.open(debug);
        assertFalse(stripped.hasSection(".symtab"), "stripped");
        assertEquals(readelfBuildId(lib), stripped.buildId().orElseThrow());
        assertEquals(readelfBuildId(lib), d.buildId().orElseThrow(), "the debug file keeps the build id");
        assertEquals("static_middle", d.symbols().lookup(middle + 1));
        assertNull(stripped.symbols().lookup(middle + 1),
                ".dynsym has sized symbols only: a static function is unnamed, not misattributed");
        assertEquals("exported_after", stripped.symbols().lookup(after + 1));
        assertEquals(aliases(TestPrograms.nmFunctions(lib, true)).size(), stripped.symbols().size(), ".dynsym's functions");
        Map<Long, Set<String>> full = new HashMap<>();
        for (Object[] f : TestPrograms.functions(debug)) {
            full.computeIfAbsent((Long) f[0], k -> new HashSet<>()).add((String) f[2]);
        }
        assertEquals(full.size(), d.symbols().size(), "the debug file's .symtab functions (its .dynsym is NOBITS)");
        assertTrue(full.size() > stripped.symbols().size());
    }

    @Test
    void symbolBudgetIsEnforced() throws Exception {
        assertTrue(Files.exists(LIBJVM), "no libjvm.so in the JDK running the tests: " + LIBJVM);
        ElfException e = assertThrows(ElfException.class, () -> ElfFile.open(LIBJVM, 1 << 20));
        assertTrue(e.getMessage().contains("symbol tables need more than 1 MiB"), e.getMessage());
        long footprint = ElfFile.open(LIBJVM).symbols().memoryFootprintBytes();
        assertTrue(footprint > 1 << 20 && footprint < 64 << 20, "footprint " + footprint);
    }

    @Test
    void symbolTableSizesGapsAliasesAndNesting() {
        SymbolTable.Builder b = new SymbolTable.Builder();
        b.add(0x200, 0x10, "b");
        b.add(0x100, 0x20, "__a");
        b.add(0x300, 0, "c");
        b.add(0x100, 0x20, "a");
        b.add(0x100, 0, "_a");
        SymbolTable t = b.build();
        assertEquals(3, t.size());
        assertEquals("a", t.lookup(0x100), "fewest leading underscores wins among aliases");
        assertEquals("a", t.lookup(0x11f));
        assertNull(t.lookup(0x120), "past a's size");
        assertNull(t.lookup(0xff));
        assertEquals("b", t.lookup(0x20f));
        assertEquals("c", t.lookup(0x100000), "size 0 covers to the next symbol (none)");
        assertTrue(t.lookup(0x100) == t.lookup(0x110), "names are made once and reused");

        SymbolTable.Builder nested = new SymbolTable.Builder();
        nested.add(0x1000, 0x100, "outer");
        nested.add(0x1040, 0x10, "inner");
        nested.add(0x2000, 0x10, "later");
        SymbolTable n = nested.build();
        assertEquals("inner", n.lookup(0x1045));
        assertEquals("outer", n.lookup(0x1060), "past inner's end, still inside outer");
        assertNull(n.lookup(0x1100));
        assertEquals("later", n.lookup(0x2001));

        SymbolTable.Builder kernel = new SymbolTable.Builder();
        kernel.add(0xffffffffc0001000L, 0, "mod_fn");
        kernel.add(0xffffffff81000000L, 0, "_stext");
        kernel.add(0x1000, 0x10, "low");
        SymbolTable k = kernel.build();
        assertEquals("_stext", k.lookup(0xffffffff81000010L), "addresses compare unsigned");
        assertEquals("mod_fn", k.lookup(0xffffffffc0001001L));
        assertEquals("low", k.lookup(0x1001));
        assertNull(k.lookup(0x2000));

        SymbolTable.Builder binding = new SymbolTable.Builder();
        byte[] names = "locl glob weak".getBytes();
        binding.add(0x10, 4, SymbolTable.Builder.LOCAL, names, 0, 4);
        binding.add(0x10, 4, SymbolTable.Builder.WEAK, names, 10, 4);
        binding.add(0x10, 4, SymbolTable.Builder.GLOBAL, names, 5, 4);
        assertEquals("glob", binding.build().lookup(0x12));

        // glibc's internal alias loses to its public twin, whichever was added first (Debian unstable's libc
        // debug file names clone3's code __GI___clone3 and __clone3, both local, the internal one first).
        SymbolTable.Builder glibc = new SymbolTable.Builder();
        byte[] clone = "__GI___clone3 __clone3".getBytes();
        glibc.add(0x20, 8, SymbolTable.Builder.LOCAL, clone, 0, 13);
        glibc.add(0x20, 8, SymbolTable.Builder.LOCAL, clone, 14, 8);
        assertEquals("__clone3", glibc.build().lookup(0x24));
        assertEquals(0, SymbolTable.EMPTY.size());
        assertNull(SymbolTable.EMPTY.lookup(5));
    }

    /** Far more symbols and name bytes than one of the builder's chunks or name blocks, added out of order. */
    @Test
    void symbolTableOfManySymbolsAndLongNames() {
        SymbolTable.Builder b = new SymbolTable.Builder();
        b.add(0x10, 0, SymbolTable.Builder.GLOBAL, new byte[0], 0, 0); // an empty name first
        String huge = "h".repeat(200_000); // longer than a name block
        int count = 50_000;
        for (int i = count - 1; i >= 0; i--) {
            b.add(0x1000L + 16L * i, 16, i == 777 ? huge : "fn_" + i + "_" + "x".repeat(i % 50));
        }
        SymbolTable t = b.build();
        assertEquals(count + 1, t.size());
        assertEquals("", t.lookup(0x10));
        for (int i = 0; i < count; i += 997) {
            assertEquals("fn_" + i + "_" + "x".repeat(i % 50), t.lookup(0x1000L + 16L * i + 5), "symbol " + i);
        }
        assertEquals(huge, t.lookup(0x1000L + 16L * 777));
        assertEquals("fn_778_" + "x".repeat(28), t.lookup(0x1000L + 16L * 778), "the name after a block-sized one");
        assertNull(t.lookup(0x1000L + 16L * count));
    }

    /**
     * An entry point that is an assembly label (STT_NOTYPE, as ld.so's and many static binaries' _start are) is named,
     * so the outermost frame of a process before main is _start; other labels stay inside their function.
     */
    @Test
    void anEntryPointLabelIsNamedAndOtherLabelsAreNot() throws Exception {
        Path bin = TestPrograms.compile(dir, "entrylabel", String.join("\n",
                "__attribute__((noinline)) int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += i; return s; }",
                "__asm__(\".text\\n.globl _start\\n_start:\\n xor %rbp, %rbp\\n mov $3, %edi\\n call work\\n"
                        + "inner_label:\\n mov %eax, %edi\\n mov $60, %eax\\n syscall\\n hlt\\n\");", ""),
                "-nostdlib", "-static", "-O1");
        ElfFile elf = ElfFile.open(bin, 1 << 20);
        long entry = ByteBuffer.wrap(Files.readAllBytes(bin), 24, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        long inner = TestPrograms.nmAddress(bin, "inner_label");
        assertEquals("_start", elf.symbols().lookup(entry));
        assertEquals("_start", elf.symbols().lookup(inner - 1), "the return address of its call, looked up inside it");
        assertEquals("_start", elf.symbols().lookup(inner), "a label that is not the entry names no function of its own");
        assertEquals("work", elf.symbols().lookup(TestPrograms.nmAddress(bin, "work")));
    }
}
