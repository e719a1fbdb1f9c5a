package dev.loupe.config;

import org.junit.jupiter.api.Test;

import java.math.BigInteger;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The YAML {@code relabel:} list reaches the agent as plain values; wrong shapes fail at their line. */
class RelabelConfigTest {
    @Test
    void defaultIsNoRules() {
        assertEquals(List.of(), LoupeConfig.defaults().get(Options.RELABEL));
    }

    @Test
    void rulesBecomeListsOfPlainMapsInFileOrder() throws Exception {
        LoupeConfig c = ConfigLoader.parse("""
                relabel:
                  - action: drop
                    source_labels: [comm, pid]
                    separator: '/'
                    regex: 'sshd/.*'
                  - {action: hashmod, source_labels: [pid], modulus: 8, target_label: shard}
                  - {action: hashmod, source_labels: [pid], modulus: 18446744073709551615, target_label: big}
                  - {action: replace, target_label: team, replacement: 42, regex: true}
                  - {action: labeldrop, regex: "__.*", replacement: }
                """, "loupe.yaml");
        Map<String, Object> last = new LinkedHashMap<>();
        last.put("action", "labeldrop");
        last.put("regex", "__.*");
        last.put("replacement", null); // the agent names the field that needs a value
        assertEquals(List.of(
                Map.of("action", "drop", "source_labels", List.of("comm", "pid"), "separator", "/", "regex", "sshd/.*"),
                Map.of("action", "hashmod", "source_labels", List.of("pid"), "modulus", 8L, "target_label", "shard"),
                Map.of("action", "hashmod", "source_labels", List.of("pid"), "modulus",
                        new BigInteger("18446744073709551615"), "target_label", "big"),
                Map.of("action", "replace", "target_label", "team", "replacement", 42L, "regex", "true"),
                last), c.get(Options.RELABEL));
        assertEquals(List.of("action", "source_labels", "separator", "regex"),
                List.copyOf(c.get(Options.RELABEL).get(0).keySet()), "fields in file order");
    }

    @Test
    void emptyKeyIsNoRules() throws Exception {
        assertEquals(List.of(), ConfigLoader.parse("relabel:\n", "loupe.yaml").get(Options.RELABEL));
    }

    @Test
    void wrongShapesNameFileAndLine() {
        assertEquals("loupe.yaml:1: relabel: must be a list of rules such as " + RelabelYaml.EXAMPLE,
                error("relabel: {action: drop}\n"));
        assertEquals("loupe.yaml:3: relabel: each rule must be a mapping such as " + RelabelYaml.EXAMPLE,
                error("relabel:\n  - {action: drop}\n  - drop\n"));
        assertEquals("loupe.yaml:3: relabel.source_labels: a list may hold only label names",
                error("relabel:\n  - source_labels:\n      - [comm]\n"));
        assertEquals("loupe.yaml:2: relabel.regex: must be a single value or a list, not a mapping",
                error("relabel:\n  - regex: {a: b}\n"));
        assertEquals("loupe.yaml:2: relabel: field names must be plain words",
                error("relabel:\n  - {[a]: b}\n"));
    }

    @Test
    void aReloadAppliesChangedRulesLive() throws Exception {
        ConfigChange c = ConfigChange.between(ConfigLoader.parse("relabel: []\n", "a"),
                ConfigLoader.parse("relabel: [{action: drop, regex: x}]\n", "b"));
        assertEquals(List.of(Options.RELABEL), c.live());
        assertEquals(List.of(), c.needRestart());
    }

    @Test
    void noFlagSetsRules() {
        assertEquals(List.of(), Arrays.stream(CommandLine.usage().split("\n")).filter(l -> l.contains("relabel")).toList());
    }

    private static String error(String yaml) {
        return assertThrows(ConfigException.class, () -> ConfigLoader.parse(yaml, "loupe.yaml")).getMessage();
    }
}
