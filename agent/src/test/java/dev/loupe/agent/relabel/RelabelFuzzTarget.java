package dev.loupe.agent.relabel;

import dev.loupe.unwinder.fuzz.FuzzInput;

import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;

/**
 * Fuzz target for the relabel rules: {@link Relabeling#parse} of what the YAML loader gives (any field, any value
 * shape), then {@link Relabeling#apply} to a label set whose values are another user's: a process's comm, its
 * executable's path, its cgroup's unit and container. With an odd first byte, {@link GoRegex} alone: an RE2
 * pattern translated, matched against a value and a template expanded. {@link RelabelConfigException} (for a
 * rule) and IllegalArgumentException (for a pattern) are the errors bad configuration must give; anything else
 * escaping, a hang (Jazzer's timeout), an applied set with an invalid name or an empty value, or two applications
 * of the same rules to the same labels that differ is a finding.
 */
public final class RelabelFuzzTarget {
    private static final String[] FIELDS = {"action", "source_labels", "separator", "regex", "target_label", "replacement",
            "modulus", "unknown_field"};
    /** The labels a series carries before the rules (WriteRawEncoder) and some external ones. */
    private static final String[] LABELS = {"__name__", "node", "pid", "comm", "executable", "build_id", "systemd_unit",
            "systemd_user_unit", "container_id", "env", "job", "a", "b", "shard"};

    private RelabelFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        if ((in.u8() & 1) != 0) {
            regex(in);
            return;
        }
        List<Map<String, Object>> rules = new ArrayList<>();
        int n = in.intIn(0, 4);
        for (int r = 0; r < n; r++) {
            Map<String, Object> rule = new LinkedHashMap<>();
            int fields = in.intIn(0, 8);
            for (int f = 0; f < fields; f++) {
                String name = FIELDS[in.intIn(0, FIELDS.length - 1)];
                rule.put(name, value(in));
            }
            rules.add(rule);
        }
        Map<String, String> labels = new LinkedHashMap<>();
        int nl = in.intIn(0, 6);
        for (int i = 0; i < nl; i++) {
            labels.put(LABELS[in.intIn(0, LABELS.length - 1)], in.string(255));
        }
        Relabeling relabeling;
        try {
            relabeling = Relabeling.parse(rules);
        } catch (RelabelConfigException e) {
            if (!e.getMessage().startsWith("relabel rule " + e.ruleIndex() + ", " + e.field() + ": ") || e.ruleIndex() >= rules.size()) {
                throw new IllegalStateException("an error that does not point at its rule and field: " + e.getMessage(), e);
            }
            return;
        }
        SortedMap<String, String> once = relabeling.apply(labels);
        SortedMap<String, String> again = relabeling.apply(labels);
        if (!once.equals(again)) {
            throw new IllegalStateException("the same rules gave " + once + ", then " + again);
        }
        once.forEach((k, v) -> {
            if (!RelabelRule.isLabelName(k) || v.isEmpty()) {
                throw new IllegalStateException("label '" + k + "'='" + v + "' after the rules " + rules);
            }
        });
    }

    private static Object value(FuzzInput in) {
        return switch (in.u8() % 5) {
            case 0 -> in.string(64);
            case 1 -> {
                List<String> l = new ArrayList<>();
                int k = in.intIn(0, 4);
                for (int i = 0; i < k; i++) {
                    l.add(in.bool() ? LABELS[in.intIn(0, LABELS.length - 1)] : in.string(24));
                }
                yield l;
            }
            case 2 -> in.i64();
            case 3 -> null;
            default -> new BigInteger(1, in.bytes(10));
        };
    }

    private static void regex(FuzzInput in) {
        String re = in.string(64);
        String value = in.string(255);
        String template = in.string(32);
        GoRegex g;
        try {
            g = GoRegex.compile(re);
        } catch (IllegalArgumentException e) {
            if (e.getMessage() == null || !e.getMessage().startsWith("invalid regular expression")) {
                throw new IllegalStateException("an unclear error: " + e.getMessage(), e);
            }
            return;
        }
        java.util.regex.MatchResult m = g.match(value);
        if ((m != null) != g.matches(value)) {
            throw new IllegalStateException("match and matches disagree on '" + value + "' for " + re);
        }
        if (m != null) {
            g.expand(template, m);
        }
    }

    /** The rules of RelabelingTest and docs/configuration.md's examples, on the labels a process's series has. */
    public static void writeSeeds(Path dir) throws Exception {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put("comm", "sshd");
        labels.put("executable", "/usr/sbin/sshd");
        labels.put("systemd_unit", "ssh.service");
        labels.put("container_id", "4f2b8e6a9c3d1e0f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f");
        labels.put("a", "some-name-value");
        seed(dir, "drop-comm", labels, rule("action", "drop", "source_labels", List.of("comm"), "regex", "sshd|cron"));
        seed(dir, "replace-template", labels, rule("source_labels", List.of("a"), "regex", "some-([^-]+)-([^,]+)",
                "replacement", "${2}", "target_label", "${1}"));
        seed(dir, "keep-join", labels, rule("action", "keep", "source_labels", List.of("comm", "systemd_unit"), "separator", "@",
                "regex", "(?i)SSHD@.*\\.service"));
        seed(dir, "hashmod", labels, rule("action", "hashmod", "source_labels", List.of("executable"), "modulus", 8L,
                "target_label", "shard"), rule("action", "keepequal", "source_labels", List.of("shard"), "target_label", "b"));
        seed(dir, "labelmap-drop-keep", labels, rule("action", "labelmap", "regex", "(.*)_unit", "replacement", "unit_$1"),
                rule("action", "labeldrop", "regex", "container_.*"), rule("action", "labelkeep", "regex", "[a-z_]+"));
        seed(dir, "case-and-posix", labels, rule("action", "uppercase", "source_labels", List.of("comm"), "target_label", "COMM"),
                rule("action", "lowercase", "source_labels", List.of("executable"), "target_label", "exe"),
                rule("source_labels", List.of("executable"), "regex", "[[:alpha:]/]+(?P<base>[^/]+)\\z", "target_label", "base",
                        "replacement", "$base"));
        seed(dir, "bad-rules", labels, rule("action", "nope", "modulus", "x"), rule("regex", "(?<=x)a"));
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.write(1);
        str(b, "(?P<user>[a-z]+)@(?P<host>[^.]+)\\.[[:alnum:]-]+\\z");
        str(b, "root@web1.example");
        str(b, "${host}:$user:$$:$9");
        Files.write(dir.resolve("seed-regex"), b.toByteArray());
    }

    private static Object[] rule(Object... kv) {
        return kv;
    }

    private static void seed(Path dir, String name, Map<String, String> labels, Object[]... rules) throws Exception {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.write(0);
        b.write(rules.length);
        for (Object[] r : rules) {
            b.write(r.length / 2);
            for (int i = 0; i < r.length; i += 2) {
                b.write(List.of(FIELDS).indexOf((String) r[i]));
                switch (r[i + 1]) {
                    case String s -> {
                        b.write(0);
                        str(b, s);
                    }
                    case List<?> l -> {
                        b.write(1);
                        b.write(l.size());
                        for (Object o : l) {
                            b.write(1); // a name of the pool
                            b.write(List.of(LABELS).indexOf((String) o));
                        }
                    }
                    case Long v -> {
                        b.write(2);
                        for (int k = 0; k < 8; k++) {
                            b.write((int) (v >>> (8 * k)));
                        }
                    }
                    default -> throw new IllegalArgumentException(String.valueOf(r[i + 1]));
                }
            }
        }
        b.write(labels.size());
        for (Map.Entry<String, String> e : labels.entrySet()) {
            b.write(List.of(LABELS).indexOf(e.getKey()));
            str(b, e.getValue());
        }
        Files.write(dir.resolve("seed-" + name), b.toByteArray());
    }

    private static void str(ByteArrayOutputStream b, String s) {
        byte[] x = s.getBytes(StandardCharsets.UTF_8);
        b.write(x.length);
        b.writeBytes(x);
    }
}
