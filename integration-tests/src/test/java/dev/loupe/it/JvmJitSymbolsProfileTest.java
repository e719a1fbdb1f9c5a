package dev.loupe.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A JDK 25 JVM started with default flags (no perf map of its own): the packaged agent, with {@code --jvm-symbols}
 * on (the default) and {@code --jvm-code-cache off} (so that the JVM's own memory does not name the frames first:
 * this is the fallback for a JVM whose VMStructs cannot be read), sees unnamed JIT frames of that JVM, has it write its perf map through the HotSpot attach
 * ({@code Compiler.perfmap}) and names the JIT code from it. The leaf of the spinning loop is compiled code: after
 * the attach, its frames name {@code Spin.spin}. (Stacks beyond compiled Java frames, which keep no frame
 * pointer, are another part of issue 17.)
 */
class JvmJitSymbolsProfileTest {
    private static final Path JDK25 = Path.of("/usr/lib/jvm/temurin-25-jdk-amd64/bin");

    static final String PROGRAM = """
            public class Spin {
                static long spin(long n) {
                    long s = 0;
                    for (long i = 0; i < n; i++) {
                        s = (s * 31 + i) % 1000003;
                    }
                    return s;
                }
                public static void main(String[] args) {
                    long sink = 0;
                    for (int round = 0; ; round++) {
                        sink += spin(1_000_000);
                        if (round == 500) {
                            System.out.println("warm " + sink); // spin has long been compiled by now
                        }
                    }
                }
            }
            """;

    @TempDir
    Path dir;

    @Test
    void jitFramesOfAJvmWithoutFlagsAreNamedAfterTheAgentAttaches() throws Exception {
        Files.writeString(dir.resolve("Spin.java"), PROGRAM);
        Process javac = new ProcessBuilder(JDK25.resolve("javac").toString(), "Spin.java").directory(dir.toFile())
                .redirectErrorStream(true).start();
        assertEquals(0, javac.waitFor(), new String(javac.getInputStream().readAllBytes()));
        Process jvm = new ProcessBuilder(JDK25.resolve("java").toString(), "-cp", dir.toString(), "Spin")
                .directory(dir.toFile()).redirectErrorStream(true).start();
        Path perfMap = Path.of("/tmp/perf-" + jvm.pid() + ".map");
        Path out = dir.resolve("profiles");
        String log;
        try {
            // JIT warm-up: the program says when spin has run 500 times (its only output; a few seconds at most).
            java.util.concurrent.CompletableFuture<String> warm = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return new java.io.BufferedReader(new java.io.InputStreamReader(jvm.getInputStream())).readLine();
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            String line = warm.get(30, java.util.concurrent.TimeUnit.SECONDS);
            assertTrue(line != null && line.startsWith("warm "), "the JVM's first line: " + line);
            assertTrue(Files.notExists(perfMap), "the JVM writes no perf map of its own");
            try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(jvm.pid()), "--frequency", "99",
                    "--duration", "12s", "--output", out.toString(), "--http", "off", "--jvm-symbols", "on",
                    "--jvm-code-cache", "off")) {
                assertEquals(0, agent.awaitExit(Duration.ofSeconds(60)), agent.log());
                log = agent.log();
            }
            assertTrue(jvm.isAlive(), "the agent never harms its target");
            assertTrue(Files.exists(perfMap), "the attach made the JVM write " + perfMap + "; log:\n" + log);
        } finally {
            Targets.kill(jvm);
            Files.deleteIfExists(perfMap);
        }
        assertTrue(log.contains("jvm symbols: pid " + jvm.pid() + " (java 25"), log);

        List<Profiles.Stack> stacks = Profiles.stacksOfDir(out); // go tool pprof -raw and Parca's rules accept each file
        long total = 0;
        long jitLeaf = 0;
        long named = 0;
        for (Profiles.Stack s : stacks) {
            if (s.pid() != jvm.pid()) {
                continue;
            }
            total += s.count();
            int leaf = firstUserFrame(s);
            if (leaf < 0 || !s.files().get(leaf).equals("[jit] java")) {
                continue;
            }
            jitLeaf += s.count();
            named += s.functions().get(leaf).contains("Spin.spin") ? s.count() : 0;
        }
        // Samples taken before the attach and the map's re-read (at most a second apart) may stay unnamed.
        double share = jitLeaf == 0 ? 0 : 100.0 * named / jitLeaf;
        System.out.printf("JDK 25, default flags: %d samples of the JVM, %d with a JIT leaf, %.1f %% of those name Spin.spin%n",
                total, jitLeaf, share);
        assertTrue(jitLeaf > 0.8 * total && total > 500, "JIT-leaf samples: " + jitLeaf + " of " + total);
        assertTrue(share >= 95, "Spin.spin named in " + share + " % of JIT-leaf samples");
    }

    /** Index of the first frame outside the kernel (stacks are leaf first), or -1. */
    private static int firstUserFrame(Profiles.Stack s) {
        for (int i = 0; i < s.files().size(); i++) {
            if (!s.files().get(i).equals("[kernel.kallsyms]")) {
                return i;
            }
        }
        return -1;
    }
}
