package dev.loupe.it;

import dev.loupe.pprof.ParcaRules;
import dev.loupe.pprof.proto.Profile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The spine end to end: a C program with known call chains (main → outer → middle → hot_a / hot_b,
 * 70/30 CPU), built with frame pointers as PIE and as non-PIE, profiled by the packaged agent.
 */
class CallChainProfileTest {
    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"pie", "no-pie"})
    void callChainNamesInOrderAndSplitWithinFivePoints(String kind) throws Exception {
        String[] flags = kind.equals("pie")
                ? new String[] {"-fno-omit-frame-pointer", "-fPIE", "-pie"}
                : new String[] {"-fno-omit-frame-pointer", "-fno-pie", "-no-pie"};
        Path bin = Targets.build("callchain.c", dir, "callchain-" + kind, flags);
        AgentProcess.Profiled target = AgentProcess.profileTarget(dir, bin, "8s");
        Path out = target.out();
        List<Path> files = Profiles.files(out);
        assertFalse(files.isEmpty(), "no profile written");
        List<Profiles.Stack> stacks = Profiles.stacksOfDir(out);
        long total = Profiles.total(stacks);
        // 8 s of one busy thread at 99 Hz ≈ 790 samples; the agent's start-up eats a little of it.
        assertTrue(total > 400, "samples: " + total);
        assertTrue(stacks.stream().allMatch(s -> s.pid() == target.pid()), "only the target pid (--pid)");

        long a = stacks.stream().filter(s -> s.startsWith("hot_a", "middle", "outer", "main")).mapToLong(Profiles.Stack::count).sum();
        long b = stacks.stream().filter(s -> s.startsWith("hot_b", "middle", "outer", "main")).mapToLong(Profiles.Stack::count).sum();
        assertTrue(a + b >= 0.9 * total, "complete chains: a=" + a + " b=" + b + " of " + total + "; e.g. " + stacks.get(0));
        double share = (double) a / (a + b);
        assertTrue(Math.abs(share - 0.70) <= 0.05, "hot_a share " + share + " (a=" + a + ", b=" + b + ")");

        // Below main the chain goes on into libc's start-up code; the binary's own frames name its file.
        Profiles.Stack one = stacks.stream().filter(s -> s.startsWith("hot_a")).findFirst().orElseThrow();
        assertTrue(one.files().get(0).endsWith("callchain-" + kind), one.files().toString());

        for (Path f : files) {
            Profile p = Profiles.read(f);
            assertEquals(List.of(), ParcaRules.violations(p), "Parca's rules, " + f);
            String top = PprofTool.run("-top", f.toString());
            if (p.getSampleCount() > 0) {
                assertTrue(top.contains("hot_a"), top);
            }
        }
        String raw = PprofTool.run("-raw", files.get(0).toString());
        assertTrue(raw.contains("samples/count cpu/nanoseconds"), raw.substring(0, Math.min(400, raw.length())));
    }

    @Test
    void binaryDeletedAfterStartStillResolves() throws Exception {
        Path bin = Targets.build("callchain.c", dir, "callchain-deleted", "-fno-omit-frame-pointer");
        Process target = Targets.start(bin);
        Path out;
        try {
            // Delete the file once the process runs it (its /proc exe link names it), not before.
            Path exe = Path.of("/proc", Long.toString(target.pid()), "exe");
            long end = System.nanoTime() + 10_000_000_000L;
            while (!Files.isSameFile(exe, bin)) {
                assertTrue(System.nanoTime() < end && target.isAlive(), "the target never ran " + bin);
                Thread.sleep(10);
            }
            Files.delete(bin);
            out = AgentProcess.profilePid(dir, target, "5s");
        } finally {
            Targets.kill(target);
        }
        List<Profiles.Stack> stacks = Profiles.stacksOfDir(out);
        long a = stacks.stream().filter(s -> s.startsWith("hot_a", "middle", "outer", "main")).mapToLong(Profiles.Stack::count).sum();
        assertTrue(a > 100, "hot_a chains from a deleted binary: " + a + " of " + Profiles.total(stacks));
    }
}
