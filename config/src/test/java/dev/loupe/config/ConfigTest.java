package dev.loupe.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ConfigTest {
    @Test
    void embeddedDefaults() {
        LoupeConfig d = LoupeConfig.defaults();
        assertEquals(19, d.frequencyHz());
        assertEquals(Duration.ofSeconds(10), d.interval());
        assertEquals(Path.of("./profiles"), d.outputDir());
        assertEquals(Set.of(), d.pids());
        assertEquals("127.0.0.1", d.httpAddress().orElseThrow().getHostString());
        assertEquals(7071, d.httpAddress().orElseThrow().getPort());
        assertEquals(Optional.empty(), d.duration());
        assertEquals(1_000_000_000L / 19, d.periodNanos());
        assertEquals(64L << 20, d.unwindTableBudget());
    }

    @Test
    void unwindTableBudgetFromFileAndFlag(@TempDir Path dir) throws Exception {
        assertEquals(2L << 20, ConfigLoader.parse("unwind:\n  table-budget: 2MiB\n", "x.yaml").unwindTableBudget());
        assertEquals(1L << 30, ConfigLoader.parse("unwind:\n  table-budget: 1GiB\n", "x.yaml").unwindTableBudget());
        assertEquals("name.yaml:2: unwind.table-budget: must be between 1MiB and 4GiB, got 512KiB",
                bad("unwind:\n  table-budget: 512KiB\n").getMessage());
        assertTrue(bad("unwind:\n  table-budget: lots\n").getMessage().contains("must be a size such as 64MiB"));
        assertTrue(bad("unwind:\n  budget: 2MiB\n").getMessage().contains("unknown key unwind.budget"));
        assertEquals(16L << 20, CommandLine.parse(new String[] {"--unwind-table-budget", "16MiB"}).config().unwindTableBudget());
        assertTrue(LoupeConfig.defaults().unwindTables());
        assertEquals(false, CommandLine.parse(new String[] {"--unwind-tables", "off"}).config().unwindTables());
        assertEquals(false, ConfigLoader.parse("unwind:\n  tables: off\n", "x.yaml").unwindTables());
        assertTrue(bad("unwind:\n  tables: maybe\n").getMessage().contains("must be on or off"));
    }

    @Test
    void jvmSymbolsAreOnUnlessTurnedOff() throws Exception {
        assertTrue(LoupeConfig.defaults().get(Options.JVM_SYMBOLS));
        assertEquals(false, CommandLine.parse(new String[] {"--jvm-symbols", "off"}).config().get(Options.JVM_SYMBOLS));
        assertEquals(false, ConfigLoader.parse("jvm-symbols: off\n", "x.yaml").get(Options.JVM_SYMBOLS));
        assertTrue(bad("jvm-symbols: maybe\n").getMessage().contains("must be on or off"));
    }

    @Test
    void fileOverridesDefaults() throws Exception {
        LoupeConfig c = ConfigLoader.parse("frequency: 99\npids: [3, 1]\nhttp:\n  address: off\n", "x.yaml");
        assertEquals(99, c.frequencyHz());
        assertEquals(Set.of(1, 3), c.pids());
        assertEquals(Optional.empty(), c.httpAddress());
        assertEquals(Duration.ofSeconds(10), c.interval(), "untouched keys keep defaults");
    }

    private static ConfigException bad(String yaml) {
        return assertThrows(ConfigException.class, () -> ConfigLoader.parse(yaml, "name.yaml"));
    }

    @Test
    void errorsNameFileLineAndProblem() {
        ConfigException e = bad("# loupe\ninterval: 10s\noutput: /tmp/x\nfrequency: fast\n");
        assertEquals("name.yaml:4: frequency: must be an integer between 1 and 1000 Hz, got \"fast\"", e.getMessage());
        assertEquals(4, e.line());
        assertTrue(bad("frequency: 5000").getMessage().startsWith("name.yaml:1: frequency:"));
        assertTrue(bad("\ninterval: 0s").getMessage().startsWith("name.yaml:2: interval: must be between 1s and 1h"));
        assertTrue(bad("interval: ten").getMessage().contains("must be a duration"));
        assertTrue(bad("pids:\n  - 12\n  - -4\n").getMessage().startsWith("name.yaml:3: pids: must be a positive process id"));
        assertTrue(bad("http:\n  address: 127.0.0.1:99999\n").getMessage().startsWith("name.yaml:2: http.address: port must be 1..65535"));
        assertTrue(bad("http:\n  address: ::1:80\n").getMessage().contains("brackets"));
        assertTrue(bad("pids: 5").getMessage().contains("must be a list"));
    }

    @Test
    void unknownKeySuggestsTheNearestOne() {
        ConfigException e = bad("frequency: 19\nintervall: 10s\n");
        assertTrue(e.getMessage().startsWith("name.yaml:2: unknown key intervall (did you mean interval?)"), e.getMessage());
        assertTrue(bad("http:\n  adress: x:1\n").getMessage().contains("did you mean http.address?"));
    }

    @Test
    void yamlSyntaxErrorHasLine() {
        ConfigException e = bad("frequency: 19\ninterval: [10s\noutput: x\n");
        // The unclosed "[" of line 2 is found out at line 3's "output:".
        assertEquals(3, e.line(), e.getMessage());
        assertTrue(e.getMessage().startsWith("name.yaml:3: invalid YAML: "), e.getMessage());
    }

    @Test
    void emptyFileIsAllDefaults() throws Exception {
        LoupeConfig d = LoupeConfig.defaults();
        assertTrue(Options.ALL.size() > 10, "the loop below compares every option: " + Options.ALL.size());
        for (String text : new String[] {"", "# only a comment\n", "\n\n"}) {
            LoupeConfig empty = ConfigLoader.parse(text, "e.yaml");
            for (Option<?> o : Options.ALL) {
                assertEquals(d.get(o), empty.get(o), "option " + o + " of " + text.replace("\n", "\\n"));
            }
            assertEquals(d.remoteStore(), empty.remoteStore());
            assertEquals(d.kafka(), empty.kafka());
            assertEquals(d.probes(), empty.probes());
            assertEquals(d.pids(), empty.pids());
            assertEquals(d.source(), empty.source());
        }
    }

    @Test
    void missingFile(@TempDir Path dir) {
        Path f = dir.resolve("nope.yaml");
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(f));
        assertEquals(f + ": no such file", e.getMessage());
    }

    @Test
    void commandLineOverridesFile(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("c.yaml");
        Files.writeString(f, "frequency: 49\ninterval: 20s\npids: [7]\n");
        CommandLine.Parsed p = CommandLine.parse(new String[] {"--frequency=99", "--pid", "1,2", "--pid", "3",
                "--duration", "1m30s", "--config", f.toString(), "--output", "/tmp/o", "--http", "[::1]:8080"});
        LoupeConfig c = p.config();
        assertEquals(99, c.frequencyHz());
        assertEquals(Duration.ofSeconds(20), c.interval(), "from the file");
        assertEquals(Set.of(1, 2, 3), c.pids(), "flags replace the file's pids");
        assertEquals(Optional.of(Duration.ofSeconds(90)), c.duration());
        assertEquals(Path.of("/tmp/o"), c.outputDir());
        assertEquals(8080, c.httpAddress().orElseThrow().getPort());
        assertEquals(Optional.of(f), c.source());
    }

    @Test
    void offCpuThresholdIsAProbabilityZeroByDefault() throws Exception {
        assertEquals(0.0, CommandLine.parse(new String[] {}).config().offCpuThreshold());
        assertEquals(0.01, CommandLine.parse(new String[] {"--off-cpu-threshold", "0.01"}).config().offCpuThreshold());
        assertEquals("--off-cpu-threshold: a probability is between 0 and 1 (0: off), got 1.5",
                assertThrows(ConfigException.class, () -> CommandLine.parse(new String[] {"--off-cpu-threshold", "1.5"}))
                        .getMessage());
        assertEquals("--off-cpu-threshold: not a probability: often (0..1; 0 turns off-CPU profiles off)",
                assertThrows(ConfigException.class, () -> CommandLine.parse(new String[] {"--off-cpu-threshold", "often"}))
                        .getMessage());
    }

    @Test
    void theAgentsOwnWaitsAreLeftOutUnlessAsked() throws Exception {
        assertFalse(CommandLine.parse(new String[] {}).config().offCpuIncludeSelf());
        assertTrue(CommandLine.parse(new String[] {"--off-cpu-include-self"}).config().offCpuIncludeSelf());
        assertFalse(CommandLine.parse(new String[] {"--off-cpu-include-self=false"}).config().offCpuIncludeSelf());
        assertTrue(ConfigLoader.parse("off-cpu-include-self: true\n", "c.yaml").offCpuIncludeSelf());
        assertTrue(Options.OFF_CPU_INCLUDE_SELF.isReloadable(), "a reload turns it on and off");
    }

    @Test
    void commandLineErrors() {
        assertEquals("--frequency: must be an integer between 1 and 1000 Hz, got \"0\"",
                assertThrows(ConfigException.class, () -> CommandLine.parse(new String[] {"--frequency", "0"})).getMessage());
        assertTrue(assertThrows(ConfigException.class, () -> CommandLine.parse(new String[] {"--frequncy", "9"}))
                .getMessage().contains("did you mean --frequency?"));
        assertEquals("--output: needs a value",
                assertThrows(ConfigException.class, () -> CommandLine.parse(new String[] {"--output"})).getMessage());
        assertTrue(assertThrows(ConfigException.class, () -> CommandLine.parse(new String[] {"--duration", "soon"}))
                .getMessage().startsWith("--duration: must be a duration"));
    }

    @Test
    void usageListsEveryFlag() throws Exception {
        String u = CommandLine.usage();
        for (String f : new String[] {"--config", "--frequency", "--interval", "--duration", "--output", "--pid", "--http", "--help"}) {
            assertTrue(u.contains(f), f);
        }
        assertTrue(u.contains("default 19"));
        assertTrue(CommandLine.parse(new String[] {"--help"}).help());
    }

    @Test
    void aDuplicateKeyIsAnErrorAtItsSecondLine() {
        ConfigException e = bad("frequency: 19\nfrequency: 99\n");
        assertEquals(2, e.line(), e.getMessage());
        assertEquals("name.yaml:2: invalid YAML: duplicate key frequency", e.getMessage());
        ConfigException nested = bad("http:\n  address: off\n  address: 127.0.0.1:1\n");
        assertEquals(3, nested.line(), nested.getMessage());
        assertTrue(nested.getMessage().endsWith("duplicate key address"), nested.getMessage());
        ConfigException inList = bad("probes:\n  - binary: /bin/true\n    functions: [main]\n    binary: /bin/false\n");
        assertEquals(4, inList.line(), inList.getMessage());
    }
}
