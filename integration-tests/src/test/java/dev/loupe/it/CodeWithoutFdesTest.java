package dev.loupe.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Code without FDEs in a binary that has them (V8's builtins, hand-written assembly): the table walk takes
 * one frame-pointer step there if the frame passes its checks, else stops with "no unwind info". Ground truth
 * is nofde_main.c with nofde_a.c and nofde_asm.S, whose assembly functions carry no CFI: one that keeps a frame
 * pointer (the walk must go through it to main), one that keeps none (bp is still its caller's frame), and one
 * that points rbp at a fake frame outside the stack (neither may yield a caller that is not the real one).
 * One agent run profiles the three and node 20 running a JavaScript loop, whose walks stopped at its first V8
 * builtin before this step. Read through the real
 * {@code go tool pprof -traces}; samples taken before a process's tables were live are left out, as in
 * {@link FramePointerFreeStacksTest}.
 */
class CodeWithoutFdesTest {
    static final String MARKER = "[unwind: ";
    @TempDir
    static Path dir;
    static final List<Process> targets = new ArrayList<>();
    static Path profile;
    static String metrics;
    static long fp;
    static long nofp;
    static long garbage;
    static long node;

    @BeforeAll
    static void profileAllTargets() throws Exception {
        Path bin = dir.resolve("nofde_target");
        Path main = dir.resolve("nofde_main.o");
        Path a = dir.resolve("nofde_a.o");
        Path asm = dir.resolve("nofde_asm.o");
        gcc("-O2", "-fno-omit-frame-pointer", "-c", Targets.SOURCES.resolve("nofde_main.c").toString(), "-o", main.toString());
        gcc("-O2", "-fomit-frame-pointer", "-c", Targets.SOURCES.resolve("nofde_a.c").toString(), "-o", a.toString());
        gcc("-c", Targets.SOURCES.resolve("nofde_asm.S").toString(), "-o", asm.toString());
        gcc(main.toString(), a.toString(), asm.toString(), "-o", bin.toString());
        String frames = Commands.run(List.of("readelf", "--debug-dump=frames", bin.toString()), 30).output();
        String symbols = Commands.run(List.of("nm", bin.toString()), 30).output();
        for (String f : List.of("asm_fp_trampoline", "asm_nofp_trampoline", "asm_garbage_trampoline")) {
            long at = address(symbols, f);
            assertFalse(covered(frames, at), f + " at " + Long.toHexString(at) + " has no FDE:\n" + frames);
        }
        assertTrue(covered(frames, address(symbols, "a")) && covered(frames, address(symbols, "c_spin")), frames);

        fp = start(bin.toString(), "fp");
        nofp = start(bin.toString(), "nofp");
        garbage = start(bin.toString(), "garbage");
        node = start("node", "-e", "function leaf(n) { let s = 0; for (let i = 0; i < n; i++) s += i * i; return s; }\n"
                + "function mid() { return leaf(1e6); }\nlet x = 0; for (;;) x += mid();");
        Path out = dir.resolve("profiles");
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String pids = fp + "," + nofp + "," + garbage + "," + node;
        try (AgentProcess agent = AgentProcess.start(dir, "--pid", pids, "--frequency", "99", "--interval", "120s",
                "--output", out.toString(), "--http", "127.0.0.1:" + port)) {
            agent.awaitSampling(Duration.ofSeconds(60));
            // Enough samples of the four targets (~20 s of them at 99 Hz on 2 CPUs), and no-FDE steps among them.
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            do {
                Thread.sleep(250);
                HttpResponse<String> m = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + port + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
                assertEquals(200, m.statusCode(), m.body());
                metrics = m.body();
            } while ((value(metrics, "loupe_samples_processed_total") < 3000
                    || value(metrics, "loupe_unwind_fp_no_fde_frames_total") < 300) && System.nanoTime() < deadline);
            agent.terminate(); // SIGTERM flushes the interval
            int exit = agent.awaitExit(Duration.ofSeconds(60));
            assertTrue(exit == 0 || exit == 143, "exit " + exit + "\n" + agent.log());
        }
        profile = Profiles.onlyProfile(out, targets);
    }

    /** The value of an unlabelled series in a /metrics text, 0 while it is absent. */
    private static double value(String text, String name) {
        Matcher m = Pattern.compile("(?m)^" + name + " (\\S+)$").matcher(text);
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }

    @AfterAll
    static void stopTargets() throws InterruptedException {
        for (Process t : targets) {
            Targets.kill(t);
        }
    }

    @Test
    void assemblyThatKeepsAFramePointerIsWalkedThroughToMain() throws Exception {
        Counts c = count(fp, List.of("c_spin", "asm_fp_trampoline", "a", "main"), List.of());
        System.out.printf("no-FDE fp: %d of %d table-unwound samples in c_spin exact to __libc_start_main (%.2f %%), %d fallback%n",
                c.exact, c.leaf, 100.0 * c.exact / Math.max(1, c.leaf), c.fallback);
        assertTrue(c.leaf > 50, "c_spin samples: " + c.leaf + "\n" + c.traces);
        assertTrue(c.exact >= 0.95 * c.leaf, "exact chains " + c.exact + " of " + c.leaf + "; e.g. " + c.otherExample);
        // ... and the kernel counted those steps on /metrics
        Matcher m = Pattern.compile("(?m)^loupe_unwind_fp_no_fde_frames_total (\\S+)$").matcher(metrics);
        assertTrue(m.find(), metrics);
        assertTrue(Double.parseDouble(m.group(1)) >= 0.9 * c.exact, "no-FDE steps " + m.group(1) + " for " + c.exact + " samples");
    }

    /** bp is the caller's (a_fp's) frame: a frame-pointer step would go from the assembly straight to main. */
    @Test
    void assemblyWithoutAFramePointerStopsOrIsRight() throws Exception {
        assertStopsOrTrue(nofp, "asm_nofp_trampoline");
    }

    /** rbp points at a plausible frame outside the stack. */
    @Test
    void assemblyWithRbpAsScratchStopsOrIsRight() throws Exception {
        assertStopsOrTrue(garbage, "asm_garbage_trampoline");
    }

    /**
     * Node's main thread: through the interpreter's builtins (no FDEs, frame pointers kept) to libc. Node's own
     * main tail-calls node::Start, so it is never on the stack; the share reaching it is printed for the record.
     */
    @Test
    void nodeMainThreadReachesLibcStartMainThroughV8Builtins() throws Exception {
        long all = 0;
        long reach = 0;
        long reachMain = 0;
        long stopped = 0;
        Map<String, Long> stops = new TreeMap<>();
        for (PprofTraces.Trace t : PprofTraces.of("-tagfocus=pid=" + node, profile.toString())) {
            if (t.fallback() || !Long.toString(node).equals(t.labels().get("tid"))) {
                continue;
            }
            all += t.count();
            if (t.frames().contains("__libc_start_main")) {
                reach += t.count();
            }
            if (t.frames().contains("main")) {
                reachMain += t.count();
            }
            String last = t.frames().getLast();
            if (last.startsWith(MARKER)) {
                stopped += t.count();
                String above = t.frames().size() > 1 ? t.frames().get(t.frames().size() - 2) : "?";
                stops.merge(last + " after " + above, t.count(), Long::sum);
            }
        }
        System.out.printf("no-FDE node: %d of %d main-thread samples reach __libc_start_main (%.2f %%), %d main, %d end in a stop "
                + "marker; top stops: %s%n", reach, all, 100.0 * reach / Math.max(1, all), reachMain, stopped, stops.entrySet().stream()
                        .sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(5).toList());
        assertTrue(all > 50, "node samples: " + all);
        assertTrue(reach >= 0.9 * all, "reach __libc_start_main: " + reach + " of " + all + "; stops: " + stops);
    }

    /**
     * Every table-unwound sample in c_spin is c_spin ← {@code asm} and then either the stop marker (and nothing
     * after it) or the true chain a_fp ← main: never a caller that did not call the frame below it.
     */
    private static void assertStopsOrTrue(long pid, String asm) throws Exception {
        Counts c = count(pid, List.of("c_spin", asm, "a_fp", "main"), List.of("c_spin", asm));
        System.out.printf("no-FDE %s: %d of %d table-unwound samples in c_spin stop at the assembly, %d have the true chain, %d other, "
                + "%d fallback%n", asm, c.stopped, c.leaf, c.exact, c.leaf - c.stopped - c.exact, c.fallback);
        assertTrue(c.leaf > 50, "c_spin samples: " + c.leaf + "\n" + c.traces);
        assertEquals(c.leaf, c.stopped + c.exact, "neither stopped nor the true chain, e.g. " + c.otherExample);
        assertTrue(c.stopped >= 0.95 * c.leaf, "stopped " + c.stopped + " of " + c.leaf);
    }

    /** What the table-unwound samples with c_spin as their leaf look like. */
    record Counts(long leaf, long exact, long stopped, long fallback, String otherExample, List<PprofTraces.Trace> traces) {}

    /**
     * exact: {@code chain} from the leaf, then __libc_start_main later and no marker; stopped: {@code stopsAfter}
     * from the leaf and then only the "no unwind info" marker.
     */
    private static Counts count(long pid, List<String> chain, List<String> stopsAfter) throws Exception {
        List<PprofTraces.Trace> traces = PprofTraces.of("-tagfocus=pid=" + pid, profile.toString());
        assertFalse(traces.isEmpty(), "no samples of pid " + pid);
        long leaf = 0;
        long exact = 0;
        long stopped = 0;
        long fallback = 0;
        String other = "none";
        for (PprofTraces.Trace t : traces) {
            if (!t.frames().getFirst().equals("c_spin")) {
                continue; // the few samples not yet in the spin loop
            }
            if (t.fallback()) {
                fallback += t.count();
                continue;
            }
            leaf += t.count();
            List<String> f = t.frames();
            if (t.chainAt(0, chain) && f.contains("__libc_start_main") && f.stream().noneMatch(s -> s.startsWith(MARKER))) {
                exact += t.count();
            } else if (!stopsAfter.isEmpty() && f.size() == stopsAfter.size() + 1 && t.chainAt(0, stopsAfter)
                    && f.getLast().startsWith("[unwind: no unwind info in nofde_target]")) {
                stopped += t.count();
            } else if (other.equals("none")) {
                other = t.toString();
            }
        }
        return new Counts(leaf, exact, stopped, fallback, other, traces);
    }

    private static void gcc(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("gcc"));
        cmd.addAll(List.of(args));
        Commands.Result r = Commands.run(cmd, 60);
        assertEquals(0, r.exit(), cmd + "\n" + r.output());
    }

    private static long address(String nm, String symbol) {
        Matcher m = Pattern.compile("(?m)^([0-9a-f]+) [tT] " + Pattern.quote(symbol) + "$").matcher(nm);
        assertTrue(m.find(), symbol + " in\n" + nm);
        return Long.parseUnsignedLong(m.group(1), 16);
    }

    /** Whether an FDE in readelf's listing covers {@code pc}. */
    private static boolean covered(String frames, long pc) {
        Matcher m = Pattern.compile("FDE cie=\\S+ pc=([0-9a-f]+)\\.\\.([0-9a-f]+)").matcher(frames);
        while (m.find()) {
            if (pc >= Long.parseUnsignedLong(m.group(1), 16) && pc < Long.parseUnsignedLong(m.group(2), 16)) {
                return true;
            }
        }
        return false;
    }

    private static long start(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        targets.add(p);
        return p.pid();
    }
}
