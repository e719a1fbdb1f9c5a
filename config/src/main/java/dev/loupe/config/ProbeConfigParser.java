package dev.loupe.config;

import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Parses latency probe targets: the {@code --probe BINARY:FUNCTION} / {@code --probe pid=PID:FUNCTION} flag
 * and the YAML {@code probes:} list. Kept apart from {@link ConfigLoader} so probe syntax lives in one place.
 */
final class ProbeConfigParser {
    static final int DEFAULT_MAX_FUNCTIONS = 1000;
    static final int MAX_MAX_FUNCTIONS = 65536;
    private static final List<String> KEYS = List.of("binary", "pid", "functions", "stacks");
    private static final String EXAMPLE = "{binary: /usr/bin/app, functions: [\"main.*\"]} or {pid: 123, functions: [main.work]}";

    private ProbeConfigParser() {}

    /**
     * One {@code --probe} value, split at the first ':' (so C++ names such as {@code ns::f} stay whole).
     */
    static ProbeConfig fromFlag(String value) {
        int colon = value.indexOf(':');
        if (colon <= 0 || colon == value.length() - 1) {
            throw new IllegalArgumentException("expected BINARY:FUNCTION or pid=PID:FUNCTION, got \"" + value + "\"");
        }
        String target = value.substring(0, colon).trim();
        String function = value.substring(colon + 1);
        if (target.startsWith("pid=")) {
            return ProbeConfig.ofPid(Values.pid(target.substring(4)), List.of(function), false);
        }
        if (target.isEmpty()) {
            throw new IllegalArgumentException("no binary before ':' in \"" + value + "\"");
        }
        return ProbeConfig.ofBinary(Path.of(target), List.of(function), false);
    }

    /** Flags naming the same target become one entry, functions in flag order. */
    static List<ProbeConfig> merge(List<ProbeConfig> probes) {
        Map<String, List<String>> functions = new LinkedHashMap<>();
        Map<String, ProbeConfig> first = new LinkedHashMap<>();
        for (ProbeConfig p : probes) {
            first.putIfAbsent(p.target(), p);
            List<String> fs = functions.computeIfAbsent(p.target(), t -> new ArrayList<>());
            for (String f : p.functions()) {
                if (!fs.contains(f)) {
                    fs.add(f);
                }
            }
        }
        List<ProbeConfig> out = new ArrayList<>();
        first.forEach((t, p) -> out.add(new ProbeConfig(p.binary(), p.pid(), functions.get(t), p.stacks())));
        return out;
    }

    static int maxFunctions(String text) {
        int n;
        try {
            n = Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("must be a whole number, got \"" + text + "\"");
        }
        if (n < 1 || n > MAX_MAX_FUNCTIONS) {
            throw new IllegalArgumentException("must be between 1 and " + MAX_MAX_FUNCTIONS + ", got " + n);
        }
        return n;
    }

    /** The YAML {@code probes:} list; errors name the file and the line of the offending node. */
    static List<ProbeConfig> fromYaml(String source, Node v) throws ConfigException {
        if (!(v instanceof SequenceNode seq)) {
            throw new ConfigException(source, line(v), "probes: must be a list of " + EXAMPLE);
        }
        List<ProbeConfig> out = new ArrayList<>();
        for (Node item : seq.getValue()) {
            out.add(entry(source, item));
        }
        return out;
    }

    private static ProbeConfig entry(String source, Node item) throws ConfigException {
        if (!(item instanceof MappingNode map)) {
            throw new ConfigException(source, line(item), "probes: each entry must be a mapping such as " + EXAMPLE);
        }
        Path binary = null;
        Integer pid = null;
        List<String> functions = null;
        boolean stacks = false;
        for (NodeTuple t : map.getValue()) {
            if (!(t.getKeyNode() instanceof ScalarNode k)) {
                throw new ConfigException(source, line(t.getKeyNode()), "keys must be plain words");
            }
            String key = k.getValue();
            Node n = t.getValueNode();
            switch (key) {
                case "binary" -> {
                    String text = scalar(source, n, "probes.binary");
                    if (text.isBlank()) {
                        throw new ConfigException(source, line(n), "probes.binary: must name an executable or library");
                    }
                    binary = Path.of(text.trim());
                }
                case "pid" -> pid = parse(source, n, "probes.pid", Values::pid);
                case "stacks" -> stacks = parse(source, n, "probes.stacks", Values::bool);
                case "functions" -> functions = functions(source, n);
                default -> {
                    String hint = ConfigLoader.closest(key, KEYS).map(c -> " (did you mean probes." + c + "?)").orElse("");
                    throw new ConfigException(source, line(k), "unknown key probes." + key + hint + "; known keys: "
                            + String.join(", ", KEYS.stream().map(s -> "probes." + s).toList()));
                }
            }
        }
        if (binary != null && pid != null) {
            throw new ConfigException(source, line(item), "probes: an entry names either binary or pid, not both");
        }
        if (binary == null && pid == null) {
            throw new ConfigException(source, line(item), "probes: an entry needs binary: PATH or pid: N");
        }
        if (functions == null) {
            throw new ConfigException(source, line(item), "probes: an entry needs functions: [NAME or GLOB, ...]");
        }
        return binary != null ? ProbeConfig.ofBinary(binary, functions, stacks) : ProbeConfig.ofPid(pid, functions, stacks);
    }

    private static List<String> functions(String source, Node n) throws ConfigException {
        List<String> out = new ArrayList<>();
        if (n instanceof ScalarNode s) { // a single name is accepted as a list of one
            out.add(s.getValue());
        } else if (n instanceof SequenceNode seq) {
            for (Node f : seq.getValue()) {
                out.add(scalar(source, f, "probes.functions"));
            }
        } else {
            throw new ConfigException(source, line(n), "probes.functions: must be a list of function names or globs");
        }
        if (out.isEmpty()) {
            throw new ConfigException(source, line(n), "probes.functions: the list is empty");
        }
        for (int i = 0; i < out.size(); i++) {
            if (out.get(i).isBlank()) {
                Node at = n instanceof SequenceNode seq ? seq.getValue().get(i) : n;
                throw new ConfigException(source, line(at), "probes.functions: an empty function name");
            }
        }
        return out;
    }

    private interface Parser<T> {
        T parse(String text);
    }

    private static <T> T parse(String source, Node n, String key, Parser<T> p) throws ConfigException {
        String text = scalar(source, n, key);
        try {
            return p.parse(text);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(source, line(n), key + ": " + e.getMessage());
        }
    }

    private static String scalar(String source, Node n, String key) throws ConfigException {
        if (!(n instanceof ScalarNode s)) {
            throw new ConfigException(source, line(n), key + ": must be a single value");
        }
        return s.getValue();
    }

    private static int line(Node n) {
        return n.getStartMark() == null ? 0 : n.getStartMark().getLine() + 1;
    }
}
