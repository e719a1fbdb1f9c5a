package dev.loupe.unwinder.dwarf;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SymbolTable;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the DWARF tests share: real gcc builds in each debug-info variant, binutils' addr2line as ground truth, the
 * bytes of a function, Debian's libc debug file and a file's DWARF sections by name.
 */
final class DwarfFixture {
    /**
     * The variants every reader must match addr2line on: DWARF 5, DWARF 4, DWARF 5 with zlib-compressed sections, and
     * with zstd-compressed ones (binutils 2.40's objcopy writes ELFCOMPRESS_ZSTD; its addr2line reads them).
     */
    static final List<String> VARIANTS = List.of("-gdwarf-5", "-gdwarf-4", "compressed", "zstd");
    /** The sections {@link DwarfLineTable#of(String, Map, SymbolTable, long)} reads. */
    static final List<String> SECTIONS = List.of(".debug_line", ".debug_line_str", ".debug_str", ".debug_info",
            ".debug_abbrev", ".debug_str_offsets", ".debug_addr", ".debug_ranges", ".debug_rnglists", ".debug_aranges");

    private DwarfFixture() {}

    /** {@code source} built with gcc {@code opt} in each of {@link #VARIANTS}, by variant. */
    static Map<String, Path> variants(Path dir, String name, String source, String opt) throws Exception {
        Map<String, Path> out = new LinkedHashMap<>();
        for (String variant : VARIANTS) {
            boolean packed = variant.equals("compressed") || variant.equals("zstd");
            Path bin = TestPrograms.compile(dir, name + variant.replace("-", "_"), source, opt, packed ? "-gdwarf-5" : variant);
            if (variant.equals("compressed")) {
                TestPrograms.run(List.of("objcopy", "--compress-debug-sections=zlib", bin.toString()));
                assertTrue(TestPrograms.run(List.of("readelf", "-SW", bin.toString())).lines()
                        .anyMatch(l -> l.contains(".debug_line ") && l.matches(".*\\s C\\s.*|.* C .*")), "compressed");
            } else if (variant.equals("zstd")) {
                TestPrograms.run(List.of("objcopy", "--compress-debug-sections=zstd", bin.toString()));
                for (String section : List.of(".debug_line", ".debug_info", ".debug_abbrev")) {
                    assertEquals("ZSTD", compression(bin, section), bin + " " + section);
                }
            }
            out.put(variant, bin);
        }
        return out;
    }

    /**
     * {@code source} written to {@code dir/src/NAME.c} and built from {@code dir} by its relative name, as make does:
     * the line table's directories are then relative ("src") to the compilation directory.
     */
    static Path compileRelative(Path dir, String name, String source, String... flags) throws Exception {
        return compileRelative("gcc", dir, name, source, flags);
    }

    /** As above with {@code compiler} (gcc, clang). */
    static Path compileRelative(String compiler, Path dir, String name, String source, String... flags) throws Exception {
        Files.createDirectories(dir.resolve("src"));
        Files.writeString(dir.resolve("src").resolve(name + ".c"), source);
        StringBuilder cmd = new StringBuilder("cd '" + dir + "' && " + compiler + " -fno-omit-frame-pointer");
        for (String f : flags) {
            cmd.append(' ').append(f);
        }
        cmd.append(" src/").append(name).append(".c -o ").append(name);
        TestPrograms.run(List.of("sh", "-c", cmd.toString()));
        return dir.resolve(name);
    }

    /**
     * How readelf says {@code section} of {@code file} is compressed: "ZLIB", "ZSTD" (its Elf64_Chdr's ch_type), or
     * null when it is not.
     */
    static String compression(Path file, String section) throws Exception {
        List<String> l = TestPrograms.run(List.of("readelf", "-tW", file.toString())).lines().toList();
        for (int i = 0; i < l.size(); i++) {
            if (l.get(i).trim().matches("\\[\\s*\\d+\\]\\s+" + java.util.regex.Pattern.quote(section))) {
                for (int k = i + 1; k + 1 < l.size() && k <= i + 2; k++) { // the type, flags, then "ZSTD, size, align"
                    if (l.get(k).contains("COMPRESSED")) {
                        return l.get(k + 1).trim().split(",")[0];
                    }
                }
                return null;
            }
        }
        throw new AssertionError(file + " has no section " + section);
    }

    /** Debian's libc debug file (libc6-dbg), found by libc's build id. */
    static Path libcDebugFile() throws Exception {
        String id = ElfFile.open(TestPrograms.LIBC).buildId().orElseThrow();
        Path debug = TestPrograms.buildIdPath(Path.of("/usr/lib/debug"), id);
        assertTrue(Files.exists(debug), "no " + debug + " (package libc6-dbg; ./loupe test installs it)");
        return debug;
    }

    /** The index in {@code s} of the symbol at nm's address of {@code name} (a table keeps one of a function's aliases). */
    static int indexOf(SymbolTable s, String name, Path file) throws Exception {
        long at = TestPrograms.nmAddress(file, name);
        for (int i = 0; i < s.size(); i++) {
            if (s.start(i) == at) {
                return i;
            }
        }
        throw new AssertionError("no symbol at " + Long.toHexString(at) + " (" + name + ")");
    }

    /** Every byte address of symbol {@code i}. */
    static List<Long> bytesOf(SymbolTable s, int i) {
        List<Long> addrs = new ArrayList<>();
        for (long a = s.start(i); a < s.start(i) + s.symbolSize(i); a++) {
            addrs.add(a);
        }
        return addrs;
    }

    /** The DWARF sections of {@link #SECTIONS} that {@code elf} has, uncompressed, by name. */
    static Map<String, ByteBuffer> sections(ElfFile elf) throws Exception {
        Map<String, ByteBuffer> out = new HashMap<>();
        for (String s : SECTIONS) {
            elf.section(s).ifPresent(b -> out.put(s, b));
        }
        return out;
    }

    /** addr2line's "file:line" for each address ("??:0" where it knows none; discriminators dropped). */
    static List<String> addr2line(Path file, List<Long> addrs) throws Exception {
        String out = toolOutput("addr2line", file, addrs, "");
        List<String> lines = new ArrayList<>();
        for (String l : out.split("\n")) {
            lines.add(l.replaceAll(" \\(discriminator \\d+\\)", "").trim());
        }
        assertEquals(addrs.size(), lines.size(), out);
        return lines;
    }

    /** elfutils' eu-addr2line's "file:line" for each address, as {@link #addr2line} (an implementation other than BFD). */
    static List<String> euAddr2line(Path file, List<Long> addrs) throws Exception {
        String out = toolOutput("eu-addr2line", file, addrs, "");
        List<String> lines = new ArrayList<>();
        for (String l : out.split("\n")) {
            lines.add(l.replaceAll(" \\(discriminator \\d+\\)", "").replaceAll(":(\\d+):\\d+$", ":$1").trim());
        }
        assertEquals(addrs.size(), lines.size(), out);
        return lines;
    }

    /**
     * addr2line -i -f's chain at each address: "function file:line" a level, innermost first (discriminators dropped;
     * {@code baseNames}: file base names only).
     */
    static List<List<String>> addr2lineChains(Path file, List<Long> addrs, boolean baseNames) throws Exception {
        return chains("addr2line", file, addrs, baseNames);
    }

    /**
     * As above from {@code tool}: "addr2line" (binutils) or "llvm-symbolizer --output-style=GNU" (LLVM's, which reads
     * clang's DWARF 5 inline ranges that binutils 2.40 misses), both with -a -i -f.
     */
    static List<List<String>> chains(String tool, Path file, List<Long> addrs, boolean baseNames) throws Exception {
        String out = toolOutput(tool, file, addrs, "-a -i -f"); // -a prints each address first: the separator between chains
        List<List<String>> chains = new ArrayList<>();
        String[] l = out.split("\n");
        for (int i = 0; i < l.length; ) {
            assertTrue(l[i].startsWith("0x"), "address line expected: " + l[i]);
            i++;
            List<String> chain = new ArrayList<>();
            while (i + 1 < l.length && !l[i].startsWith("0x")) {
                String where = l[i + 1].replaceAll(" \\(discriminator \\d+\\)", "").trim();
                chain.add(l[i].trim() + " " + (baseNames ? where.substring(where.lastIndexOf('/') + 1) : where));
                i += 2;
            }
            chains.add(chain);
        }
        assertEquals(addrs.size(), chains.size(), out);
        return chains;
    }

    private static String toolOutput(String tool, Path file, List<Long> addrs, String flags) throws Exception {
        Path in = Files.createTempFile("addrs", ".txt");
        StringBuilder sb = new StringBuilder();
        for (long a : addrs) {
            sb.append("0x").append(Long.toHexString(a)).append('\n');
        }
        Files.writeString(in, sb);
        try {
            return TestPrograms.run(List.of("sh", "-c", tool + " " + flags + " -e '" + file + "' < '" + in + "'"));
        } finally {
            Files.delete(in);
        }
    }
}
