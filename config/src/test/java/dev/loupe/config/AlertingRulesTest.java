package dev.loupe.config;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shipped Prometheus rules (config/alerting) through the real promtool: they parse, and their unit tests
 * (loupe-rules.test.yml) pass. promtool comes from Debian's prometheus package; without it this fails.
 */
class AlertingRulesTest {
    private static final Path ALERTING = Path.of("alerting").toAbsolutePath();
    private static final Path PROMTOOL = Path.of("/usr/bin/promtool");

    @Test
    void rulesPassPromtoolCheck() throws Exception {
        String out = promtool("check", "rules", "loupe-rules.yml");
        assertTrue(out.contains("SUCCESS: 8 rules found"), out);
    }

    @Test
    void rulesPassTheirPromtoolUnitTests() throws Exception {
        String out = promtool("test", "rules", "loupe-rules.test.yml");
        assertTrue(out.contains("SUCCESS"), out);
    }

    /** Runs promtool in config/alerting (the test file names the rules relative to itself); asserts exit 0. */
    private static String promtool(String... args) throws IOException, InterruptedException {
        assertTrue(Files.isExecutable(PROMTOOL), PROMTOOL + " is missing: install Debian's prometheus package");
        List<String> command = new ArrayList<>(List.of(PROMTOOL.toString()));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).directory(ALERTING.toFile())
                .redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(2, TimeUnit.MINUTES), "promtool did not finish");
        assertEquals(0, p.exitValue(), out);
        return out;
    }
}
