package dev.loupe.it;

import dev.loupe.agent.latencydiff.SyntheticLatencyProfiles;
import dev.loupe.agent.latencydiff.SyntheticLatencyProfiles.Calls;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The agent's command line as users meet it: --help, bad flags, bad config files; loupe latency-diff's exit codes. */
class CommandLineTest {
    @TempDir
    Path dir;

    private static Commands.Result agent(String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of(AgentProcess.JAVA, "--enable-native-access=ALL-UNNAMED",
                "-jar", AgentProcess.JAR.toString(), "run"));
        cmd.addAll(List.of(args));
        return Commands.run(cmd, 60);
    }

    @Test
    void helpListsEveryFlag() throws Exception {
        Commands.Result r = agent("--help");
        assertEquals(0, r.exit(), r.output());
        for (String flag : List.of("--frequency", "--duration", "--output", "--pid", "--interval", "--http", "--config")) {
            assertTrue(r.output().contains(flag), flag + " in\n" + r.output());
        }
    }

    @Test
    void badConfigFileNamesFileLineAndProblem() throws Exception {
        Path cfg = dir.resolve("bad.yaml");
        Files.writeString(cfg, "# comment\ninterval: 10s\nfrequency: fast\n");
        Commands.Result r = agent("--config", cfg.toString());
        assertEquals(2, r.exit(), r.output());
        assertTrue(r.output().contains(cfg + ":3:") && r.output().contains("frequency"), r.output());
    }

    /** Config reads a relabel rule's shape; what it means is checked before the agent starts: same exit, file named. */
    @Test
    void badRelabelRuleNamesFileRuleAndFieldAndExits2() throws Exception {
        Path cfg = dir.resolve("relabel.yaml");
        Files.writeString(cfg, "relabel:\n  - {action: keep, source_labels: [comm], regex: sshd}\n"
                + "  - {action: labeldrop, regex: 'a(b'}\n");
        Commands.Result r = agent("--config", cfg.toString());
        assertEquals(2, r.exit(), r.output());
        assertEquals(List.of("loupe: " + cfg + ": relabel rule 1, regex: invalid regular expression \"a(b\": Unclosed group"),
                r.output().lines().filter(l -> l.startsWith("loupe:")).toList(), r.output());
    }

    @Test
    void badFlagIsRejected() throws Exception {
        Commands.Result r = agent("--frequency", "0");
        assertEquals(2, r.exit(), r.output());
        assertTrue(r.output().contains("--frequency"), r.output());
    }

    /** Without CAP_BPF/CAP_PERFMON (an unprivileged user), the agent says why in one line and exits 3. */
    @Test
    void withoutCapabilitiesTheAgentSaysWhyInOneLineAndExits3() throws Exception {
        // A world-readable copy of the jar and its lib/, so user nobody can run it wherever the checkout is.
        Path jar = AgentProcess.copyJarTo(dir);
        Commands.run(List.of("chmod", "-R", "a+rX", dir.toString()), 30);
        Commands.Result r = Commands.run(List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                "--inh-caps=-all", AgentProcess.JAVA, "--enable-native-access=ALL-UNNAMED", "-jar", jar.toString(), "run",
                "--output", dir.resolve("out").toString(), "--http", "off"), 60);
        assertEquals(3, r.exit(), r.output());
        List<String> lines = r.output().lines().filter(l -> l.startsWith("loupe:")).toList();
        assertEquals(1, lines.size(), r.output());
        assertTrue(lines.get(0).startsWith("loupe: BPF unavailable: no CAP_BPF/CAP_PERFMON"), lines.get(0));
    }

    /** {@code loupe latency-diff} as the launchers start it: the jar's Main dispatches it, and the JVM warns of nothing. */
    private static Commands.Result latencyDiff(String... args) throws Exception {
        Path jvmopts = AgentProcess.RUN_JVMOPTS.resolveSibling("latency-diff.jvmopts");
        List<String> cmd = new java.util.ArrayList<>(List.of(AgentProcess.JAVA, "@" + jvmopts, "-jar",
                AgentProcess.JAR.toString(), "latency-diff"));
        cmd.addAll(List.of(args));
        return Commands.run(cmd, 60);
    }

    @Test
    void latencyDiffExits1OnARegression0WithoutAnd2OnACpuProfile() throws Exception {
        long[] base = SyntheticLatencyProfiles.logNormal(1, 1000, 2_000_000, 0.3);
        long[] same = SyntheticLatencyProfiles.logNormal(2, 1000, 2_000_000, 0.3);
        Path before = Files.write(dir.resolve("before.pb.gz"),
                SyntheticLatencyProfiles.latencyProfile(List.of(new Calls("/srv/app", "main.serve", base))));
        Path slower = Files.write(dir.resolve("slower.pb.gz"), SyntheticLatencyProfiles.latencyProfile(
                List.of(new Calls("/srv/app", "main.serve", SyntheticLatencyProfiles.scaled(same, 1.3)))));
        Path unchanged = Files.write(dir.resolve("unchanged.pb.gz"),
                SyntheticLatencyProfiles.latencyProfile(List.of(new Calls("/srv/app", "main.serve", same))));
        Path cpu = Files.write(dir.resolve("cpu.pb.gz"), SyntheticLatencyProfiles.cpuProfile());

        Commands.Result regressed = latencyDiff(before.toString(), slower.toString());
        Commands.Result steady = latencyDiff(before.toString(), unchanged.toString());
        Commands.Result bad = latencyDiff(before.toString(), cpu.toString());

        assertEquals(1, regressed.exit(), regressed.output());
        List<String> lines = regressed.output().lines().toList();
        assertEquals(3, lines.size(), regressed.output()); // header, the row, the summary: no JVM warnings
        assertTrue(lines.get(0).startsWith("VERDICT "), regressed.output());
        assertTrue(lines.get(1).startsWith("regressed  main.serve  /srv/app  "), regressed.output());
        assertEquals(0, steady.exit(), steady.output());
        assertTrue(steady.output().lines().toList().get(1).startsWith("not regressed  main.serve  "), steady.output());
        assertEquals(2, bad.exit(), bad.output());
        assertEquals("loupe latency-diff: " + cpu + ": not a latency profile: its sample types are samples/count, "
                + "cpu/nanoseconds, not calls/count and latency/nanoseconds\n", bad.output());
    }
}
