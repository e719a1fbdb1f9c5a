package dev.loupe.unwinder;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Builds small C programs and runs binutils (nm, addr2line, readelf) as ground truth. */
public final class TestPrograms {
    public static final String LOOPER = """
            #include <unistd.h>
            static volatile unsigned long sink;
            __attribute__((noinline)) void spin_here(void) { for (;;) { sink++; if (sink % 100000000 == 0) getpid(); } }
            __attribute__((noinline)) int helper_two(int x) { return x * 3 + (int)sink; }
            int main(void) { sink = helper_two(1); spin_here(); }
            """;

    private TestPrograms() {}

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
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException(cmd + " failed:\n" + out);
        }
        return out;
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
}
