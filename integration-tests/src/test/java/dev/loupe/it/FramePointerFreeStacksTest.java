package dev.loupe.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.function.BiPredicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Complete stacks without frame pointers (eh_frame tables walked in the kernel): C targets built with
 * -O2 -fomit-frame-pointer with known call chains, a C++ target with exceptions, and Debian's own python3
 * and gzip. One agent run profiles them all; every check reads the profile through the real
 * {@code go tool pprof -traces}. Samples taken before a process's tables were live are labelled
 * {@code unwind=frame_pointers}; the exactness bounds are over the others, and the fallback lasts at most
 * one CPU-second of the target.
 */
class FramePointerFreeStacksTest {
    @TempDir
    static Path dir;
    static final List<Process> targets = new ArrayList<>();
    static Path profile;
    static long deeprec;
    static long plt;
    static long signal;
    static long cxx;
    static long python;
    static long gzip;

    @BeforeAll
    static void profileAllTargets() throws Exception {
        String[] noFp = {"-fomit-frame-pointer"};
        Path deep = Targets.build("deeprec.c", dir, "deeprec", noFp);
        Path lib = dir.resolve("libloupeplt.so");
        Commands.run(List.of("gcc", "-O2", "-fomit-frame-pointer", "-fPIC", "-shared",
                Targets.SOURCES.resolve("plt_lib.c").toString(), "-o", lib.toString()), 60).check();
        Path pltMain = dir.resolve("plt_main"); // the library after the source, for the linker
        Commands.run(List.of("gcc", "-O2", "-fomit-frame-pointer", Targets.SOURCES.resolve("plt_main.c").toString(),
                "-L" + dir, "-lloupeplt", "-Wl,-rpath," + dir, "-o", pltMain.toString()), 60).check();
        Path sig = Targets.build("sighandler.c", dir, "sighandler", "-fomit-frame-pointer", "-pthread");
        Path cpp = dir.resolve("cxx_exceptions");
        Commands.run(List.of("g++", "-O2", "-fomit-frame-pointer", Targets.SOURCES.resolve("cxx_exceptions.cpp").toString(),
                "-o", cpp.toString()), 120).check();
        Path big = dir.resolve("words.txt");
        writeText(big, 160L << 20);

        deeprec = start(deep.toString());
        plt = start(pltMain.toString());
        signal = start(sig.toString());
        cxx = start(cpp.toString());
        python = start("python3", "-c", "def f(n):\n s=0\n for i in range(n): s+=i*i\n return s\nwhile True: f(100000)");
        gzip = start("gzip", "-9", "-c", big.toString());
        Path out = dir.resolve("profiles");
        String pids = deeprec + "," + plt + "," + signal + "," + cxx + "," + python + "," + gzip;
        try (AgentProcess agent = AgentProcess.start(dir, "--pid", pids, "--frequency", "99", "--duration", "12s", "--interval", "60s",
                "--output", out.toString(), "--http", "off")) {
            assertEquals(0, agent.awaitExit(Duration.ofSeconds(120)), agent.log());
        }
        profile = Profiles.onlyProfile(out, targets);
    }

    @AfterAll
    static void stopTargets() throws InterruptedException {
        for (Process t : targets) {
            Targets.kill(t);
        }
    }

    @Test
    void deepRecursionWithoutFramePointersIsCompleteToMain() throws Exception {
        List<String> chain = new ArrayList<>(List.of("leaf"));
        chain.addAll(Collections.nCopies(60, "recurse"));
        chain.addAll(List.of("spin_forever", "main"));
        assertExactChains(deeprec, "leaf", chain);
    }

    @Test
    void callThroughThePltIntoASharedLibrary() throws Exception {
        assertExactChains(plt, "lib_inner", List.of("lib_inner", "lib_entry", "call_lib", "main"));
    }

    @Test
    void stacksContinueThroughTheSignalFrame() throws Exception {
        // handler_work, on_alarm, the kernel's signal trampoline (__restore_rt: a local symbol of libc),
        // then the interrupted pause() and the thread's own frames up to its entry function.
        assertExactChains(signal, "handler_work", (t, at) -> t.chainAt(at, List.of("handler_work", "on_alarm"))
                && t.frames().size() > at + 5 && t.chainAt(at + 3, List.of("pause", "worker_loop", "worker_thread")));
    }

    @Test
    void cplusplusWithExceptions() throws Exception {
        assertExactChains(cxx, "hot_cpp", List.of("hot_cpp", "level2", "level1", "driver", "main"));
    }

    @Test
    void debianPython3ReachesLibcStartMain() throws Exception {
        assertReachStartMain(python);
    }

    @Test
    void debianGzipReachesLibcStartMain() throws Exception {
        assertReachStartMain(gzip);
    }

    /** ≥ 99 % of the table-unwound samples in the hot leaf carry the exact chain; fallback samples are few. */
    private static void assertExactChains(long pid, String leafName, List<String> chain) throws Exception {
        assertExactChains(pid, leafName, (t, at) -> t.chainAt(at, chain));
    }

    /** As above, {@code exactAt} saying whether a trace with the leaf at index {@code at} has the right callers. */
    private static void assertExactChains(long pid, String leafName, BiPredicate<PprofTraces.Trace, Integer> exactAt) throws Exception {
        List<PprofTraces.Trace> traces = tracesOf(pid);
        long leaf = 0;
        long exact = 0;
        long fallback = 0;
        for (PprofTraces.Trace t : traces) {
            int at = t.indexOf(leafName);
            if (at < 0) {
                continue;
            }
            if (t.fallback()) {
                fallback += t.count();
                continue;
            }
            leaf += t.count();
            if (exactAt.test(t, at)) {
                exact += t.count();
            }
        }
        System.out.printf("FP-free %s: %d of %d table-unwound samples exact (%.2f %%), %d fallback%n", leafName, exact, leaf,
                100.0 * exact / Math.max(1, leaf), fallback);
        assertTrue(leaf > 50, leafName + " samples: " + leaf + "\n" + traces);
        assertTrue(exact >= 0.99 * leaf, "exact chains " + exact + " of " + leaf + " in " + leafName + "; e.g. "
                + traces.stream().filter(t -> t.indexOf(leafName) >= 0 && !t.fallback() && !exactAt.test(t, t.indexOf(leafName)))
                .findFirst());
        // Tables go live within the first CPU-second the target is sampled (99 samples at 99 Hz): a process
        // never registered would have all its samples here.
        assertTrue(fallback <= 99, "frame-pointer fallback samples " + fallback + " of " + (leaf + fallback));
    }

    private static void assertReachStartMain(long pid) throws Exception {
        List<PprofTraces.Trace> traces = tracesOf(pid);
        long all = 0;
        long reach = 0;
        for (PprofTraces.Trace t : traces) {
            if (t.fallback()) {
                continue;
            }
            all += t.count();
            if (t.frames().contains("__libc_start_main")) {
                reach += t.count();
            }
        }
        System.out.printf("FP-free pid %d: %d of %d samples reach __libc_start_main (%.2f %%)%n", pid, reach, all,
                100.0 * reach / Math.max(1, all));
        assertTrue(all > 50, "samples: " + all);
        assertTrue(reach >= 0.95 * all, "reach __libc_start_main: " + reach + " of " + all + "; e.g. "
                + traces.stream().filter(t -> !t.frames().contains("__libc_start_main") && !t.fallback()).limit(3).toList());
    }

    private static List<PprofTraces.Trace> tracesOf(long pid) throws Exception {
        List<PprofTraces.Trace> t = PprofTraces.of("-tagfocus=pid=" + pid, profile.toString());
        assertFalse(t.isEmpty(), "no samples of pid " + pid);
        return t;
    }

    private static long start(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        targets.add(p);
        return p.pid();
    }

    /** Compressible text (words in random order) for gzip -9 to chew on for the whole run. */
    private static void writeText(Path file, long bytes) throws Exception {
        String[] words = {"profiler", "stack", "frame", "unwind", "kernel", "table", "sample", "pointer", "return",
                "address", "mapping", "symbol", "library", "process", "thread", "signal"};
        Random r = new Random(1);
        try (BufferedWriter w = Files.newBufferedWriter(file)) {
            long n = 0;
            StringBuilder line = new StringBuilder(128);
            while (n < bytes) {
                line.setLength(0);
                for (int i = 0; i < 12; i++) {
                    line.append(words[r.nextInt(words.length)]).append(r.nextInt(1000)).append(' ');
                }
                line.append('\n');
                w.write(line.toString());
                n += line.length();
            }
        }
    }
}
