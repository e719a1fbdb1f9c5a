package dev.loupe.config;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * default.yaml and docs/configuration.md are written from the option table; this fails when a committed copy is
 * stale. {@code -Dloupe.regenerate=true} rewrites both instead.
 */
class ConfigDocsTest {
    private static final Path DEFAULT_YAML = Path.of("src/main/resources/dev/loupe/config/default.yaml");
    private static final Path MARKDOWN = Path.of("../docs/configuration.md");

    @Test
    void committedDefaultYamlIsTheTables() throws IOException {
        check(DEFAULT_YAML, ConfigDocs.defaultYaml());
    }

    @Test
    void committedConfigurationDocIsTheTables() throws IOException {
        check(MARKDOWN, ConfigDocs.markdown());
    }

    @Test
    void defaultYamlParsesToTheDefaults() throws Exception {
        LoupeConfig fromFile = ConfigLoader.parse(Files.readString(DEFAULT_YAML), "default.yaml");
        LoupeConfig d = LoupeConfig.defaults();
        for (Option<?> o : Options.ALL) {
            if (o.hasYaml()) {
                assertEquals(d.get(o), fromFile.get(o), o.key());
            }
        }
    }

    @Test
    void everyOptionIsReachableAndNamedOnce() {
        Set<String> keys = new HashSet<>();
        Set<String> flags = new HashSet<>();
        for (Option<?> o : Options.ALL) {
            assertTrue(o.key() == null || keys.add(o.key()), "YAML key twice: " + o.key());
            assertTrue(o.flag() == null || flags.add(o.flag()), "flag twice: " + o.flag());
            assertTrue(!o.helpText().isBlank(), "no help: " + o);
            assertTrue(!o.commands().isEmpty(), "no command: " + o);
            assertTrue(!o.hasYaml() || o.defaultYaml() != null, "a YAML option without a default: " + o);
        }
        for (Command c : Command.values()) {
            String usage = CommandLine.usage(c);
            List<String> missing = Options.ALL.stream().filter(o -> o.flag() != null && o.commands().contains(c))
                    .map(Option::flag).filter(f -> !usage.contains(f)).toList();
            assertEquals(List.of(), missing, "flags missing from loupe " + c.word() + " --help");
        }
    }

    private static void check(Path committed, String generated) throws IOException {
        if (Boolean.getBoolean("loupe.regenerate")) {
            Files.writeString(committed, generated, StandardCharsets.UTF_8);
        }
        assertEquals(generated, Files.readString(committed, StandardCharsets.UTF_8),
                committed + " is stale: mvn -pl config test -Dtest=ConfigDocsTest -Dloupe.regenerate=true");
    }
}
