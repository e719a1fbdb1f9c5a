package dev.loupe.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code loupe latency-diff}'s command line: two files, the regression flags over an optional --config file, --format. */
class LatencyDiffCommandLineTest {
    private static LatencyDiffConfig parse(String... args) throws ConfigException {
        CommandLine.ParsedLatencyDiff p = CommandLine.parseLatencyDiff(args);
        assertTrue(!p.help(), "help");
        return p.config();
    }

    private static String error(String... args) {
        return assertThrows(ConfigException.class, () -> CommandLine.parseLatencyDiff(args)).getMessage();
    }

    @Test
    void twoFilesAndTheDefaults() throws Exception {
        assertEquals(new LatencyDiffConfig(Path.of("a.pb.gz"), Path.of("b.pb.gz"), 200, 1.2, LatencyDiffConfig.Format.TABLE),
                parse("a.pb.gz", "b.pb.gz"));
    }

    @Test
    void flagsOverrideTheConfigFileWhichOverridesTheDefaults(@TempDir Path dir) throws Exception {
        Path yaml = Files.writeString(dir.resolve("loupe.yaml"),
                "frequency: 49\nlatency-regression:\n  min-calls: 50\n  threshold: 1.1\n");

        assertEquals(new LatencyDiffConfig(Path.of("-base"), Path.of("cur"), 50, 1.5, LatencyDiffConfig.Format.JSON),
                parse("--config", yaml.toString(), "--latency-regression-threshold", "1.5", "--format=json", "--",
                        "-base", "cur"));
    }

    @Test
    void helpNeedsNoFiles() throws Exception {
        CommandLine.ParsedLatencyDiff p = CommandLine.parseLatencyDiff(new String[] {"--help"});
        assertTrue(p.help());
        assertNull(p.config());
        String usage = CommandLine.usage(Command.LATENCY_DIFF);
        assertTrue(usage.startsWith("Usage: loupe latency-diff [options] BASE.pb.gz CURRENT.pb.gz\n"), usage);
        assertTrue(usage.contains("\nArguments:\n      BASE.pb.gz "), usage);
    }

    @Test
    void wrongArgumentsAreNamed() {
        assertEquals("BASE.pb.gz CURRENT.pb.gz: missing (see --help)", error());
        assertEquals("CURRENT.pb.gz: missing (see --help)", error("a.pb.gz"));
        assertEquals("c: unexpected argument (options start with --; see --help)", error("a", "b", "c"));
        assertEquals("--latency-regression-min-calls: must be between 2 and 1000000000, got 1",
                error("--latency-regression-min-calls", "1", "a", "b"));
        assertEquals("--frequency: unknown option; see --help", error("--frequency", "19", "a", "b"));
        assertEquals("--format: must be table or json, got \"yaml\"", error("--format", "yaml", "a", "b"));
    }

    @Test
    void runStillTakesNoFiles() {
        assertEquals("a.pb.gz: unexpected argument (options start with --; see --help)",
                assertThrows(ConfigException.class, () -> CommandLine.parse(new String[] {"a.pb.gz"})).getMessage());
    }
}
