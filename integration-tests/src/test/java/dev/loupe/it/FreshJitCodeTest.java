package dev.loupe.it;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 27: Java code compiled a moment ago is walked at once, not after the agent's next read of the code cache. The
 * target's thread {@code fresh-spin} loads the class {@code Spin} anew every 40 ms (a class loader of its own each
 * round, so each round's {@code Spin.applyAsLong} is a new method the JIT compiles anew: its loop is OSR-compiled
 * within a millisecond) and spends the round in it, called from {@code Fresh.rounds}. So about 25 blobs a second are
 * new, and most samples land in code no read has seen yet (reads come at best 250 ms after a sample shows new code):
 * the kernel finds each through the code heap's segment map. The test wants, of that thread's samples whose leaf is
 * Spin's compiled code (mapping {@code [jit] java}, named {@code Spin.applyAsLong} or not yet named), taken once the
 * process's tables were loaded (no {@code unwind=frame_pointers} label), at least 97 % whose next frame is
 * {@code Fresh.rounds}, with no {@code [unwind: ...]} frame and reaching the thread's root: compiled code keeps no frame
 * pointer, so a walk by frame pointers skips {@code Fresh.rounds} or stops. Of those, at least 95 % enter Java from
 * {@code JavaCalls::call_helper} through a frame named {@code [call_stub]} (HotSpot's call stub, one stub of a
 * {@code StubRoutines} blob, known by {@code StubRoutines::_call_stub_return_address}).
 */
class FreshJitCodeTest {
    static final String SPIN = """
            public class Spin implements java.util.function.LongUnaryOperator {
                public long applyAsLong(long n) {
                    long x = n;
                    long end = System.nanoTime() + 40_000_000L;
                    for (long i = 0; ; i++) {
                        x = x * 6364136223846793005L + 1442695040888963407L;
                        if ((i & 0xfff) == 0 && System.nanoTime() > end) {
                            return x;
                        }
                    }
                }
            }
            """;
    static final String FRESH = """
            import java.nio.file.*;
            import java.util.function.LongUnaryOperator;

            public class Fresh {
                static volatile long sink;

                public static void main(String[] args) throws Exception {
                    byte[] spin = Files.readAllBytes(Path.of(args[0]));
                    Thread t = new Thread(() -> rounds(spin), "fresh-spin");
                    t.start();
                    System.out.println("started");
                    t.join();
                }

                static void rounds(byte[] spin) {
                    try {
                        for (long r = 0; ; r++) {
                            ClassLoader own = new ClassLoader(Fresh.class.getClassLoader()) {
                                @Override
                                protected Class<?> findClass(String name) throws ClassNotFoundException {
                                    if (!name.equals("Spin")) {
                                        throw new ClassNotFoundException(name);
                                    }
                                    return defineClass(name, spin, 0, spin.length);
                                }
                            };
                            LongUnaryOperator op = (LongUnaryOperator) own.loadClass("Spin").getDeclaredConstructor().newInstance();
                            sink += op.applyAsLong(r);
                            if (r == 25) {
                                System.out.println("warm"); // start-up behind it: the code cache holds the JDK's code
                            }
                        }
                    } catch (ReflectiveOperationException e) {
                        throw new IllegalStateException(e);
                    }
                }
            }
            """;

    @TempDir
    Path dir;

    /**
     * JDK 25 gives a blob's code as offsets from it, 11 to 21 as pointers; 21 runs chrooted. Not JDK 8: its stacks
     * through fresh code ended after the leaf (2.5 % walked), so the agent does not walk its fresh code by the segment
     * map (SegmentMapStep.rules) and this test would only show that.
     */
    @ParameterizedTest(name = "JDK {0}")
    @CsvSource({"25", "21", "17", "11"})
    void codeCompiledSinceTheLastReadIsWalkedAtOnce(String jdk) throws Exception {
        // The JVM's view of its files (under the other root's /tmp when chrooted) and where the test writes them.
        boolean chrooted = JavaStacksProfileTest.chrooted(jdk);
        Path seen = chrooted ? Path.of("/tmp", "loupe-fresh-jit-" + ProcessHandle.current().pid() + "-" + System.nanoTime()) : dir;
        Path written = chrooted ? Files.createDirectories(JavaStacksProfileTest.SID.resolve(seen.toString().substring(1))) : dir;
        Files.createDirectories(written.resolve("spin"));
        Files.writeString(written.resolve("spin/Spin.java"), SPIN);
        Files.writeString(written.resolve("Fresh.java"), FRESH.replace("Path.of(args[0])", "Paths.get(args[0])")); // JDK 8
        for (String[] unit : List.of(new String[] {"spin", "spin/Spin.java"}, new String[] {".", "Fresh.java"})) {
            Process javac = new ProcessBuilder(JavaStacksProfileTest.command(jdk, "javac", List.of("-d",
                    seen.resolve(unit[0]).toString(), seen.resolve(unit[1]).toString()))).redirectErrorStream(true).start();
            assertEquals(0, javac.waitFor(), new String(javac.getInputStream().readAllBytes()));
        }
        // Spin.class only where Fresh reads it: not on the class path, so every round's loader defines it anew.
        Process jvm = new ProcessBuilder(JavaStacksProfileTest.command(jdk, "java", List.of("-cp", seen.toString(), "Fresh",
                seen.resolve("spin/Spin.class").toString()))).redirectErrorStream(true).start();
        Path out = dir.resolve("profiles");
        String log;
        try {
            java.io.BufferedReader lines = new java.io.BufferedReader(new java.io.InputStreamReader(jvm.getInputStream()));
            assertEquals("started", lines.readLine());
            // The JVM's start-up behind it (25 rounds): its code cache holds the JDK's code. A deadline, not a sleep.
            assertEquals("warm", java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return lines.readLine();
                } catch (java.io.IOException e) {
                    return e.toString();
                }
            }).get(120, java.util.concurrent.TimeUnit.SECONDS));
            log = JavaStacksProfileTest.profileByCodeCache(dir, jvm, out, "20s");
        } finally {
            Targets.kill(jvm);
        }
        long fresh = 0;
        long walked = 0;
        long callStub = 0;
        long beforeTables = 0;
        Map<String, Long> others = new TreeMap<>();
        for (Profiles.Stack s : Profiles.stacksOfDir(out)) {
            if (s.pid() != jvm.pid() || !"fresh-spin".equals(s.labels().get("thread_comm"))) {
                continue;
            }
            List<String> user = s.user();
            List<String> files = JavaStacksProfileTest.userFiles(s);
            if (user.isEmpty() || !files.getFirst().equals("[jit] java")
                    || !(user.getFirst().equals("Spin.applyAsLong") || user.getFirst().equals("?"))) {
                continue; // the interpreter before the loop's OSR compilation, a stub, the round's own code, a loader
            }
            if ("frame_pointers".equals(s.labels().get("unwind"))) {
                beforeTables += s.count(); // before the agent loaded the process's tables: frame pointers only
                continue;
            }
            fresh += s.count();
            boolean ok = user.size() > 2 && user.get(1).equals("Fresh.rounds")
                    && user.stream().noneMatch(f -> f.startsWith("[unwind:")) && JavaStacksProfileTest.reachesRoot(user);
            if (ok) {
                walked += s.count();
                int helper = -1; // JavaCalls::call_helper, mangled as each JDK declares it
                for (int i = 0; i < user.size() && helper < 0; i++) {
                    helper = user.get(i).startsWith("_ZN9JavaCalls11call_helperE") ? i : -1;
                }
                callStub += helper > 0 && user.get(helper - 1).equals("[call_stub]") ? s.count() : 0;
            } else {
                others.merge(s.labels().getOrDefault("unwind", "") + " " + String.join(" <- ", user.subList(0, Math.min(user.size(), 8))) + "  (files "
                        + String.join(", ", files.subList(0, Math.min(files.size(), 4))) + ")", s.count(), Long::sum);
            }
        }
        double share = fresh == 0 ? 0 : 100.0 * walked / fresh;
        StringBuilder worst = new StringBuilder();
        others.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(8)
                .forEach(e -> worst.append("  ").append(e.getValue()).append("  ").append(e.getKey()).append('\n'));
        double callStubShare = walked == 0 ? 0 : 100.0 * callStub / walked;
        System.out.printf(Locale.ROOT, "JDK %s: %d samples in Spin's compiled code (and %d before the process's tables were"
                + " loaded), %.1f %% walked to Fresh.rounds and the thread's root, %.1f %% of those through [call_stub] into"
                + " JavaCalls::call_helper%n%s", jdk, fresh, beforeTables, share, callStubShare, worst);
        assertTrue(fresh > 500, "samples in Spin's compiled code: " + fresh + "\n" + worst + log);
        assertTrue(share >= 97, String.format(Locale.ROOT, "%.1f %% walked; the others:%n%s%s", share, worst, log));
        // The thread's first Java frame is called from C++ through the call stub, named as async-profiler names it.
        assertTrue(callStubShare >= 95, String.format(Locale.ROOT, "%.1f %% through [call_stub]", callStubShare));
    }
}
