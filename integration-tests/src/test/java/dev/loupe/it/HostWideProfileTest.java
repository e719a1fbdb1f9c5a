package dev.loupe.it;

import dev.loupe.pprof.ParcaRules;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Whole-host profiling: a process that starts after the agent and exits mid-interval is in the profile,
 * and go tool pprof's -tagfocus selects it by pid and comm labels.
 */
class HostWideProfileTest {
    @TempDir
    Path dir;

    @Test
    void processExitingMidIntervalIsProfiledAndTagfocusSelectsIt() throws Exception {
        Path bin = Targets.build("callchain.c", dir, "shortlived", "-fno-omit-frame-pointer");
        Path out = dir.resolve("profiles");
        long targetPid;
        try (AgentProcess agent = AgentProcess.start(dir, "--frequency", "99", "--interval", "60s",
                "--duration", "7s", "--output", out.toString(), "--http", "off")) {
            agent.awaitSampling(Duration.ofSeconds(30));
            Process target = Targets.start(bin, "2"); // runs 2 s, then exits long before the interval ends
            targetPid = target.pid();
            assertTrue(target.waitFor(20, TimeUnit.SECONDS));
            assertEquals(0, target.exitValue());
            assertEquals(0, agent.awaitExit(Duration.ofSeconds(60)), agent.log());
        }
        List<Path> files = Profiles.files(out);
        assertEquals(1, files.size(), "one (partial) interval: " + files);
        List<Profiles.Stack> stacks = Profiles.stacksOfDir(out);
        assertTrue(stacks.stream().map(Profiles.Stack::pid).distinct().count() >= 2, "host-wide: several processes");
        long mine = stacks.stream().filter(s -> s.pid() == targetPid && s.startsWith("hot_a", "middle", "outer", "main"))
                .mapToLong(Profiles.Stack::count).sum();
        assertTrue(mine > 60, "exited process's hot_a samples: " + mine);
        // The JDK starts a process through jspawnhelper, which then execs the target under the same pid: a
        // sample can land in those first milliseconds, correctly named jspawnhelper. Any other name is wrong.
        assertTrue(stacks.stream().filter(s -> s.pid() == targetPid)
                        .allMatch(s -> Set.of("shortlived", "jspawnhelper").contains(s.labels().get("comm"))),
                () -> "comm of pid " + targetPid + ": " + stacks.stream().filter(s -> s.pid() == targetPid)
                        .map(s -> s.labels().get("comm")).distinct().toList());
        assertTrue(stacks.stream().filter(s -> s.pid() == targetPid && s.startsWith("hot_a"))
                .allMatch(s -> "shortlived".equals(s.labels().get("comm"))), "the target's own code is named shortlived");
        assertEquals(List.of(), ParcaRules.violations(Profiles.checked(files.get(0))));

        String file = files.get(0).toString();
        String byPid = PprofTool.run("-top", "-tagfocus=pid=" + targetPid, file);
        assertTrue(byPid.contains("hot_a") && byPid.contains("hot_b"), byPid);
        String byComm = PprofTool.run("-top", "-tagfocus=comm=shortlived", file);
        assertTrue(byComm.contains("hot_a"), byComm);
        String otherPid = PprofTool.run("-top", "-tagfocus=pid=" + (targetPid + 100000), file);
        assertFalse(otherPid.contains("hot_a"), otherPid);
        String byTid = PprofTool.run("-top", "-tagfocus=tid=" + targetPid, file); // single-threaded: tid == pid
        assertTrue(byTid.contains("hot_a"), byTid);
    }
}
