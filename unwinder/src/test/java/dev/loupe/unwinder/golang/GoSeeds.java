package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.ehframe.ElfSections;
import dev.loupe.unwinder.elf.SectionHeader;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * Small inputs shaped like a Go toolchain's output, for the Go readers' fuzz targets: pclntabs of every layout
 * (the fields the reader uses, laid out as src/runtime/symtab.go of each release lays them out, with names as
 * Go 1.19's linker writes them), build info blobs (inline strings of Go 1.18+ and the pointer form of 1.13-1.17),
 * DWARF with {@code runtime.g}'s {@code goid}, and ELF files of about 2 KB that carry them (built with gcc: a real
 * Go binary is megabytes, too large to mutate quickly).
 */
final class GoSeeds {
    /** A function as a seed table lists it: {@code offset} from the text start, {@code size} bytes. */
    record Fn(String name, long offset, long size) {}

    /** Names of the shapes Go's linker writes: packages with paths, methods, closures, generics, ABI wrappers. */
    static final List<Fn> FUNCS = List.of(
            new Fn("internal/cpu.cpuid.abi0", 0x0, 0x20),
            new Fn("type..eq.[5]internal/cpu.option", 0x20, 0xe0),
            new Fn("runtime.(*mheap).sysAlloc", 0x100, 0x6a0),
            new Fn("runtime.gcMarkDone.func1.1", 0x7a0, 0x80),
            new Fn("sync/atomic.(*Pointer[...]).Load", 0x820, 0x40),
            new Fn("main.(*conn).serve", 0x860, 0x60),
            new Fn("main.work", 0x8c0, 0x40),
            new Fn("main.main.func1", 0x900, 0x40),
            new Fn("main.main", 0x940, 0x120),
            new Fn("runtime.goexit.abi0", 0xa60, 0x10));

    private GoSeeds() {}

    /** A pclntab of {@code format} ("go1.2", "go1.16", "go1.18", "go1.20"); 1.18+ store {@code headerText} in the header. */
    static byte[] pclntab(String format, List<Fn> fns, long textStart, long headerText) {
        ByteArrayOutputStream names = new ByteArrayOutputStream();
        List<Integer> nameOffs = new ArrayList<>();
        for (Fn f : fns) {
            nameOffs.add(names.size());
            names.writeBytes(f.name().getBytes(StandardCharsets.UTF_8));
            names.write(0);
        }
        int n = fns.size();
        long end = fns.get(n - 1).offset() + fns.get(n - 1).size();
        switch (format) {
            case "go1.2" -> {
                int functab = 16;
                int funcs = functab + (2 * n + 1) * 8;
                int nameBase = funcs + n * 16;
                ByteBuffer b = le(nameBase + names.size());
                b.putInt(0, 0xfffffffb).put(6, (byte) 1).put(7, (byte) 8).putLong(8, n);
                for (int i = 0; i < n; i++) {
                    b.putLong(functab + 16 * i, textStart + fns.get(i).offset()).putLong(functab + 16 * i + 8, funcs + 16L * i);
                    b.putLong(funcs + 16 * i, textStart + fns.get(i).offset()).putInt(funcs + 16 * i + 8, nameBase + nameOffs.get(i));
                }
                b.putLong(functab + 16 * n, textStart + end);
                b.put(nameBase, names.toByteArray());
                return b.array();
            }
            case "go1.16" -> {
                int funcname = 8 + 7 * 8;
                int pcln = funcname + names.size() + 7 & ~7;
                int funcs = (2 * n + 1) * 8;
                ByteBuffer b = le(pcln + funcs + n * 16);
                b.putInt(0, 0xfffffffa).put(6, (byte) 1).put(7, (byte) 8).putLong(8, n).putLong(16, 1)
                        .putLong(24, funcname).putLong(32, pcln).putLong(40, pcln).putLong(48, pcln).putLong(56, pcln);
                b.put(funcname, names.toByteArray());
                for (int i = 0; i < n; i++) {
                    b.putLong(pcln + 16 * i, textStart + fns.get(i).offset()).putLong(pcln + 16 * i + 8, funcs + 16L * i);
                    b.putLong(pcln + funcs + 16 * i, textStart + fns.get(i).offset()).putInt(pcln + funcs + 16 * i + 8, nameOffs.get(i));
                }
                b.putLong(pcln + 16 * n, textStart + end);
                return b.array();
            }
            case "go1.18", "go1.20" -> {
                int funcname = 8 + 8 * 8;
                int pcln = funcname + names.size() + 7 & ~7;
                int funcs = (2 * n + 1) * 4 + 7 & ~7;
                ByteBuffer b = le(pcln + funcs + n * 8);
                b.putInt(0, format.equals("go1.18") ? 0xfffffff0 : 0xfffffff1).put(6, (byte) 1).put(7, (byte) 8)
                        .putLong(8, n).putLong(16, 1).putLong(24, headerText).putLong(32, funcname)
                        .putLong(40, pcln).putLong(48, pcln).putLong(56, pcln).putLong(64, pcln);
                b.put(funcname, names.toByteArray());
                for (int i = 0; i < n; i++) {
                    b.putInt(pcln + 8 * i, (int) fns.get(i).offset()).putInt(pcln + 8 * i + 4, funcs + 8 * i);
                    b.putInt(pcln + funcs + 8 * i, (int) fns.get(i).offset()).putInt(pcln + funcs + 8 * i + 4, nameOffs.get(i));
                }
                b.putInt(pcln + 8 * n, (int) end);
                return b.array();
            }
            default -> throw new IllegalArgumentException(format);
        }
    }

    /** The file every function of {@link #linesPclntab} is in. */
    static final String LINES_FILE = "/src/seed/main.go";

    /** The line of function {@code i} of {@link #linesPclntab} at pc offset {@code off} of {@code size} bytes. */
    static int seedLine(int i, long off, long size) {
        return off < size / 2 ? 10 + i : 11 + i;
    }

    /**
     * A pre-1.18 pclntab ("go1.2": Go 1.2-1.15, "go1.16": 1.16-1.17) of {@link #FUNCS} at {@code textStart} with line
     * tables: every function in {@link #LINES_FILE}, at {@link #seedLine}. Laid out as go1.15.15's and go1.16.15's
     * src/debug/gosym/pclntab.go read them: 1.2's offsets count from the table's start and its file table is a count
     * then name offsets, indexed by the pcfile value (from 1); 1.16's header gives funcname, cu, filetab, pctab and
     * pcln offsets and a function's file is filetab + cutab[cuOffset + pcfile value] (from 0).
     */
    static byte[] linesPclntab(String format, long textStart) {
        boolean go12 = format.equals("go1.2");
        List<Fn> fns = FUNCS;
        int n = fns.size();
        ByteArrayOutputStream strings = new ByteArrayOutputStream();
        List<Integer> nameOffs = new ArrayList<>();
        for (Fn f : fns) {
            nameOffs.add(strings.size());
            strings.writeBytes(f.name().getBytes(StandardCharsets.UTF_8));
            strings.write(0);
        }
        ByteArrayOutputStream files = new ByteArrayOutputStream();
        files.writeBytes(LINES_FILE.getBytes(StandardCharsets.UTF_8));
        files.write(0);
        // pc-value tables: (zig-zag value delta from -1, pc delta) varint pairs, a 0 ends each.
        ByteArrayOutputStream pctab = new ByteArrayOutputStream();
        pctab.write(0); // offset 0 means "no table"
        List<int[]> tables = new ArrayList<>(); // {pcfile, pcln}
        for (int i = 0; i < n; i++) {
            long size = fns.get(i).size();
            int pcfile = pctab.size();
            varint(pctab, go12 ? 4 : 2); // -1 -> 1 (1.2: file numbers from 1), -1 -> 0 (1.16)
            varint(pctab, (int) size);
            pctab.write(0);
            int pcln = pctab.size();
            varint(pctab, 2 * (11 + i));
            varint(pctab, (int) (size / 2));
            varint(pctab, 2);
            varint(pctab, (int) (size - size / 2));
            pctab.write(0);
            tables.add(new int[] {pcfile, pcln});
        }
        long end = fns.get(n - 1).offset() + fns.get(n - 1).size();
        int funcSize = go12 ? 40 : 44;
        if (go12) {
            int functab = 16;
            int filetabOffAt = functab + 16 * n + 8;
            int funcs = filetabOffAt + 8;
            int filetab = funcs + funcSize * n;
            int names = filetab + 8;
            int fileNames = names + strings.size();
            int pcs = fileNames + files.size();
            ByteBuffer b = le(pcs + pctab.size());
            b.putInt(0, 0xfffffffb).put(6, (byte) 1).put(7, (byte) 8).putLong(8, n).putInt(filetabOffAt, filetab);
            for (int i = 0; i < n; i++) {
                int f = funcs + funcSize * i;
                b.putLong(functab + 16 * i, textStart + fns.get(i).offset()).putLong(functab + 16 * i + 8, f);
                b.putLong(f, textStart + fns.get(i).offset()).putInt(f + 8, names + nameOffs.get(i))
                        .putInt(f + 24, pcs + tables.get(i)[0]).putInt(f + 28, pcs + tables.get(i)[1]);
            }
            b.putLong(functab + 16 * n, textStart + end);
            b.putInt(filetab, 2).putInt(filetab + 4, fileNames);
            b.put(names, strings.toByteArray()).put(fileNames, files.toByteArray()).put(pcs, pctab.toByteArray());
            return b.array();
        }
        int funcname = 64;
        int cu = funcname + strings.size() + 3 & ~3;
        int filetab = cu + 4;
        int pcs = filetab + files.size();
        int pcln = pcs + pctab.size() + 7 & ~7;
        int funcs = 16 * n + 8;
        ByteBuffer b = le(pcln + funcs + funcSize * n);
        b.putInt(0, 0xfffffffa).put(6, (byte) 1).put(7, (byte) 8).putLong(8, n).putLong(16, 1)
                .putLong(24, funcname).putLong(32, cu).putLong(40, filetab).putLong(48, pcs).putLong(56, pcln);
        b.put(funcname, strings.toByteArray()).putInt(cu, 0).put(filetab, files.toByteArray()).put(pcs, pctab.toByteArray());
        for (int i = 0; i < n; i++) {
            int f = funcs + funcSize * i;
            b.putLong(pcln + 16 * i, textStart + fns.get(i).offset()).putLong(pcln + 16 * i + 8, f);
            b.putLong(pcln + f, textStart + fns.get(i).offset()).putInt(pcln + f + 8, nameOffs.get(i))
                    .putInt(pcln + f + 24, tables.get(i)[0]).putInt(pcln + f + 28, tables.get(i)[1]).putInt(pcln + f + 36, 0);
        }
        b.putLong(pcln + 16 * n, textStart + end);
        return b.array();
    }

    private static void varint(ByteArrayOutputStream out, int v) {
        for (; (v & ~0x7f) != 0; v >>>= 7) {
            out.write(v & 0x7f | 0x80);
        }
        out.write(v);
    }

    /** Go 1.18+ build info: the 32-byte header (flags: inline strings), then varint-length version and module info. */
    static byte[] buildInfo(String version, String modinfo) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] header = new byte[32];
        System.arraycopy("\u00ff Go buildinf:".getBytes(StandardCharsets.ISO_8859_1), 0, header, 0, 14);
        header[14] = 8;
        header[15] = 2;
        out.writeBytes(header);
        for (String s : List.of(version, modinfo)) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            for (long v = b.length; ; v >>>= 7) {
                if (v < 0x80) {
                    out.write((int) v);
                    break;
                }
                out.write((int) (v & 0x7f) | 0x80);
            }
            out.writeBytes(b);
        }
        return out.toByteArray();
    }

    /** Module info as Go writes it: 16-byte sentinels around "path", "mod" and "dep" lines. */
    static String modinfo(String path) {
        String sentinel = new String(HexFormat.of().parseHex("3077af0c9274080241e1c107e6d618e6"), StandardCharsets.ISO_8859_1);
        String end = new String(HexFormat.of().parseHex("f932433186182072008242104116d8f2"), StandardCharsets.ISO_8859_1);
        return sentinel + "path\t" + path + "\nmod\t" + path + "\t(devel)\t\ndep\tgolang.org/x/sys\tv0.5.0\th1:abc=\n"
                + "build\t-compiler=gc\nbuild\tCGO_ENABLED=0\n" + end;
    }

    /**
     * DWARF with {@code runtime.g.goid} at {@code goid}: {info, abbrev, str}. Version 4 then version 5 units; a decoy
     * structure with a goid member comes first, and the right one names goid through .debug_str with an exprloc.
     */
    static byte[][] dwarf(int goid) {
        ByteArrayOutputStream abbrev = new ByteArrayOutputStream();
        abbrev.writeBytes(new byte[] {1, 0x11, 1, 0x03, 0x08, 0, 0}); // compile unit: name (string)
        abbrev.writeBytes(new byte[] {2, 0x13, 1, 0x03, 0x08, 0x0b, 0x0f, 0, 0}); // structure: name, byte_size (udata)
        abbrev.writeBytes(new byte[] {3, 0x0d, 0, 0x03, 0x08, 0x38, 0x0f, 0, 0}); // member: name, location (udata)
        abbrev.writeBytes(new byte[] {4, 0x0d, 0, 0x03, 0x0e, 0x38, 0x18, 0x49, 0x13, 0, 0}); // member: strp, exprloc, type ref4
        abbrev.writeBytes(new byte[] {5, 0x24, 0, 0x03, 0x08, 0x0b, 0x0b, 0x3e, 0x0b, 0, 0}); // base type
        abbrev.write(0);
        byte[] str = "\0goid\0runtime.g\0".getBytes(StandardCharsets.ISO_8859_1);
        ByteArrayOutputStream dies = new ByteArrayOutputStream();
        dies.write(1);
        cstr(dies, "runtime");
        dies.write(2);
        cstr(dies, "runtime.m");
        uleb(dies, 0x168);
        dies.write(3);
        cstr(dies, "goid");
        uleb(dies, 8);
        dies.write(0);
        dies.write(5);
        cstr(dies, "int64");
        dies.write(8);
        dies.write(5);
        dies.write(2);
        cstr(dies, "runtime.g");
        uleb(dies, 0x1b0);
        dies.write(3);
        cstr(dies, "stack");
        uleb(dies, 0);
        dies.write(4);
        dies.writeBytes(le(4).putInt(0, 1).array()); // strp → "goid"
        ByteArrayOutputStream loc = new ByteArrayOutputStream();
        loc.write(0x23);
        uleb(loc, goid);
        uleb(dies, loc.size());
        dies.writeBytes(loc.toByteArray());
        dies.writeBytes(le(4).putInt(0, 0).array());
        dies.write(0);
        dies.write(0);
        byte[] body = dies.toByteArray();
        ByteArrayOutputStream info = new ByteArrayOutputStream();
        ByteBuffer v4 = le(4 + 2 + 4 + 1).putInt(0, 2 + 4 + 1 + body.length).putShort(4, (short) 4).putInt(6, 0);
        v4.put(10, (byte) 8);
        info.writeBytes(v4.array());
        info.writeBytes(body);
        ByteBuffer v5 = le(4 + 2 + 1 + 1 + 4).putInt(0, 2 + 1 + 1 + 4 + body.length).putShort(4, (short) 5);
        v5.put(6, (byte) 1).put(7, (byte) 8).putInt(8, 0);
        info.writeBytes(v5.array());
        info.writeBytes(body);
        return new byte[][] {info.toByteArray(), abbrev.toByteArray(), str};
    }

    /**
     * A static ELF of about 2 KB that looks like a Go binary to the readers: three functions in .text (returns,
     * a C3 byte inside an immediate, a tail jump), a Go 1.20 pclntab naming them, build info (inline, or the
     * pointer form if {@code pointerBuildInfo}), DWARF for runtime.g. Variants written to {@code dir}:
     * {@code NAME} (with .symtab; the header's textStart is 0 as in Go 1.26, so runtime.text is used),
     * {@code NAME-stripped} (no .symtab or DWARF: the .text section is used) and {@code NAME-sstripped} (no
     * section headers: the pclntab is found by its magic, the header's textStart set).
     */
    static List<Path> elfs(Path dir, String name, boolean pointerBuildInfo) throws Exception {
        List<Fn> fns = List.of(new Fn("main.(*conn).serve", 0, 0x20), new Fn("main.main", 0x20, 0x20), new Fn("main.spin", 0x40, 0x20));
        byte[] pcln = pclntab("go1.20", fns, 0, 0);
        StringBuilder c = new StringBuilder();
        c.append("""
                __asm__(".text\\n"
                  ".globl runtime.text\\n.type runtime.text,@function\\nruntime.text:\\n"
                  ".globl serve\\n.type serve,@function\\nserve:\\n"
                  " push %rbp\\n mov %rsp,%rbp\\n cmp $0x10,%rdi\\n ja 1f\\n mov $0xc3,%eax\\n pop %rbp\\n ret\\n1: pop %rbp\\n ret $8\\n"
                  ".size serve,.-serve\\n.size runtime.text,.-runtime.text\\n.p2align 5,0x90\\n"
                  ".globl main_main\\n.type main_main,@function\\nmain_main:\\n"
                  " sub $0x18,%rsp\\n call serve\\n add $0x18,%rsp\\n jmp serve\\n.size main_main,.-main_main\\n.p2align 5,0x90\\n"
                  ".globl _start\\n.type _start,@function\\n_start:\\n call main_main\\n repz ret\\n jmp _start\\n.size _start,.-_start\\n.p2align 5,0x90\\n");
                """);
        c.append("__attribute__((section(\".gopclntab\"), aligned(32), used)) const unsigned char pcln[] = {").append(cBytes(pcln)).append("};\n");
        if (pointerBuildInfo) {
            String mod = modinfo("example.com/old");
            c.append("struct gostr { const char *p; long n; };\n")
                    .append("static const char ver[] = \"go1.16.15\";\n")
                    .append("static const unsigned char mod[] = {").append(cBytes(mod.getBytes(StandardCharsets.ISO_8859_1))).append("};\n")
                    .append("static const struct gostr vers = { ver, sizeof ver - 1 }, mods = { (const char *) mod, sizeof mod };\n")
                    .append("__attribute__((section(\".go.buildinfo\"), aligned(16), used)) struct { char magic[14]; unsigned char ptr, flags;"
                            + " const struct gostr *v, *m; } buildinfo = { \"\\xff Go buildinf:\", 8, 0, &vers, &mods };\n");
        } else {
            byte[] bi = buildInfo("go1.20.14", modinfo("example.com/app"));
            c.append("__attribute__((section(\".go.buildinfo\"), aligned(16), used)) unsigned char buildinfo[] = {").append(cBytes(bi)).append("};\n");
        }
        Path work = Files.createTempDirectory("loupe-go-seed");
        try {
            Path bin = TestPrograms.compile(work, name, c.toString(), "-O1", "-nostdlib", "-static", "-no-pie", "-Wl,--build-id",
                    "-Wl,-z,max-page-size=0x40", "-Wl,-z,common-page-size=0x40", "-Wl,-z,separate-code");
            byte[][] d = dwarf(152);
            Files.write(work.resolve("info"), d[0]);
            Files.write(work.resolve("abbrev"), d[1]);
            Files.write(work.resolve("str"), d[2]);
            Path full = dir.resolve(name);
            TestPrograms.run(List.of("objcopy", "--add-section", ".debug_info=" + work.resolve("info"), "--add-section",
                    ".debug_abbrev=" + work.resolve("abbrev"), "--add-section", ".debug_str=" + work.resolve("str"), bin.toString(),
                    full.toString()));
            Path stripped = dir.resolve(name + "-stripped");
            TestPrograms.run(List.of("strip", "-s", "-o", stripped.toString(), full.toString()));
            Path sstripped = dir.resolve(name + "-sstripped");
            byte[] b = Files.readAllBytes(stripped);
            ElfSections s = ElfSections.read(stripped);
            SectionHeader tab = s.find(".gopclntab");
            SectionHeader text = s.find(".text");
            ByteBuffer bb = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
            bb.putLong((int) tab.offset() + 24, text.addr()); // the header's textStart
            bb.putLong(0x28, 0).putShort(0x3c, (short) 0).putShort(0x3e, (short) 0); // e_shoff, e_shnum, e_shstrndx
            Files.write(sstripped, b);
            return List.of(full, stripped, sstripped);
        } finally {
            try (var files = Files.list(work)) {
                for (Path p : files.toList()) {
                    Files.delete(p);
                }
            }
            Files.delete(work);
        }
    }

    private static String cBytes(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(x & 0xff).append(',');
        }
        return s.toString();
    }

    private static void cstr(ByteArrayOutputStream out, String s) {
        out.writeBytes(s.getBytes(StandardCharsets.UTF_8));
        out.write(0);
    }

    private static void uleb(ByteArrayOutputStream out, long v) {
        do {
            int b = (int) (v & 0x7f);
            v >>>= 7;
            out.write(v != 0 ? b | 0x80 : b);
        } while (v != 0);
    }

    private static ByteBuffer le(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }
}
