package dev.loupe.config;

import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The YAML {@code relabel:} list as plain values: a list of maps from field names to a string, an integer (a
 * YAML integer in decimal), a list of strings, or null (a field with nothing after it). Only the shape is
 * checked here, with file:line errors; what the fields mean (Prometheus' {@code relabel_config}) is the
 * agent's to check, since config does not know the agent's relabeling.
 */
final class RelabelYaml {
    static final String EXAMPLE = "[{action: drop, source_labels: [comm], regex: sshd}]";

    private RelabelYaml() {}

    static List<Map<String, Object>> read(String source, Node node, String key) throws ConfigException {
        if (node instanceof ScalarNode s && s.getTag().equals(Tag.NULL)) {
            return List.of(); // "relabel:" with nothing under it
        }
        if (!(node instanceof SequenceNode seq)) {
            throw new ConfigException(source, Option.line(node), key + ": must be a list of rules such as " + EXAMPLE);
        }
        List<Map<String, Object>> rules = new ArrayList<>();
        for (Node item : seq.getValue()) {
            rules.add(rule(source, item, key));
        }
        return Collections.unmodifiableList(rules);
    }

    private static Map<String, Object> rule(String source, Node item, String key) throws ConfigException {
        if (!(item instanceof MappingNode map)) {
            throw new ConfigException(source, Option.line(item), key + ": each rule must be a mapping such as " + EXAMPLE);
        }
        Map<String, Object> rule = new LinkedHashMap<>(); // a null value stays: the agent says what the field needs
        for (NodeTuple t : map.getValue()) {
            if (!(t.getKeyNode() instanceof ScalarNode k)) {
                throw new ConfigException(source, Option.line(t.getKeyNode()), key + ": field names must be plain words");
            }
            rule.put(k.getValue(), value(source, t.getValueNode(), key + "." + k.getValue()));
        }
        return Collections.unmodifiableMap(rule);
    }

    private static Object value(String source, Node n, String key) throws ConfigException {
        return switch (n) {
            case ScalarNode s -> scalar(s);
            case SequenceNode seq -> {
                List<String> out = new ArrayList<>();
                for (Node e : seq.getValue()) {
                    if (!(e instanceof ScalarNode s) || s.getTag().equals(Tag.NULL)) {
                        throw new ConfigException(source, Option.line(e), key + ": a list may hold only label names");
                    }
                    out.add(s.getValue());
                }
                yield List.copyOf(out);
            }
            default -> throw new ConfigException(source, Option.line(n), key + ": must be a single value or a list, not a mapping");
        };
    }

    /** A YAML null as null, a decimal integer as a Long (BigInteger past its range), anything else as its text. */
    private static Object scalar(ScalarNode s) {
        if (s.getTag().equals(Tag.NULL)) {
            return null;
        }
        if (s.getTag().equals(Tag.INT) && s.getValue().matches("[-+]?(0|[1-9][0-9]*)")) {
            BigInteger n = new BigInteger(s.getValue());
            return n.bitLength() < 64 ? (Object) n.longValue() : n;
        }
        return s.getValue();
    }
}
