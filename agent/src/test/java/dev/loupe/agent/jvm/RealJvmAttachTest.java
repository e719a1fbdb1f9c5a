package dev.loupe.agent.jvm;

import dev.loupe.agent.logging.LogCapture;
import dev.loupe.unwinder.proc.ProcStatus;
import dev.loupe.unwinder.proc.ProcessRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.ToolProvider;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Real JVMs, JDK 25 (the one running the tests) and JDK 17, with default flags, a loop the JIT compiles, and the
 * attach as the agent runs it (as root): the map they write names the loop; {@code -Xrs} and
 * {@code -XX:+DisableAttachMechanism} JVMs are never signalled and keep running. Every JVM and every file they
 * wrote is removed afterwards.
 */
class RealJvmAttachTest {
    private static final String SPIN = """
            public class Spin {
                static long loop(long n) {
                    long s = 0;
                    for (long i = 0; i < n; i++) {
                        s += i ^ (s >>> 3);
                    }
                    return s;
                }

                public static void main(String[] args) throws Exception {
                    long t = 0;
                    for (int i = 0; i < 50_000; i++) {
                        t += loop(10_000);
                    }
                    System.out.println("ready " + t);
                    System.out.flush();
                    while (true) { // stays compiled, at little CPU
                        t += loop(10_000);
                        Thread.sleep(1);
                    }
                }
            }
            """;

    @TempDir
    static Path classes;
    @TempDir
    Path workDir;

    private final List<Target> started = new ArrayList<>();
    private final List<Integer> signalled = new CopyOnWriteArrayList<>();
    private final ProcessRegistry registry = ProcessRegistry.host();
    private final HotSpotAttacher attacher = new HotSpotAttacher(registry, Duration.ofSeconds(5), Duration.ofSeconds(30),
            (pid, stillSafe) -> {
                signalled.add(pid);
                return Sigquit.send(pid, stillSafe);
            });

    @BeforeAll
    static void compile() throws IOException {
        Path src = classes.resolve("Spin.java");
        Files.writeString(src, SPIN);
        int rc = ToolProvider.getSystemJavaCompiler().run(null, null, null, "--release", "17", "-d", classes.toString(),
                src.toString());
        assertEquals(0, rc, "javac Spin.java");
    }

    /** A started JVM: its process, what it printed, its pid in its own namespace. */
    private record Target(Process process, StringBuffer output, int nsPid) {
        int pid() {
            return (int) process.pid();
        }

        Path tmp() {
            return Path.of("/proc/" + pid() + "/root/tmp");
        }

        Path perfMap() {
            return tmp().resolve("perf-" + nsPid + ".map");
        }

        Path socket() {
            return tmp().resolve(".java_pid" + nsPid);
        }
    }

    private static Path jdk25() {
        assertTrue(Runtime.version().feature() >= 25, "the tests run on JDK 25, not " + Runtime.version());
        return Path.of(System.getProperty("java.home"), "bin", "java");
    }

    /** JDK 17's java: -Dloupe.jdk17=HOME, else the one under /usr/lib/jvm whose release file says 17. */
    private static Path jdk17() throws IOException {
        String configured = System.getProperty("loupe.jdk17");
        if (configured != null) {
            return Path.of(configured, "bin", "java");
        }
        try (DirectoryStream<Path> homes = Files.newDirectoryStream(Path.of("/usr/lib/jvm"))) {
            for (Path home : homes) {
                Path release = home.resolve("release");
                if (Files.isExecutable(home.resolve("bin/java")) && Files.isRegularFile(release)
                        && JavaRuntime.feature(JavaRuntime.parseRelease(Files.readString(release)).getOrDefault("JAVA_VERSION", "")) == 17) {
                    return home.resolve("bin/java");
                }
            }
        }
        return fail("no JDK 17 under /usr/lib/jvm (apt-get install openjdk-17-jre-headless, or -Dloupe.jdk17=HOME)");
    }

    /** Starts Spin and waits until its loop has run 50,000 times (compiled by then). */
    private Target start(Path java, String... flags) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(java.toString()));
        cmd.addAll(List.of(flags));
        cmd.addAll(List.of("-cp", classes.toString(), "Spin"));
        Process p = new ProcessBuilder(cmd).directory(workDir.toFile()).redirectErrorStream(true).start();
        StringBuffer out = new StringBuffer();
        CountDownLatch ready = new CountDownLatch(1);
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    out.append(line).append('\n');
                    if (line.startsWith("ready")) {
                        ready.countDown();
                    }
                }
            } catch (IOException ignored) {
                // the process was destroyed
            }
        }, "spin-output");
        reader.setDaemon(true);
        reader.start();
        int nsPid = ProcStatus.read(Path.of("/proc/" + p.pid())).nsPid((int) p.pid());
        Target t = new Target(p, out, nsPid);
        started.add(t);
        assertTrue(ready.await(60, TimeUnit.SECONDS), "Spin did not get ready: " + out);
        return t;
    }

    @AfterEach
    void stopAndClean() throws Exception {
        for (Target t : started) {
            if (t.process().isAlive()) {
                Files.deleteIfExists(t.perfMap()); // through its root while it runs
                Files.deleteIfExists(t.tmp().resolve(".attach_pid" + t.nsPid()));
            }
            t.process().destroy();
            if (!t.process().waitFor(10, TimeUnit.SECONDS)) {
                t.process().destroyForcibly().waitFor();
            }
            // A JVM removes its socket at exit; the same names in this namespace (the children share it) in case.
            Files.deleteIfExists(Path.of("/tmp/perf-" + t.nsPid() + ".map"));
            Files.deleteIfExists(Path.of("/tmp/.java_pid" + t.nsPid()));
            Files.deleteIfExists(Path.of("/tmp/.attach_pid" + t.nsPid()));
        }
    }

    private JvmSymbols symbols() throws IOException {
        return new JvmSymbols(JvmSymbols.jvms(registry, attacher), Runnable::run, System::nanoTime);
    }

    /**
     * Polls {@code happened} for up to {@code limit}: true as soon as it holds, false if it never did (for checks
     * that something must not happen).
     */
    private static boolean within(Duration limit, java.util.function.BooleanSupplier happened) throws InterruptedException {
        long end = System.nanoTime() + limit.toNanos();
        while (System.nanoTime() < end) {
            if (happened.getAsBoolean()) {
                return true;
            }
            Thread.sleep(10);
        }
        return happened.getAsBoolean();
    }

    private static boolean catchesSigquit(Target t) throws IOException {
        return ProcStatus.read(Path.of("/proc/" + t.pid())).catches(Sigquit.SIGQUIT);
    }

    /** The JVM answers SIGQUIT with its attach listener, writes a map naming the loop, and logs one line. */
    private void attachesWithDefaultFlags(Path java, String version) throws Exception {
        Target t = start(java);
        assertTrue(catchesSigquit(t));
        assertFalse(Files.exists(t.socket(), LinkOption.NOFOLLOW_LINKS), "a JVM opens its listener on demand");
        try (LogCapture log = new LogCapture(JvmSymbols.class.getName())) {
            JvmSymbols.Outcome o = symbols().attachNow(t.pid());
            assertEquals(JvmSymbols.Outcome.Kind.ATTACHED, o.kind(), o + "\n" + log.text());
            assertEquals(List.of(t.pid()), signalled, "one SIGQUIT to start the listener");
            String map = Files.readString(t.perfMap());
            long lines = map.lines().count();
            assertTrue(map.lines().anyMatch(l -> l.matches("0x[0-9a-f]+ 0x[0-9a-f]+ .*Spin\\.loop\\(long\\)")),
                    "the map names the loop:\n" + map.lines().filter(l -> l.contains("Spin")).toList());
            String line = "jvm symbols: pid " + t.pid() + " (java " + version + "): Compiler.perfmap written, " + lines + " lines";
            assertEquals(line, o.message());
            assertTrue(log.text().contains(line), log.text());
            // Again: the listener is up, so no second signal.
            assertEquals(JvmSymbols.Outcome.Kind.ATTACHED, symbols().attachNow(t.pid()).kind());
            assertEquals(List.of(t.pid()), signalled);
        }
        assertTrue(t.process().isAlive());
        assertFalse(t.output().toString().contains("Full thread dump"), "SIGQUIT printed a thread dump:\n" + t.output());
        assertFalse(Files.exists(t.tmp().resolve(".attach_pid" + t.nsPid())), "the trigger file is removed");
        assertFalse(Files.exists(workDir.resolve(".attach_pid" + t.nsPid())));
    }

    @Test
    void jdk25WithDefaultFlags() throws Exception {
        Path java = jdk25();
        attachesWithDefaultFlags(java, JavaRuntime.parseRelease(Files.readString(java.getParent().getParent().resolve("release")))
                .get("JAVA_VERSION"));
    }

    @Test
    void jdk17WithDefaultFlags() throws Exception {
        Path java = jdk17();
        attachesWithDefaultFlags(java, JavaRuntime.parseRelease(Files.readString(java.getParent().getParent().resolve("release")))
                .get("JAVA_VERSION"));
    }

    @Test
    void theBackgroundThreadAttachesWhenTriggered() throws Exception {
        Target t = start(jdk25());
        try (LogCapture log = new LogCapture(JvmSymbols.class.getName());
             JvmSymbols symbols = new JvmSymbols(JvmSymbols.jvms(registry, attacher), JvmSymbols.backgroundThread(), System::nanoTime)) {
            symbols.consider(t.pid());
            assertFalse(within(Duration.ofMillis(500), () -> Files.exists(t.perfMap()) || !signalled.isEmpty()),
                    "considering a JVM writes nothing: only new code does; signalled " + signalled);
            assertEquals(List.of(), log.lines(), log.text());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!log.text().contains("Compiler.perfmap written") && System.nanoTime() < deadline) {
                symbols.newCode(t.pid(), 0); // as the sampling thread would, sample after sample
                Thread.sleep(10);
            }
            assertTrue(log.text().contains("jvm symbols: pid " + t.pid() + " (java "), log.text());
            assertTrue(Files.readString(t.perfMap()).contains("Spin.loop(long)"));
            assertEquals(1, log.lines().size(), log.text());
            assertEquals(List.of(t.pid()), signalled);
        }
        assertTrue(t.process().isAlive());
    }

    @Test
    void anXrsJvmIsNeverSignalledButItsOwnListenerServes() throws Exception {
        // -Xrs: HotSpot installs no SIGQUIT handler (SIGQUIT would kill it) and opens its listener at start instead.
        Target t = start(jdk25(), "-Xrs");
        assertFalse(catchesSigquit(t));
        assertTrue(Files.exists(t.socket(), LinkOption.NOFOLLOW_LINKS), "-Xrs opens the attach listener at start");
        try (LogCapture log = new LogCapture(JvmSymbols.class.getName())) {
            JvmSymbols.Outcome o = symbols().attachNow(t.pid());
            assertEquals(JvmSymbols.Outcome.Kind.ATTACHED, o.kind(), o + "\n" + log.text());
        }
        assertTrue(Files.readString(t.perfMap()).contains("Spin.loop(long)"));
        assertFalse(t.process().waitFor(300, TimeUnit.MILLISECONDS), "the -Xrs JVM exited:\n" + t.output());
        assertEquals(List.of(), signalled);
    }

    @Test
    void anXrsJvmWithoutListenerIsSkippedAndKeepsRunning() throws Exception {
        Target t = start(jdk25(), "-Xrs");
        assertFalse(catchesSigquit(t));
        Files.delete(t.socket()); // as a /tmp cleaner would: now only a SIGQUIT could start a listener, and it would kill
        try (LogCapture log = new LogCapture(JvmSymbols.class.getName())) {
            JvmSymbols.Outcome o = symbols().attachNow(t.pid());
            assertEquals(JvmSymbols.Outcome.Kind.SKIPPED, o.kind(), o + "\n" + log.text());
            String line = "jvm symbols: pid " + t.pid() + " (java " + Runtime.version().feature();
            assertTrue(o.message().startsWith(line), o.message());
            assertTrue(o.message().endsWith("skipped: it does not catch SIGQUIT (started with -Xrs?) and has no attach listener: "
                    + "not signalled"), o.message());
            assertTrue(log.text().contains(o.message()), log.text());
        }
        assertFalse(t.process().waitFor(500, TimeUnit.MILLISECONDS), "the -Xrs JVM was killed:\n" + t.output());
        assertEquals(List.of(), signalled);
        assertFalse(Files.exists(t.perfMap()));
    }

    @Test
    void aJvmWithAttachDisabledIsSkippedAndKeepsRunning() throws Exception {
        Target t = start(jdk17(), "-XX:+DisableAttachMechanism");
        try (LogCapture log = new LogCapture(JvmSymbols.class.getName())) {
            JvmSymbols.Outcome o = symbols().attachNow(t.pid());
            assertEquals(JvmSymbols.Outcome.Kind.SKIPPED, o.kind(), o + "\n" + log.text());
            assertTrue(o.message().matches("jvm symbols: pid " + t.pid() + " \\(java 17[.0-9]*\\): skipped: started with "
                    + "-XX:\\+DisableAttachMechanism"), o.message());
            assertTrue(log.text().contains(o.message()), log.text());
        }
        assertFalse(t.process().waitFor(300, TimeUnit.MILLISECONDS), "the JVM exited:\n" + t.output());
        assertEquals(List.of(), signalled);
        assertFalse(Files.exists(t.perfMap()));
        assertFalse(Files.exists(t.socket(), LinkOption.NOFOLLOW_LINKS));
        assertFalse(t.output().toString().contains("Full thread dump"));
    }

    @Test
    void theAgentLeavesItselfAlone() throws Exception {
        JvmSymbols.Outcome o = symbols().attachNow((int) ProcessHandle.current().pid());
        assertEquals(JvmSymbols.Outcome.Kind.SKIPPED, o.kind());
        assertTrue(o.message().endsWith("skipped: the agent itself (no attach listener in the agent)"), o.message());
        assertEquals(List.of(), signalled);
    }

    @Test
    void aProcessThatIsNoJvmIsLeftAlone() throws Exception {
        Process sleep = new ProcessBuilder("sleep", "30").start();
        try {
            assertEquals(JvmSymbols.Outcome.Kind.NOT_A_JVM, symbols().attachNow((int) sleep.pid()).kind());
            assertEquals(List.of(), signalled);
            assertTrue(sleep.isAlive());
        } finally {
            sleep.destroyForcibly().waitFor();
        }
    }
}
