package dev.loupe.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The agent's command line as users meet it: --help, bad flags, bad config files. */
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

    @Test
    void badFlagIsRejected() throws Exception {
        Commands.Result r = agent("--frequency", "0");
        assertEquals(2, r.exit(), r.output());
        assertTrue(r.output().contains("--frequency"), r.output());
    }
}
