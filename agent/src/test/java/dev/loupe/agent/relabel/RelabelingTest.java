package dev.loupe.agent.relabel;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Prometheus' relabel_config semantics, from its configuration documentation and the behaviour its own
 * tests pin (hashmod values, template expansion, validation).
 */
class RelabelingTest {
    /** A rule as a YAML loader gives it: field, value, field, value… */
    static Map<String, Object> rule(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    @SafeVarargs
    private static Map<String, String> relabel(Map<String, String> labels, Map<String, Object>... rules) {
        return Relabeling.parse(List.of(rules)).apply(labels);
    }

    private static final Map<String, String> ABC = Map.of("a", "foo", "b", "bar", "c", "baz");

    @Test
    void replaceWritesTheExpandedReplacementToTheTarget() {
        assertEquals(Map.of("a", "foo", "b", "bar", "c", "baz", "d", "choo-choo"), relabel(ABC,
                rule("source_labels", List.of("a"), "regex", "f(.*)", "target_label", "d", "replacement", "ch${1}-ch${1}")));
        assertEquals(Map.of("a", "boobam", "b", "bar", "c", "baz", "d", "boooom"), relabel(ABC,
                rule("source_labels", List.of("a", "b"), "regex", "f(.*);(.*)r", "target_label", "a", "replacement", "b${1}${2}m"),
                rule("source_labels", List.of("c", "a"), "regex", "(b).*b(.*)ba(.*)", "target_label", "d", "replacement", "$1$2$2$3")));
        assertEquals(Map.of("a", "abc", "d", "b"), relabel(Map.of("a", "abc"),
                rule("source_labels", List.of("a"), "regex", ".*(b).*", "target_label", "d")), "replacement defaults to $1");
    }

    @Test
    void replaceWithoutAMatchChangesNothing() {
        assertEquals(Map.of("a", "boo"), relabel(Map.of("a", "boo"),
                rule("source_labels", List.of("a"), "regex", "f", "target_label", "b", "replacement", "bar")));
    }

    @Test
    void theSeparatorJoinsSourceValuesAndAMissingLabelIsEmpty() {
        assertEquals(Map.of("a", "x", "c", "y", "j", "x||y"), relabel(Map.of("a", "x", "c", "y"),
                rule("source_labels", List.of("a", "b", "c"), "separator", "|", "target_label", "j")));
    }

    @Test
    void aStaticLabelNeedsNoSource() {
        assertEquals(Map.of("a", "foo", "env", "prod"), relabel(Map.of("a", "foo"),
                rule("target_label", "env", "replacement", "prod")));
    }

    @Test
    void anEmptyResultDeletesTheTarget() {
        assertEquals(Map.of("a", "foo"), relabel(Map.of("a", "foo", "b", "bar"),
                rule("source_labels", List.of("missing"), "target_label", "b")));
        assertEquals(Map.of("a", "foo"), relabel(Map.of("a", "foo", "b", ""),
                rule("source_labels", List.of("b"), "target_label", "c")), "an empty value is no label");
    }

    @Test
    void targetLabelsCanBeTemplates() {
        assertEquals(Map.of("a", "some-name-value", "name", "value"), relabel(Map.of("a", "some-name-value"),
                rule("source_labels", List.of("a"), "regex", "some-([^-]+)-([^,]+)", "replacement", "${2}", "target_label", "${1}")));
        assertEquals(Map.of("a", "some-name-value"), relabel(Map.of("a", "some-name-value"),
                rule("source_labels", List.of("a"), "regex", "some-([^-]+)-([^,]+)", "replacement", "${3}", "target_label", "${1}")),
                "a replacement of a missing group is empty: nothing to set");
        assertEquals(Map.of("a", "some-name-0"), relabel(Map.of("a", "some-name-0"),
                rule("source_labels", List.of("a"), "regex", "some-([^-]+)-([^,]+)", "replacement", "${1}", "target_label", "${3}"),
                rule("source_labels", List.of("a"), "regex", "some-([^-]+)(-[^,]+)", "replacement", "${1}", "target_label", "${2}")),
                "a target that expands to no valid name (\"\", \"-0\") is skipped");
    }

    @Test
    void aRealLifeTagList() {
        assertEquals(Map.of("__meta_sd_tags", "path:/secret,job:some-job,label:foo=bar", "__metrics_path__", "/secret",
                        "job", "some-job", "foo", "bar"),
                relabel(Map.of("__meta_sd_tags", "path:/secret,job:some-job,label:foo=bar"),
                        rule("source_labels", List.of("__meta_sd_tags"), "regex", "(?:.+,|^)path:(/[^,]+).*",
                                "replacement", "${1}", "target_label", "__metrics_path__"),
                        rule("source_labels", List.of("__meta_sd_tags"), "regex", "(?:.+,|^)job:([^,]+).*",
                                "replacement", "${1}", "target_label", "job"),
                        rule("source_labels", List.of("__meta_sd_tags"), "regex", "(?:.+,|^)label:([^=]+)=([^,]+).*",
                                "replacement", "${2}", "target_label", "${1}")));
    }

    @Test
    void keepAndDropMatchTheWholeJoinedValue() {
        assertEquals(Map.of(), relabel(Map.of("a", "foo"),
                rule("source_labels", List.of("a"), "regex", ".*o.*", "action", "drop"),
                rule("source_labels", List.of("a"), "regex", "f(.*)", "target_label", "d", "replacement", "ch$1-ch$1")));
        assertEquals(Map.of("a", "foo"), relabel(Map.of("a", "foo"),
                rule("source_labels", List.of("a"), "regex", "no-match", "action", "drop")));
        assertEquals(Map.of("a", "foo"), relabel(Map.of("a", "foo"),
                rule("source_labels", List.of("a"), "regex", "f|o", "action", "drop")), "anchored: f|o is not foo");
        assertEquals(Map.of(), relabel(Map.of("a", "foo"),
                rule("source_labels", List.of("a"), "regex", "no-match", "action", "keep")));
        assertEquals(Map.of("a", "foo"), relabel(Map.of("a", "foo"),
                rule("source_labels", List.of("a"), "regex", "f.*", "action", "keep")));
        assertEquals(Map.of("a", "foo"), relabel(Map.of("a", "foo"), rule("action", "keep")),
                "no source labels: \"\" matches the default (.*)");
    }

    @Test
    void keepEqualAndDropEqualCompareWithTheTarget() {
        Map<String, String> ports = Map.of("__tmp_port", "1234", "__port1", "1234", "__port2", "5678");
        assertEquals(ports, relabel(ports, rule("source_labels", List.of("__tmp_port"), "action", "keepequal", "target_label", "__port1")));
        assertEquals(Map.of(), relabel(ports, rule("source_labels", List.of("__tmp_port"), "action", "dropequal", "target_label", "__port1")));
        assertEquals(ports, relabel(ports, rule("source_labels", List.of("__tmp_port"), "action", "dropequal", "target_label", "__port2")));
        assertEquals(Map.of(), relabel(ports, rule("source_labels", List.of("__tmp_port"), "action", "keepequal", "target_label", "__port2")));
    }

    @Test
    void hashmodIsTheLowHalfOfTheMd5ModuloTheModulus() {
        assertEquals("976", relabel(ABC, rule("source_labels", List.of("c"), "target_label", "d", "action", "hashmod",
                "modulus", 1000)).get("d"));
        assertEquals("734", relabel(Map.of("a", "foo\nbar"), rule("source_labels", List.of("a"), "target_label", "b",
                "action", "hashmod", "modulus", 1000)).get("b"));
        assertEquals("1", relabel(Map.of("address", "10.0.0.1:9100"), rule("source_labels", List.of("address"),
                "target_label", "shard", "action", "hashmod", "modulus", "4")).get("shard"));
        assertEquals("16450797887570275976", relabel(ABC, rule("source_labels", List.of("c"), "target_label", "d",
                        "action", "hashmod", "modulus", new java.math.BigInteger("18446744073709551615"))).get("d"),
                "unsigned 64-bit arithmetic: the hash is above Long.MAX_VALUE and below the modulus");
    }

    @Test
    void labelmapCopiesMatchingLabelsUnderNewNames() {
        assertEquals(Map.of("a", "foo", "b1", "bar", "b2", "baz", "bar_b1", "bar", "bar_b2", "baz"),
                relabel(Map.of("a", "foo", "b1", "bar", "b2", "baz"), rule("regex", "(b.*)", "replacement", "bar_${1}", "action", "labelmap")));
        assertEquals(Map.of("a", "foo", "__meta_my_bar", "aaa", "__meta_my_baz", "bbb", "__meta_other", "ccc",
                        "my_bar", "aaa", "my_baz", "bbb"),
                relabel(Map.of("a", "foo", "__meta_my_bar", "aaa", "__meta_my_baz", "bbb", "__meta_other", "ccc"),
                        rule("regex", "__meta_(my.*)", "replacement", "${1}", "action", "LabelMap")));
        assertEquals(Map.of("__meta_x", "1", "_x", "1"), relabel(Map.of("__meta_x", "1"),
                rule("regex", "__meta(.*)", "replacement", "${1}", "action", "labelmap")));
        assertEquals(Map.of("__meta_", "1"), relabel(Map.of("__meta_", "1"),
                rule("regex", "__meta_(.*)", "replacement", "${1}", "action", "labelmap")), "an empty name is skipped");
    }

    @Test
    void labeldropAndLabelkeepMatchNames() {
        assertEquals(Map.of("a", "foo"), relabel(Map.of("a", "foo", "b1", "bar", "b2", "baz"), rule("regex", "(b.*)", "action", "labeldrop")));
        assertEquals(Map.of("b1", "bar", "b2", "baz"), relabel(Map.of("a", "foo", "b1", "bar", "b2", "baz"), rule("regex", "(b.*)", "action", "labelkeep")));
        assertEquals(Map.of(), relabel(Map.of("a", "foo"), rule("regex", ".*", "action", "labeldrop")), "no labels left");
        assertEquals(Map.of("__meta_kubernetes_pod_annotation_XXX_metrics_port", "9091", "__meta_kubernetes_pod_container_port_name", "metrics"),
                relabel(Map.of("__meta_kubernetes_pod_container_port_name", "foo", "__meta_kubernetes_pod_annotation_XXX_metrics_port", "9091"),
                        rule("regex", "^__meta_kubernetes_pod_container_port_name$", "action", "labeldrop"),
                        rule("source_labels", List.of("__meta_kubernetes_pod_annotation_XXX_metrics_port"), "regex", "(.+)",
                                "replacement", "metrics", "target_label", "__meta_kubernetes_pod_container_port_name"),
                        rule("source_labels", List.of("__meta_kubernetes_pod_container_port_name"), "regex", "^metrics$", "action", "keep")));
    }

    @Test
    void lowercaseAndUppercase() {
        assertEquals(Map.of("foo", "bAr123Foo", "foo_lowercase", "bar123foo", "foo_uppercase", "BAR123FOO"),
                relabel(Map.of("foo", "bAr123Foo"),
                        rule("source_labels", List.of("foo"), "action", "uppercase", "target_label", "foo_uppercase"),
                        rule("source_labels", List.of("foo"), "action", "Lowercase", "target_label", "foo_lowercase")));
    }

    @Test
    void aFleetExampleWithCgroupLabels() {
        Map<String, String> in = Map.of("__name__", "parca_agent_cpu", "node", "web-7",
                "systemd_unit", "nginx.service", "container_id", "4f9d3c0e1b2a39485766aabbccddeeff00112233445566778899aabbccddeeff");
        assertEquals(Map.of("__name__", "parca_agent_cpu", "node", "web-7", "service", "nginx", "container", "4f9d3c0e1b2a"),
                relabel(in,
                        rule("source_labels", List.of("systemd_unit"), "regex", "(.+)\\.service", "target_label", "service"),
                        rule("source_labels", List.of("container_id"), "regex", "(.{12}).*", "target_label", "container"),
                        rule("regex", "systemd_unit|container_id", "action", "labeldrop")));
    }

    @Test
    void theInputIsNotChangedAndTheOutputIsSorted() {
        Map<String, String> in = new HashMap<>(Map.of("z", "1", "a", "2"));
        Map<String, String> out = relabel(in, rule("target_label", "m", "replacement", "3"));
        assertEquals(List.of("a", "m", "z"), List.copyOf(out.keySet()));
        assertEquals(Map.of("z", "1", "a", "2"), in);
        assertThrows(UnsupportedOperationException.class, () -> out.put("b", "4"));
        assertEquals(Map.of("a", "2", "z", "1"), Relabeling.none().apply(in));
        assertEquals(0, Relabeling.none().size());
        assertEquals(2, Relabeling.parse(List.of(rule("action", "keep"), rule("action", "keep"))).size());
    }
}
