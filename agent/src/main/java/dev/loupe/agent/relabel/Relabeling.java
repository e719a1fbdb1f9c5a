package dev.loupe.agent.relabel;

import dev.loupe.agent.relabel.RelabelRule.Action;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;

/**
 * A list of Prometheus {@code relabel_config} rules, applied in order to a label set. Fields and defaults as
 * Prometheus has them: {@code source_labels}, {@code separator} (";"), {@code regex} ("(.*)", RE2, fully
 * anchored), {@code target_label}, {@code replacement} ("$1", with {@code $1}/{@code ${1}}/{@code $name}
 * references), {@code modulus}, {@code action} (replace, keep, drop, keepequal, dropequal, hashmod, labelmap,
 * labeldrop, labelkeep, lowercase, uppercase; any case). Each rule is validated as Prometheus validates it.
 *
 * <p>Label names are the classic {@code [a-zA-Z_][a-zA-Z0-9_]*} (what Parca accepts), not Prometheus 3's
 * UTF-8 names. As in Prometheus an empty value is no label, and a label set that a rule drops, or that
 * ends with no labels, is empty. Unlike Prometheus, {@code labelmap} skips names that expand to no valid
 * label name (Prometheus sets them, and ingestion refuses them later).
 */
public final class Relabeling {
    private static final Set<String> FIELDS = Set.of("source_labels", "separator", "regex", "target_label",
            "replacement", "modulus", "action");
    private static final BigInteger UINT64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

    private final List<RelabelRule> rules;

    private Relabeling(List<RelabelRule> rules) {
        this.rules = rules;
    }

    /** No rules: {@link #apply} returns its input's non-empty labels. */
    public static Relabeling none() {
        return new Relabeling(List.of());
    }

    /**
     * Rules from what a YAML loader gives for a list of {@code relabel_config} maps: strings (numbers and
     * booleans are taken as their text), a list of strings for {@code source_labels}, an integer for
     * {@code modulus}.
     *
     * @throws RelabelConfigException naming the rule's index and the field
     */
    public static Relabeling parse(List<? extends Map<String, ?>> rules) {
        List<RelabelRule> parsed = new ArrayList<>(rules.size());
        for (int i = 0; i < rules.size(); i++) {
            parsed.add(new RuleParser(i, rules.get(i)).parse());
        }
        return new Relabeling(List.copyOf(parsed));
    }

    public int size() {
        return rules.size();
    }

    /**
     * The labels after every rule, sorted by name; empty when a rule dropped the set. Empty values in the
     * input count as absent.
     */
    public SortedMap<String, String> apply(Map<String, String> labels) {
        SortedMap<String, String> lb = RelabelRule.nonEmpty(labels);
        for (RelabelRule r : rules) {
            if (!r.apply(lb)) {
                return Collections.emptySortedMap();
            }
        }
        return Collections.unmodifiableSortedMap(lb);
    }

    /** One rule's fields, defaults and Prometheus' validation, with errors naming the field. */
    private static final class RuleParser {
        private final int index;
        private final Map<String, ?> raw;

        RuleParser(int index, Map<String, ?> raw) {
            this.index = index;
            this.raw = raw;
        }

        RelabelRule parse() {
            if (raw == null) {
                throw error("rule", "is empty");
            }
            for (String key : raw.keySet()) {
                if (!FIELDS.contains(key)) {
                    throw error(key, "unknown field (fields: action, source_labels, separator, regex, target_label,"
                            + " replacement, modulus)");
                }
            }
            Action action = action();
            List<String> sourceLabels = sourceLabels();
            String separator = string("separator", ";");
            GoRegex regex;
            try {
                regex = GoRegex.compile(string("regex", "(.*)"));
            } catch (IllegalArgumentException e) {
                throw error("regex", e.getMessage());
            }
            String target = string("target_label", "");
            String replacement = string("replacement", "$1");
            long modulus = modulus();
            validate(action, target, replacement, modulus, separator);
            return new RelabelRule(action, sourceLabels, separator, regex, target, replacement, modulus);
        }

        /** Prometheus' {@code Config.Validate}, each complaint pinned to its field. */
        private void validate(Action action, String target, String replacement, long modulus, String separator) {
            String a = action.yamlName();
            if (action == Action.HASHMOD && modulus == 0) {
                throw error("modulus", "hashmod needs a modulus above 0");
            }
            boolean needsTarget = switch (action) {
                case REPLACE, HASHMOD, LOWERCASE, UPPERCASE, KEEPEQUAL, DROPEQUAL -> true;
                default -> false;
            };
            if (needsTarget && target.isEmpty()) {
                throw error("target_label", a + " needs a target_label");
            }
            if (action == Action.REPLACE && !(target.contains("$") ? RelabelRule.isLabelNameTemplate(target)
                    : RelabelRule.isLabelName(target))) {
                throw error("target_label", "\"" + target + "\" is no label name (nor one with $1/${name} references)");
            }
            if (needsTarget && action != Action.REPLACE && !RelabelRule.isLabelName(target)) {
                throw error("target_label", "\"" + target + "\" is no label name ([a-zA-Z_][a-zA-Z0-9_]*)");
            }
            boolean onlySourceAndTarget = action == Action.KEEPEQUAL || action == Action.DROPEQUAL;
            if ((onlySourceAndTarget || action == Action.LOWERCASE || action == Action.UPPERCASE)
                    && !replacement.equals("$1")) {
                throw error("replacement", "cannot be set for " + a);
            }
            if (action == Action.LABELMAP && !RelabelRule.isLabelNameTemplate(replacement)) {
                throw error("replacement", "\"" + replacement + "\" is no label name (nor one with $1/${name} references)");
            }
            if (onlySourceAndTarget) {
                notSet(a + " takes only source_labels and target_label", "regex", "modulus", "separator");
            }
            if (action == Action.LABELDROP || action == Action.LABELKEEP) {
                notSet(a + " takes only regex", "source_labels", "target_label", "modulus", "separator", "replacement");
            }
        }

        /**
         * Fields that must keep their defaults, as Prometheus checks them: given with another value is an
         * error; {@code regex} and {@code source_labels} given at all are.
         */
        private void notSet(String why, String... fields) {
            for (String f : fields) {
                if (!raw.containsKey(f)) {
                    continue;
                }
                boolean isDefault = switch (f) {
                    case "separator" -> ";".equals(text(f));
                    case "replacement" -> "$1".equals(text(f));
                    case "target_label" -> "".equals(text(f));
                    case "modulus" -> raw.get(f) instanceof Number n && n.longValue() == 0;
                    default -> false; // regex and source_labels: given at all
                };
                if (!isDefault) {
                    throw error(f, why);
                }
            }
        }

        private Action action() {
            if (!raw.containsKey("action")) {
                return Action.REPLACE;
            }
            String s = string("action", "replace");
            for (Action a : Action.values()) {
                if (a.yamlName().equals(s.toLowerCase(Locale.ROOT))) {
                    return a;
                }
            }
            throw error("action", "unknown action \"" + s + "\" (replace, keep, drop, keepequal, dropequal, hashmod,"
                    + " labelmap, labeldrop, labelkeep, lowercase, uppercase)");
        }

        private List<String> sourceLabels() {
            if (!raw.containsKey("source_labels")) {
                return List.of();
            }
            if (!(raw.get("source_labels") instanceof List<?> list)) {
                throw error("source_labels", "must be a list of label names, not " + kind(raw.get("source_labels")));
            }
            List<String> names = new ArrayList<>(list.size());
            for (Object o : list) {
                if (!(o instanceof String s) || !RelabelRule.isLabelName(s)) {
                    throw error("source_labels", (o instanceof String s ? "\"" + s + "\"" : kind(o))
                            + " is no label name ([a-zA-Z_][a-zA-Z0-9_]*)");
                }
                names.add(s);
            }
            return List.copyOf(names);
        }

        private long modulus() {
            if (!raw.containsKey("modulus")) {
                return 0;
            }
            Object v = raw.get("modulus");
            BigInteger n;
            try {
                n = switch (v) {
                    case Integer i -> BigInteger.valueOf(i);
                    case Long l -> BigInteger.valueOf(l);
                    case BigInteger b -> b;
                    case String s -> new BigInteger(s.trim());
                    case null, default -> throw new NumberFormatException();
                };
            } catch (NumberFormatException e) {
                throw error("modulus", "must be an unsigned 64-bit integer, not " + kind(v));
            }
            if (n.signum() < 0 || n.compareTo(UINT64_MAX) > 0) {
                throw error("modulus", n + " is not an unsigned 64-bit integer");
            }
            return n.longValue(); // two's complement: the unsigned value's bits
        }

        private String string(String field, String fallback) {
            return raw.containsKey(field) ? text(field) : fallback;
        }

        private String text(String field) {
            Object v = raw.get(field);
            if (v instanceof String || v instanceof Number || v instanceof Boolean) {
                return v.toString();
            }
            throw error(field, "must be a string, not " + kind(v) + (v == null ? " (write '' for an empty string)" : ""));
        }

        private static String kind(Object v) {
            return switch (v) {
                case null -> "nothing";
                case String s -> "\"" + s + "\"";
                case List<?> l -> "a list";
                case Map<?, ?> m -> "a map";
                default -> v.toString();
            };
        }

        private RelabelConfigException error(String field, String problem) {
            return new RelabelConfigException(index, field, problem);
        }
    }
}
