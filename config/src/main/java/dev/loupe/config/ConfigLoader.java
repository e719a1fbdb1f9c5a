package dev.loupe.config;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.composer.Composer;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.parser.ParserImpl;
import org.yaml.snakeyaml.reader.StreamReader;
import org.yaml.snakeyaml.resolver.Resolver;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;

import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Loads YAML configuration over the defaults, walking the keys {@link Options} declares. Works on SnakeYAML's
 * node tree (safe: no object construction) so every error can name its line; unknown keys are errors, with a
 * suggestion. A file may hold the keys of both commands (one file for an agent and a relay on the same host).
 */
public final class ConfigLoader {
    private static final Map<String, Option<?>> BY_KEY = byKey();
    /** Dotted prefix ("" for the top) → the names allowed under it, in declaration order. */
    private static final Map<String, Set<String>> CHILDREN = children();
    private static final OptionValues DEFAULTS = loadDefaults();
    private static final LoupeConfig DEFAULT_CONFIG = buildDefaults();

    private ConfigLoader() {}

    static LoupeConfig defaults() {
        return DEFAULT_CONFIG;
    }

    static OptionValues defaultValues() {
        return DEFAULTS.withoutLines();
    }

    private static OptionValues loadDefaults() {
        try {
            return apply(new OptionValues(), ConfigDocs.defaultYaml(), "the option table's defaults");
        } catch (ConfigException e) {
            throw new IllegalStateException("the declared defaults are invalid: " + e.getMessage(), e);
        }
    }

    private static LoupeConfig buildDefaults() {
        try {
            return LoupeConfig.build(DEFAULTS, Optional.empty(), "defaults");
        } catch (ConfigException e) {
            throw new IllegalStateException("the declared defaults are invalid: " + e.getMessage(), e);
        }
    }

    /** Reads {@code file} over the defaults. */
    public static LoupeConfig load(Path file) throws ConfigException {
        return LoupeConfig.build(loadValues(file), Optional.of(file), file.toString());
    }

    static OptionValues loadValues(Path file) throws ConfigException {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new ConfigException(file.toString(), 0, "no such file");
        } catch (IOException e) {
            throw new ConfigException(file.toString(), 0, "cannot read: " + e.getMessage());
        }
        return apply(defaultValues(), text, file.toString());
    }

    /** Parses YAML text over the defaults; {@code sourceName} is used in error messages. */
    public static LoupeConfig parse(String yaml, String sourceName) throws ConfigException {
        return LoupeConfig.build(apply(defaultValues(), yaml, sourceName), Optional.empty(), sourceName);
    }

    static OptionValues apply(OptionValues into, String text, String source) throws ConfigException {
        Node root;
        try {
            LoaderOptions opts = new LoaderOptions();
            opts.setAllowDuplicateKeys(false);
            opts.setMaxAliasesForCollections(10);
            opts.setCodePointLimit(1 << 20);
            // What Yaml.compose does, without the Yaml facade: its representer's bean support links java.beans
            // (java.desktop), which the packaged runtime leaves out.
            root = new Composer(new ParserImpl(new StreamReader(new StringReader(text)), opts), new Resolver(), opts).getSingleNode();
        } catch (MarkedYAMLException e) {
            Mark m = e.getProblemMark() != null ? e.getProblemMark() : e.getContextMark();
            throw new ConfigException(source, m == null ? 0 : m.getLine() + 1, "invalid YAML: " + e.getProblem());
        } catch (YAMLException e) {
            throw new ConfigException(source, 0, "invalid YAML: " + e.getMessage());
        }
        if (root == null) {
            return into; // empty file: all defaults
        }
        if (!(root instanceof MappingNode map)) {
            throw new ConfigException(source, Option.line(root), "the top level must be a mapping of keys such as frequency: 19");
        }
        rejectDuplicateKeys(source, root);
        walk(into, source, map.getValue(), "");
        return into;
    }

    /**
     * A key given twice in one mapping, at any depth, is an error at its second line: SnakeYAML's own check runs in
     * its constructor, which this loader does not use (only the composer), and a silent "last one wins" would hide a
     * typo'd edit of a long file.
     */
    private static void rejectDuplicateKeys(String source, Node node) throws ConfigException {
        if (node instanceof MappingNode m) {
            java.util.Set<String> seen = new java.util.HashSet<>();
            for (NodeTuple t : m.getValue()) {
                if (t.getKeyNode() instanceof ScalarNode k && !seen.add(k.getValue())) {
                    throw new ConfigException(source, Option.line(k), "invalid YAML: duplicate key " + k.getValue());
                }
                rejectDuplicateKeys(source, t.getValueNode());
            }
        } else if (node instanceof org.yaml.snakeyaml.nodes.SequenceNode seq) {
            for (Node n : seq.getValue()) {
                rejectDuplicateKeys(source, n);
            }
        }
    }

    private static void walk(OptionValues into, String source, List<NodeTuple> tuples, String prefix) throws ConfigException {
        for (NodeTuple t : tuples) {
            if (!(t.getKeyNode() instanceof ScalarNode k)) {
                throw new ConfigException(source, Option.line(t.getKeyNode()), "keys must be plain words");
            }
            String full = prefix + k.getValue();
            Node v = t.getValueNode();
            Option<?> option = BY_KEY.get(full);
            if (option != null) {
                set(into, option, option.readYaml(source, v));
                into.line(full, Option.line(v));
            } else if (CHILDREN.containsKey(full + ".")) {
                List<NodeTuple> inner = Option.mapping(source, v, full);
                if (!inner.isEmpty()) {
                    into.line(full, Option.line(v));
                }
                walk(into, source, inner, full + ".");
            } else {
                List<String> allowed = CHILDREN.get(prefix).stream().toList();
                String hint = closest(k.getValue(), allowed).map(c -> " (did you mean " + prefix + c + "?)").orElse("");
                throw new ConfigException(source, Option.line(k), "unknown key " + full + hint + "; known keys: "
                        + String.join(", ", allowed.stream().map(a -> prefix + a).toList()));
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static <T> void set(OptionValues into, Option<T> option, Object value) {
        into.set(option, (T) value);
    }

    private static Map<String, Option<?>> byKey() {
        Map<String, Option<?>> m = new LinkedHashMap<>();
        for (Option<?> o : Options.ALL) {
            if (o.hasYaml() && m.put(o.key(), o) != null) {
                throw new IllegalStateException("two options declare the YAML key " + o.key());
            }
        }
        return m;
    }

    private static Map<String, Set<String>> children() {
        Map<String, Set<String>> m = new LinkedHashMap<>();
        for (String key : byKey().keySet()) {
            int from = 0;
            while (true) {
                int dot = key.indexOf('.', from);
                String prefix = key.substring(0, from);
                m.computeIfAbsent(prefix, p -> new LinkedHashSet<>()).add(dot < 0 ? key.substring(from) : key.substring(from, dot));
                if (dot < 0) {
                    break;
                }
                from = dot + 1;
            }
        }
        return m;
    }

    static Optional<String> closest(String word, List<String> candidates) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String c : candidates) {
            int d = editDistance(word, c);
            if (d < bestDistance) {
                bestDistance = d;
                best = c;
            }
        }
        return bestDistance <= Math.max(2, word.length() / 3) ? Optional.ofNullable(best) : Optional.empty();
    }

    private static int editDistance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int sub = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                cur[j] = Math.min(sub, Math.min(prev[j] + 1, cur[j - 1] + 1));
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }
}
