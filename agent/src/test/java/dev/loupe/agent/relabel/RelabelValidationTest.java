package dev.loupe.agent.relabel;

import org.junit.jupiter.api.Test;

import java.math.BigInteger;
import java.util.List;
import java.util.Map;

import static dev.loupe.agent.relabel.RelabelingTest.rule;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Rules Prometheus refuses are refused, naming the rule's index and the field. */
class RelabelValidationTest {
    private static RelabelConfigException refused(List<Map<String, Object>> rules) {
        return assertThrows(RelabelConfigException.class, () -> Relabeling.parse(rules));
    }

    private static String message(Map<String, Object> rule) {
        return refused(List.of(rule)).getMessage();
    }

    @Test
    void theErrorNamesTheRuleAndTheField() {
        RelabelConfigException e = refused(List.of(rule("action", "keep"), rule("action", "keep"),
                rule("sourcelabels", List.of("a"))));
        assertEquals(2, e.ruleIndex());
        assertEquals("sourcelabels", e.field());
        assertEquals("relabel rule 2, sourcelabels: unknown field (fields: action, source_labels, separator, regex,"
                + " target_label, replacement, modulus)", e.getMessage());
    }

    @Test
    void actions() {
        assertEquals("relabel rule 0, action: unknown action \"rename\" (replace, keep, drop, keepequal, dropequal,"
                + " hashmod, labelmap, labeldrop, labelkeep, lowercase, uppercase)", message(rule("action", "rename")));
        assertEquals("relabel rule 0, target_label: replace needs a target_label", message(rule("source_labels", List.of("a"))));
        assertEquals("relabel rule 0, target_label: lowercase needs a target_label", message(rule("action", "lowercase")));
        assertEquals("relabel rule 0, modulus: hashmod needs a modulus above 0",
                message(rule("action", "hashmod", "target_label", "s")));
        assertEquals("relabel rule 0, modulus: hashmod needs a modulus above 0",
                message(rule("action", "hashmod", "target_label", "s", "modulus", 0)));
    }

    @Test
    void targetLabels() {
        Relabeling.parse(List.of(rule("source_labels", List.of("a"), "regex", "some-([^-]+)-([^,]+)", "replacement", "${1}",
                "target_label", "${3}")));
        assertEquals("relabel rule 0, target_label: \"0${3}\" is no label name (nor one with $1/${name} references)",
                message(rule("source_labels", List.of("a"), "target_label", "0${3}")));
        assertEquals("relabel rule 0, target_label: \"-${3}\" is no label name (nor one with $1/${name} references)",
                message(rule("source_labels", List.of("a"), "target_label", "-${3}")));
        assertEquals("relabel rule 0, target_label: \"a-b\" is no label name (nor one with $1/${name} references)",
                message(rule("target_label", "a-b")));
        assertEquals("relabel rule 0, target_label: \"${3}\" is no label name ([a-zA-Z_][a-zA-Z0-9_]*)",
                message(rule("action", "lowercase", "target_label", "${3}")));
        assertEquals("relabel rule 0, target_label: \"x.y\" is no label name ([a-zA-Z_][a-zA-Z0-9_]*)",
                message(rule("action", "hashmod", "target_label", "x.y", "modulus", 2)));
    }

    /** Prometheus' own table of target labels with references. */
    @Test
    void labelNameTemplates() {
        Map<String, Boolean> cases = Map.ofEntries(Map.entry("-label", false), Map.entry("label", true),
                Map.entry("label${1}", true), Map.entry("${1}label", true), Map.entry("${1}", true),
                Map.entry("${", false), Map.entry("$", false), Map.entry("${}", false), Map.entry("foo${", false),
                Map.entry("$1", true), Map.entry("asd$2asd", true), Map.entry("-foo${1}bar-", false),
                Map.entry("_${1}_", true), Map.entry("foo${bar}foo", true));
        cases.forEach((s, valid) -> assertEquals(valid, RelabelRule.isLabelNameTemplate(s), s));
        String slow = "a" + "$a".repeat(5_000) + "-"; // no catastrophic backtracking on a long invalid name
        assertEquals(false, RelabelRule.isLabelNameTemplate(slow));
    }

    @Test
    void fieldsThatSomeActionsDoNotTake() {
        assertEquals("relabel rule 0, replacement: cannot be set for uppercase",
                message(rule("action", "uppercase", "target_label", "u", "replacement", "x")));
        assertEquals("relabel rule 0, replacement: cannot be set for keepequal",
                message(rule("action", "keepequal", "target_label", "u", "replacement", "x")));
        assertEquals("relabel rule 0, regex: keepequal takes only source_labels and target_label",
                message(rule("action", "keepequal", "target_label", "u", "regex", "(.*)")));
        assertEquals("relabel rule 0, separator: dropequal takes only source_labels and target_label",
                message(rule("action", "dropequal", "target_label", "u", "separator", ",")));
        assertEquals("relabel rule 0, source_labels: labeldrop takes only regex",
                message(rule("action", "labeldrop", "regex", "x", "source_labels", List.of())));
        assertEquals("relabel rule 0, target_label: labelkeep takes only regex",
                message(rule("action", "labelkeep", "regex", "x", "target_label", "t")));
        assertEquals("relabel rule 0, modulus: labelkeep takes only regex",
                message(rule("action", "labelkeep", "regex", "x", "modulus", 3)));
        Relabeling.parse(List.of(rule("action", "labeldrop", "regex", "x", "separator", ";", "replacement", "$1", "modulus", 0)));
        assertEquals("relabel rule 0, replacement: \"-x\" is no label name (nor one with $1/${name} references)",
                message(rule("action", "labelmap", "regex", "(.*)", "replacement", "-x")));
    }

    @Test
    void values() {
        assertEquals("relabel rule 0, source_labels: \"a-b\" is no label name ([a-zA-Z_][a-zA-Z0-9_]*)",
                message(rule("source_labels", List.of("a", "a-b"), "target_label", "x")));
        assertEquals("relabel rule 0, source_labels: must be a list of label names, not \"a\"",
                message(rule("source_labels", "a", "target_label", "x")));
        assertEquals("relabel rule 0, replacement: must be a string, not nothing (write '' for an empty string)",
                message(rule("target_label", "x", "replacement", null)));
        assertEquals("relabel rule 0, separator: must be a string, not a list",
                message(rule("target_label", "x", "separator", List.of())));
        assertEquals("relabel rule 0, modulus: -1 is not an unsigned 64-bit integer",
                message(rule("action", "hashmod", "target_label", "s", "modulus", -1)));
        assertEquals("relabel rule 0, modulus: 18446744073709551616 is not an unsigned 64-bit integer",
                message(rule("action", "hashmod", "target_label", "s", "modulus", BigInteger.ONE.shiftLeft(64))));
        assertEquals("relabel rule 0, modulus: must be an unsigned 64-bit integer, not \"ten\"",
                message(rule("action", "hashmod", "target_label", "s", "modulus", "ten")));
        assertEquals("relabel rule 0, rule: is empty", refused(java.util.Arrays.asList((Map<String, Object>) null)).getMessage());
        assertEquals(Map.of("x", "8"), Relabeling.parse(List.of(rule("target_label", "x", "replacement", 8)))
                .apply(Map.of()), "a YAML number is taken as its text");
    }

    @Test
    void regexes() {
        RelabelConfigException e = refused(List.of(rule("regex", "(", "action", "keep")));
        assertEquals("regex", e.field());
        assertEquals("relabel rule 0, regex: invalid regular expression \"(\": Unclosed group", e.getMessage());
        assertEquals("relabel rule 0, regex: invalid regular expression \"a(?=b)\": \"(?=\" is not RE2 syntax"
                + " (RE2 has no lookaround, atomic groups or backreferences)", message(rule("regex", "a(?=b)", "action", "keep")));
    }
}
