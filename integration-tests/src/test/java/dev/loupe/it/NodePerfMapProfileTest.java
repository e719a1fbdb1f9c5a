package dev.loupe.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Node's JIT code named from its perf map (issue 17): {@code node --perf-basic-prof} writes
 * {@code /tmp/perf-PID.map}; a JS chain main → mid → leaf spins; the packaged agent profiles it. Of the
 * samples whose leaf frame is JIT code ({@code [jit] node}), ≥ 95 % name {@code leaf} and have {@code mid}
 * as its caller, and the JS main after it, on through V8's builtins (no FDEs: the walker's checked frame-pointer
 * step) to libc's {@code __libc_start_main}.
 */
class NodePerfMapProfileTest {
    /** V8's perf-map names: {@code JS:*leaf /path/file.js:1:14}, {@code LazyCompile:~leaf ...}: tier mark, then the function. */
    private static final Pattern V8_NAME = Pattern.compile("^(?:[A-Za-z]+:)?[*~^+-]?([^ ]*)(?: .*)?$");

    static final String PROGRAM = """
            'use strict';
            function leaf(n) {
              let s = 0;
              for (let i = 0; i < n; i++) {
                s = (s + i * i) % 1000003;
              }
              return s;
            }
            function mid(n) {
              return leaf(n) + 1;
            }
            function main() {
              let sink = 0;
              for (;;) {
                sink = (sink + mid(5000)) % 65536;
              }
            }
            main();
            """;

    @TempDir
    Path dir;

    @Test
    void jitFramesOfNodeAreNamedFromItsPerfMap() throws Exception {
        Path js = dir.resolve("chain.js");
        Files.writeString(js, PROGRAM);
        // mid is called often enough to be compiled too; --no-turbo-inlining: TurboFan would inline leaf into
        // mid, and the stack would have one frame for both. --interpreted-frames-native-stack gives functions
        // still interpreted a trampoline of their own, named in the map (as Node's docs advise for perf).
        Process node = new ProcessBuilder("node", "--perf-basic-prof", "--interpreted-frames-native-stack",
                "--no-turbo-inlining", js.toString())
                .directory(dir.toFile()) // V8 writes an isolate-*-v8.log there
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        Path perfMap = Path.of("/tmp/perf-" + node.pid() + ".map");
        Path out;
        try {
            // Warm-up: leaf optimized (TurboFan, '*') and mid compiled past the interpreter ('^', '+' or '*'), in the map.
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (!warm(perfMap) && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertTrue(warm(perfMap), "node's " + perfMap + " names an optimized leaf and a compiled mid");
            // the fallback: V8's own frames off (NodeStacksProfileTest has them on)
            out = AgentProcess.profilePid(dir, node, "10s", "--node-frames", "off");
            assertTrue(node.isAlive(), "the agent never harms its target");
        } finally {
            Targets.kill(node);
            Files.deleteIfExists(perfMap);
        }
        List<Profiles.Stack> stacks = Profiles.stacksOfDir(out); // go tool pprof -raw and Parca's rules accept each file
        long total = 0;
        long jitLeaf = 0;
        long named = 0;
        long withMid = 0;
        long withMain = 0;
        // leaf <- mid <- main and on through V8's builtins (no FDEs: the checked frame-pointer step) to libc, of the
        // samples walked with node's tables: until they are loaded (node's table takes a while to build when the
        // agent starts), samples take the frame-pointer walk, are labelled unwind=frame_pointers, and stop at the builtins.
        long tableWalked = 0;
        long toRoot = 0;
        Profiles.Stack example = null;
        for (Profiles.Stack s : stacks) {
            if (s.pid() != node.pid()) {
                continue;
            }
            total += s.count();
            int leafAt = firstUserFrame(s);
            if (leafAt < 0 || !s.files().get(leafAt).equals("[jit] node")) {
                continue;
            }
            jitLeaf += s.count();
            if (!"leaf".equals(jsFunction(s.functions().get(leafAt)))) {
                if (example == null) {
                    example = s;
                }
                continue;
            }
            named += s.count();
            if (leafAt + 1 < s.functions().size() && "mid".equals(jsFunction(s.functions().get(leafAt + 1)))
                    && s.files().get(leafAt + 1).equals("[jit] node")) {
                withMid += s.count();
                if (leafAt + 2 < s.functions().size() && "main".equals(jsFunction(s.functions().get(leafAt + 2)))) {
                    withMain += s.count();
                    if (!"frame_pointers".equals(s.labels().get("unwind"))) {
                        tableWalked += s.count();
                        if (s.functions().contains("__libc_start_main") || s.functions().contains("__libc_start_call_main")) {
                            toRoot += s.count();
                        }
                    }
                }
            }
        }
        double namedShare = jitLeaf == 0 ? 0 : 100.0 * named / jitLeaf;
        double midShare = jitLeaf == 0 ? 0 : 100.0 * withMid / jitLeaf;
        System.out.printf("node --perf-basic-prof: %d samples, %d with a JIT leaf (%.1f %%); of those %.1f %% name leaf, "
                + "%.1f %% leaf <- mid, %.1f %% leaf <- mid <- main; of these %d walked with tables, %.1f %% on to __libc_start_main%n",
                total, jitLeaf, total == 0 ? 0 : 100.0 * jitLeaf / total, namedShare, midShare,
                jitLeaf == 0 ? 0 : 100.0 * withMain / jitLeaf, tableWalked, tableWalked == 0 ? 0 : 100.0 * toRoot / tableWalked);
        stacks.stream().filter(s -> s.pid() == node.pid()).max((a, b) -> Long.compare(a.count(), b.count()))
                .ifPresent(s -> System.out.println("commonest stack (" + s.count() + "): " + s.functions() + " in " + s.files()));
        assertTrue(total > 500, "samples of node: " + total);
        assertTrue(jitLeaf > 0.5 * total, "most samples are in JIT code: " + jitLeaf + " of " + total);
        assertTrue(namedShare >= 95, "leaf named in " + namedShare + " % of JIT-leaf samples; e.g. " + example);
        assertTrue(tableWalked >= 0.8 * withMain, "walked with tables: " + tableWalked + " of " + withMain);
        double rootShare = 100.0 * toRoot / tableWalked;
        assertTrue(rootShare >= 95, "leaf <- mid <- main reaching __libc_start_main in " + rootShare + " % of those walked with tables");
        assertTrue(midShare >= 95, "mid follows leaf in " + midShare + " % of JIT-leaf samples; the commonest stacks:\n"
                + String.join("\n", stacks.stream().filter(s -> s.pid() == node.pid())
                        .sorted((a, b) -> Long.compare(b.count(), a.count())).limit(5)
                        .map(s -> s.count() + " " + s.functions().subList(0, Math.min(6, s.functions().size())) + " in "
                                + s.files().subList(0, Math.min(6, s.files().size()))).toList()));
    }

    /** Whether node's perf map names TurboFan's code of leaf and a compiled (not interpreted) mid. */
    private static boolean warm(Path map) throws java.io.IOException {
        if (!Files.exists(map)) {
            return false;
        }
        String text = Files.readString(map);
        return text.contains(":*leaf ") && Pattern.compile(":[*^+]mid ").matcher(text).find();
    }

    /** Index of the first frame outside the kernel (stacks are leaf first, kernel frames before user ones), or -1. */
    private static int firstUserFrame(Profiles.Stack s) {
        for (int i = 0; i < s.files().size(); i++) {
            if (!s.files().get(i).equals("[kernel.kallsyms]")) {
                return i;
            }
        }
        return -1;
    }

    /** The function a V8 perf-map name is of ({@code JS:*leaf /x.js:2:14} → {@code leaf}), or the name as it is. */
    static String jsFunction(String name) {
        Matcher m = V8_NAME.matcher(name);
        return m.matches() ? m.group(1) : name;
    }
}
