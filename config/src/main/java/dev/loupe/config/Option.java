package dev.loupe.config;

import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * One option, declared once in {@link Options}: its YAML key, its flag, how a value is parsed from either, its
 * default, its help, whether a reload may change it and which commands take it. The YAML loader, both commands'
 * flags, {@code --help}, default.yaml and docs/configuration.md are all derived from these declarations.
 *
 * @param <T> the parsed value's type
 */
public final class Option<T> {
    /** Text to value; throws {@link IllegalArgumentException} with a message for the user. */
    @FunctionalInterface
    interface Parser<T> {
        T parse(String text);
    }

    /** A YAML node to value; {@code key} is the dotted key for messages. */
    @FunctionalInterface
    interface YamlReader<T> {
        T read(String source, Node node, String key) throws ConfigException;
    }

    /** Every occurrence of the flag, in order, over the value so far (the defaults' and the file's). */
    @FunctionalInterface
    interface FlagReader<T> {
        T read(List<String> values, T current);
    }

    private final String key;
    private final String flag;
    private final String label;
    private final YamlReader<T> yaml;
    private final FlagReader<T> flags;
    private String help = "";
    private String defaultYaml;
    private boolean reloadable;
    private boolean flagNeedsNoValue;
    private Set<Command> commands = EnumSet.of(Command.RUN);

    private Option(String key, String flag, String label, YamlReader<T> yaml, FlagReader<T> flags) {
        if (key == null && flag == null) {
            throw new IllegalArgumentException("an option needs a YAML key, a flag or both");
        }
        this.key = key;
        this.flag = flag;
        this.label = label;
        this.yaml = yaml;
        this.flags = flags;
    }

    /** A single value: a YAML scalar, or the flag's last occurrence. */
    static <T> Option<T> value(String key, String flag, String label, Parser<T> parser) {
        return new Option<>(key, flag, label, (source, node, k) -> scalar(source, node, k, parser),
                (values, current) -> parser.parse(values.getLast()));
    }

    /** A list: a YAML sequence, or every occurrence of the flag split at commas; flags replace the file's list. */
    static <E> Option<List<E>> list(String key, String flag, String label, Parser<E> element) {
        return new Option<>(key, flag, label, (source, node, k) -> {
            if (!(node instanceof SequenceNode seq)) {
                throw new ConfigException(source, line(node), k + ": must be a list such as [123, 456]");
            }
            List<E> out = new ArrayList<>();
            for (Node n : seq.getValue()) {
                out.add(scalar(source, n, k, element));
            }
            return List.copyOf(out);
        }, (values, current) -> {
            List<E> out = new ArrayList<>();
            for (String v : values) {
                for (String part : v.split(",")) {
                    out.add(element.parse(part));
                }
            }
            return List.copyOf(out);
        });
    }

    /**
     * A map of names to values: a YAML mapping (which replaces the defaults' map), or {@code NAME=VALUE} per
     * occurrence of the flag, added to (and overriding) the file's.
     */
    static Option<Map<String, String>> map(String key, String flag, String label, Parser<String> name, Parser<String> value) {
        return new Option<>(key, flag, label, (source, node, k) -> {
            Map<String, String> out = new TreeMap<>();
            for (NodeTuple t : mapping(source, node, k)) {
                String n = scalar(source, t.getKeyNode(), k, name);
                out.put(n, scalar(source, t.getValueNode(), k + "." + n, value));
            }
            return Collections.unmodifiableMap(out);
        }, (values, current) -> {
            Map<String, String> out = new TreeMap<>(current == null ? Map.of() : current);
            for (String v : values) {
                int eq = v.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("must be " + label + ", got \"" + v + "\"");
                }
                String n = name.parse(v.substring(0, eq));
                out.put(n, value.parse(v.substring(eq + 1)));
            }
            return Collections.unmodifiableMap(out);
        });
    }

    /** A value with its own YAML shape and flag rules (latency probes). */
    static <T> Option<T> custom(String key, String flag, String label, YamlReader<T> yaml, FlagReader<T> flags) {
        return new Option<>(key, flag, label, yaml, flags);
    }

    Option<T> help(String text) {
        this.help = text;
        return this;
    }

    /** The default as YAML text (what default.yaml shows); parsed like a file's value. */
    Option<T> byDefault(String yamlText) {
        this.defaultYaml = yamlText;
        return this;
    }

    /** A reload (SIGHUP) may change it without a restart. */
    Option<T> reloadable() {
        this.reloadable = true;
        return this;
    }

    /** The flag alone means true ({@code --flag=false} is allowed). */
    Option<T> flagNeedsNoValue() {
        this.flagNeedsNoValue = true;
        return this;
    }

    Option<T> commands(Command first, Command... rest) {
        this.commands = EnumSet.of(first, rest);
        return this;
    }

    /** Dotted YAML key such as {@code remote-store.address}; null for a flag-only option. */
    public String key() {
        return key;
    }

    /** Long flag such as {@code --remote-store-address}; null for a file-only option. */
    public String flag() {
        return flag;
    }

    /** What the flag's value looks like in help, e.g. {@code HOST:PORT}. */
    public String label() {
        return label;
    }

    public String helpText() {
        return help;
    }

    /** The default as YAML text; null when there is none (the option is absent unless given). */
    public String defaultYaml() {
        return defaultYaml;
    }

    public boolean isReloadable() {
        return reloadable;
    }

    public boolean flagTakesNoValue() {
        return flagNeedsNoValue;
    }

    public Set<Command> commands() {
        return Collections.unmodifiableSet(commands);
    }

    T readYaml(String source, Node node) throws ConfigException {
        return yaml.read(source, node, key);
    }

    boolean hasYaml() {
        return key != null && yaml != null;
    }

    T readFlags(List<String> values, T current) {
        return flags.read(values, current);
    }

    @Override
    public String toString() {
        return Objects.requireNonNullElse(key, flag);
    }

    static <T> T scalar(String source, Node v, String key, Parser<T> parser) throws ConfigException {
        if (!(v instanceof ScalarNode scalar)) {
            throw new ConfigException(source, line(v), key + ": must be a single value");
        }
        try {
            return parser.parse(scalar.getValue());
        } catch (IllegalArgumentException e) {
            throw new ConfigException(source, line(v), key + ": " + e.getMessage());
        }
    }

    static List<NodeTuple> mapping(String source, Node v, String key) throws ConfigException {
        if (v instanceof ScalarNode sc && (sc.getValue().isEmpty() || sc.getValue().equals("null"))) {
            return List.of(); // "key:" with nothing under it
        }
        if (!(v instanceof MappingNode m)) {
            throw new ConfigException(source, line(v), key + ": must be a mapping");
        }
        return m.getValue();
    }

    static int line(Node n) {
        return n.getStartMark() == null ? 0 : n.getStartMark().getLine() + 1;
    }
}
