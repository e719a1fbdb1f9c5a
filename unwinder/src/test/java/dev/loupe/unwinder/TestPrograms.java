package dev.loupe.unwinder;

import dev.loupe.unwinder.proc.MapEntry;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Builds small C programs and runs binutils (nm, addr2line, readelf) as ground truth. */
public final class TestPrograms {
    public static final Path LIBC = Path.of("/lib/x86_64-linux-gnu/libc.so.6");

    /** Loops forever in spin_here; the other functions exist to be looked up (noinline keeps them). */
    public static final String LOOPER = """
            #include <unistd.h>
            static volatile unsigned long sink;
            __attribute__((noinline)) static int local_helper(int x) { return x * 7 + (int)sink; }
            __attribute__((noinline)) void spin_here(void) { for (;;) { sink++; if (sink % 100000000 == 0) getpid(); } }
            __attribute__((noinline)) int helper_two(int x) { return x * 3 + (int)sink + local_helper(x); }
            int main(void) { sink = helper_two(1); spin_here(); }
            """;

    /**
     * A shared library (build with {@link #LIBRARY_FLAGS}) whose static function lies between two exported
     * ones: .dynsym has sized entries for those two only, .symtab names all three.
     */
    public static final String STATIC_IN_LIBRARY = """
            static volatile int sink;
            __attribute__((noinline, noclone)) int exported_before(int x) { return x + sink; }
            __attribute__((noinline, noclone)) static int static_middle(int x) { for (int i = 0; i < x; i++) sink += i * 3; return sink; }
            __attribute__((noinline, noclone)) int exported_after(int x) { return static_middle(x) + 2; }
            """;
    /** Functions in source order, a build id to find the debug file by. */
    public static final String[] LIBRARY_FLAGS = {"-shared", "-fPIC", "-O1", "-fno-toplevel-reorder", "-Wl,--build-id"};

    private TestPrograms() {}

    /**
     * Splits {@code bin} the way distributions ship binaries: its debug file ({@code objcopy --only-keep-debug}:
     * the full .symtab and the debug sections, same build id) written to {@code debug}, and {@code bin} itself
     * stripped in place with {@code stripFlag} ({@code --strip-debug} keeps .symtab, {@code --strip-unneeded}
     * drops it) and given a .gnu_debuglink to the debug file.
     */
    public static void splitDebugFile(Path bin, Path debug, String stripFlag) throws Exception {
        run(List.of("objcopy", "--only-keep-debug", bin.toString(), debug.toString()));
        run(List.of("objcopy", stripFlag, "--add-gnu-debuglink=" + debug, bin.toString()));
    }

    /** Where a debug file lives under a debug root (e.g. /usr/lib/debug) by GNU build id: ROOT/.build-id/xx/rest.debug. */
    public static Path buildIdPath(Path root, String buildId) {
        return root.resolve(".build-id").resolve(buildId.substring(0, 2)).resolve(buildId.substring(2) + ".debug");
    }

    /** gcc -O2 -fno-omit-frame-pointer, then {@code flags} (a later -O0 wins). */
    public static Path compile(Path dir, String name, String source, String... flags) throws Exception {
        Path c = dir.resolve(name + ".c");
        Files.writeString(c, source);
        Path out = dir.resolve(name);
        List<String> cmd = new ArrayList<>(List.of("gcc", "-O2", "-fno-omit-frame-pointer"));
        cmd.addAll(List.of(flags));
        cmd.addAll(List.of(c.toString(), "-o", out.toString()));
        String r = run(cmd);
        if (!Files.exists(out)) {
            throw new IllegalStateException("gcc failed: " + r);
        }
        return out;
    }

    public static String run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException(cmd + " failed:\n" + out);
            }
            return out;
        } finally {
            p.destroyForcibly();
        }
    }

    /** Defined FUNC/IFUNC symbols from {@code readelf -sW}: {value, size, name}. */
    public static List<Object[]> functions(Path file) throws Exception {
        List<Object[]> out = new ArrayList<>();
        for (String line : run(List.of("readelf", "-sW", file.toString())).split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 8 && (f[3].equals("FUNC") || f[3].equals("IFUNC")) && !f[6].equals("UND")) {
                long value = Long.parseUnsignedLong(f[1], 16);
                if (value != 0) {
                    String name = f[7];
                    int at = name.indexOf('@');
                    out.add(new Object[] {value, Long.decode(f[2]), at > 0 ? name.substring(0, at) : name});
                }
            }
        }
        return out;
    }

    /** {@code nm} output as (address, name) of function symbols (T/t/W/w/i). */
    public static List<Object[]> nmFunctions(Path file, boolean dynamic) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("nm", "--defined-only"));
        if (dynamic) {
            cmd.add("-D");
        }
        cmd.add(file.toString());
        List<Object[]> out = new ArrayList<>();
        for (String line : run(cmd).split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 3 && "TtWwi".indexOf(f[1].charAt(0)) >= 0) {
                String name = f[2];
                int at = name.indexOf('@');
                out.add(new Object[] {Long.parseUnsignedLong(f[0], 16), at > 0 ? name.substring(0, at) : name});
            }
        }
        return out;
    }

    /** The address nm gives a function symbol. */
    public static long nmAddress(Path file, String function) throws Exception {
        return (Long) nmFunctions(file, false).stream().filter(x -> x[1].equals(function)).findFirst()
                .orElseThrow(() -> new AssertionError(function + " not in nm " + file))[0];
    }

    /** {@code addr2line -f -e file addr...}: the function name addr2line gives each address (?? if none). */
    public static List<String> addr2line(Path file, List<Long> addrs) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("addr2line", "-f", "-e", file.toString()));
        for (long a : addrs) {
            cmd.add("0x" + Long.toHexString(a));
        }
        String[] lines = run(cmd).split("\n");
        List<String> out = new ArrayList<>();
        for (int i = 0; i < lines.length && out.size() < addrs.size(); i += 2) {
            out.add(lines[i]);
        }
        return out;
    }

    /** PT_LOAD headers from {@code readelf -lW}: {offset, vaddr, filesz, memsz, executable(0/1)}. */
    public static List<long[]> loads(Path file) throws Exception {
        List<long[]> out = new ArrayList<>();
        for (String line : run(List.of("readelf", "-lW", file.toString())).split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length > 6 && f[0].equals("LOAD")) {
                boolean exec = false;
                for (int i = 6; i < f.length - 1; i++) { // flags: "R E", "RW", ...; then the alignment
                    exec |= f[i].contains("E");
                }
                out.add(new long[] {Long.decode(f[1]), Long.decode(f[2]), Long.decode(f[4]), Long.decode(f[5]), exec ? 1 : 0});
            }
        }
        return out;
    }

    /**
     * An independent link-time address → runtime address conversion from readelf's program headers and
     * the process's maps: the address the sampler would report for code at {@code vaddr}.
     */
    public static long runtimeAddress(Path file, List<long[]> loads, List<MapEntry> maps, long vaddr) {
        for (long[] l : loads) {
            if (vaddr >= l[1] && vaddr < l[1] + l[2]) {
                long fileOffset = vaddr - l[1] + l[0];
                for (MapEntry m : maps) {
                    if (m.executable() && m.path().equals(file.toString()) && fileOffset >= m.offset()
                            && fileOffset < m.offset() + (m.end() - m.start())) {
                        return m.start() + fileOffset - m.offset();
                    }
                }
            }
        }
        throw new AssertionError("0x" + Long.toHexString(vaddr) + " not mapped executable from " + file);
    }

    /** ELF header field e_shoff (section header table offset) from {@code readelf -h}. */
    public static long sectionHeaderOffset(Path file) throws Exception {
        for (String line : run(List.of("readelf", "-h", file.toString())).split("\n")) {
            if (line.contains("Start of section headers:")) {
                return Long.parseLong(line.replaceAll(".*:\\s*(\\d+).*", "$1"));
            }
        }
        throw new AssertionError("no e_shoff");
    }
}
