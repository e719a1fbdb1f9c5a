package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.TestPrograms;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs Jazzer (coverage-guided, libFuzzer-based) over {@link CfiFuzzTarget} in a child JVM, seeded with
 * real sections of a freshly built program: a short run in the normal suite, a long one on demand:
 * <pre>
 * mvn -B -o -pl unwinder -am test -Dtest=CfiFuzzTest -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dloupe.fuzz.seconds=3600 [-Dloupe.fuzz.corpus=/var/tmp/loupe-cfi-corpus]
 * </pre>
 * Findings (crash-*, timeout-*, oom-* inputs) are written to {@code unwinder/target/fuzz-findings/} and fail
 * the test; the run's execution count is printed.
 */
class CfiFuzzTest {
    @TempDir
    Path tmp;

    @Test
    void jazzerFindsNothing() throws Exception {
        int seconds = Integer.getInteger("loupe.fuzz.seconds", 8);
        String corpusProp = System.getProperty("loupe.fuzz.corpus");
        Path corpus = corpusProp != null ? Path.of(corpusProp) : tmp.resolve("corpus");
        Files.createDirectories(corpus);
        seed(corpus);
        Path findings = Path.of("target", "fuzz-findings").toAbsolutePath();
        Files.createDirectories(findings);
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx1g", "-XX:+EnableDynamicAgentLoading", "--enable-native-access=ALL-UNNAMED", "-cp", cp,
                "com.code_intelligence.jazzer.Jazzer",
                "--target_class=" + CfiFuzzTarget.class.getName(),
                "--instrumentation_includes=dev.loupe.unwinder.**",
                "-max_total_time=" + seconds, "-timeout=10", "-max_len=65536", "-print_final_stats=1",
                "-artifact_prefix=" + findings + "/", corpus.toString()));
        Path log = tmp.resolve("jazzer.log");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!p.waitFor(seconds + 300L, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("Jazzer did not finish");
        }
        String out = Files.readString(log, StandardCharsets.ISO_8859_1);
        Matcher done = Pattern.compile("Done (\\d+) runs in (\\d+) second").matcher(out);
        String tail = out.length() > 4000 ? out.substring(out.length() - 4000) : out;
        assertEquals(0, p.exitValue(), "Jazzer reported a finding:\n" + tail);
        assertTrue(done.find(), tail);
        long runs = Long.parseLong(done.group(1));
        System.out.printf("CfiFuzzTest: %d executions in %s s, corpus %d inputs%n", runs, done.group(2), count(corpus));
        assertTrue(runs > 1000, "too few executions: " + runs);
        try (Stream<Path> s = Files.list(findings)) {
            assertEquals(List.of(), s.map(Path::toString).toList(), "finding inputs");
        }
    }

    /** Seeds: a small program as a whole ELF and its .eh_frame, .debug_frame and .eh_frame_hdr sections. */
    private void seed(Path corpus) throws Exception {
        Path prog = TestPrograms.compile(tmp, "seed", """
                #include <stdio.h>
                #include <stdlib.h>
                __attribute__((noinline)) int f(int n) { char *p = __builtin_alloca(n + 8); p[0] = n; return n ? f(n - 1) + p[0] : 0; }
                int main(int argc, char **argv) { printf("%d\\n", f(argc)); return 0; }
                """, "-g", "-fomit-frame-pointer");
        byte[] elf = Files.readAllBytes(prog);
        write(corpus, "elf", 2, elf);
        ElfSections s = ElfSections.read(prog);
        String[] names = {".eh_frame", ".debug_frame", null, ".eh_frame_hdr"};
        for (int mode = 0; mode < names.length; mode++) {
            if (names[mode] != null && s.find(names[mode]) != null) {
                write(corpus, names[mode].substring(1), mode, s.contents(s.find(names[mode])));
            }
        }
    }

    private static void write(Path dir, String name, int mode, byte[] data) throws Exception {
        byte[] in = new byte[data.length + 1];
        in[0] = (byte) mode;
        System.arraycopy(data, 0, in, 1, data.length);
        Files.write(dir.resolve("seed-" + name), in);
    }

    private static long count(Path dir) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.count();
        }
    }
}
