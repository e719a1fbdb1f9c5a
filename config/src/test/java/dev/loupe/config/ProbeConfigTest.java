package dev.loupe.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProbeConfigTest {
    @Test
    void defaultsHaveNoProbesAndACapOf1000() {
        assertEquals(List.of(), LoupeConfig.defaults().probes());
        assertEquals(1000, LoupeConfig.defaults().probesMaxFunctions());
    }

    @Test
    void flagSplitsAtTheFirstColonAndMergesPerTarget() throws Exception {
        LoupeConfig c = CommandLine.parse(new String[] {"--probe", "/usr/bin/app:main.*", "--probe=pid=42:main.work",
                "--probe", "/usr/bin/app:ns::Type::f", "--probe", "/usr/bin/app:main.*", "--probes-max-functions", "50"}).config();
        assertEquals(List.of(
                new ProbeConfig(Optional.of(Path.of("/usr/bin/app")), OptionalInt.empty(), List.of("main.*", "ns::Type::f"), false),
                new ProbeConfig(Optional.empty(), OptionalInt.of(42), List.of("main.work"), false)), c.probes());
        assertEquals(50, c.probesMaxFunctions());
        assertEquals("pid=42", c.probes().get(1).target());
    }

    @Test
    void probeStacksFlagTurnsCallerStacksOnForEveryProbe() throws Exception {
        LoupeConfig c = CommandLine.parse(new String[] {"--probe", "/usr/bin/app:main.*", "--probe-stacks", "true",
                "--probe=pid=42:main.work"}).config();
        assertTrue(c.probes().stream().allMatch(ProbeConfig::stacks), c.probes().toString());
        assertTrue(CommandLine.parse(new String[] {"--probe", "/usr/bin/app:main.*"}).config().probes().stream()
                .noneMatch(ProbeConfig::stacks), "off by default");
    }

    @Test
    void badFlagsSayWhatIsExpected() {
        assertEquals("--probe: expected BINARY:FUNCTION or pid=PID:FUNCTION, got \"/usr/bin/app\"",
                flag("--probe", "/usr/bin/app").getMessage());
        assertTrue(flag("--probe", "/usr/bin/app:").getMessage().contains("expected BINARY:FUNCTION"));
        assertTrue(flag("--probe", ":main.work").getMessage().contains("expected BINARY:FUNCTION"));
        assertEquals("--probe: must be a positive process id, got \"x\"", flag("--probe", "pid=x:main.work").getMessage());
        assertEquals("--probes-max-functions: must be between 1 and 65536, got 0", flag("--probes-max-functions", "0").getMessage());
    }

    @Test
    void yamlListOfBinariesAndPids() throws Exception {
        LoupeConfig c = ConfigLoader.parse("""
                probes:
                  - binary: /usr/bin/prometheus
                    functions: ["net/http.(*conn).serve", "github.com/prometheus/prometheus/tsdb.*"]
                  - {pid: 7, functions: [main.work], stacks: true}
                probes-max-functions: 20
                """, "p.yaml");
        assertEquals(2, c.probes().size());
        assertEquals(Optional.of(Path.of("/usr/bin/prometheus")), c.probes().get(0).binary());
        assertEquals(List.of("net/http.(*conn).serve", "github.com/prometheus/prometheus/tsdb.*"), c.probes().get(0).functions());
        assertEquals(OptionalInt.of(7), c.probes().get(1).pid());
        assertTrue(c.probes().get(1).stacks());
        assertEquals(20, c.probesMaxFunctions());
    }

    @Test
    void flagsReplaceTheFilesProbes(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("c.yaml");
        Files.writeString(f, "probes:\n  - {binary: /bin/a, functions: [f]}\n");
        assertEquals(1, CommandLine.parse(new String[] {"--config", f.toString()}).config().probes().size());
        LoupeConfig c = CommandLine.parse(new String[] {"--config", f.toString(), "--probe", "/bin/b:g"}).config();
        assertEquals(List.of(ProbeConfig.ofBinary(Path.of("/bin/b"), List.of("g"), false)), c.probes());
    }

    @Test
    void yamlErrorsNameFileLineAndProblem() {
        assertEquals("p.yaml:1: probes: must be a list of {binary: /usr/bin/app, functions: [\"main.*\"]} or {pid: 123, functions: [main.work]}",
                bad("probes: /usr/bin/app\n").getMessage());
        assertEquals("p.yaml:2: probes: an entry names either binary or pid, not both",
                bad("probes:\n  - {binary: /a, pid: 3, functions: [f]}\n").getMessage());
        assertEquals("p.yaml:3: probes: an entry needs binary: PATH or pid: N",
                bad("probes:\n  - {binary: /a, functions: [f]}\n  - functions: [g]\n").getMessage());
        assertEquals("p.yaml:2: probes: an entry needs functions: [NAME or GLOB, ...]", bad("probes:\n  - binary: /a\n").getMessage());
        assertEquals("p.yaml:3: probes.functions: the list is empty", bad("probes:\n  - binary: /a\n    functions: []\n").getMessage());
        assertEquals("p.yaml:3: probes.functions: an empty function name",
                bad("probes:\n  - binary: /a\n    functions: [\"\"]\n").getMessage());
        assertEquals("p.yaml:3: unknown key probes.function (did you mean probes.functions?); known keys: probes.binary, probes.pid, probes.functions, probes.stacks",
                bad("probes:\n  - binary: /a\n    function: [f]\n").getMessage());
        assertEquals("p.yaml:2: probes.pid: must be a positive process id, got \"-4\"", bad("probes:\n  - {pid: -4, functions: [f]}\n").getMessage());
        assertEquals("p.yaml:3: probes.stacks: must be true or false, got \"maybe\"",
                bad("probes:\n  - binary: /a\n    stacks: maybe\n    functions: [f]\n").getMessage());
        assertEquals("p.yaml:1: probes-max-functions: must be a whole number, got \"many\"", bad("probes-max-functions: many\n").getMessage());
        assertEquals("p.yaml:2: probes: each entry must be a mapping such as {binary: /usr/bin/app, functions: [\"main.*\"]} or {pid: 123, functions: [main.work]}",
                bad("probes:\n  - /usr/bin/app\n").getMessage());
    }

    private static ConfigException bad(String yaml) {
        return assertThrows(ConfigException.class, () -> ConfigLoader.parse(yaml, "p.yaml"));
    }

    private static ConfigException flag(String... args) {
        return assertThrows(ConfigException.class, () -> CommandLine.parse(args));
    }
}
