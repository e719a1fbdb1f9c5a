package dev.loupe.config;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

import java.io.IOException;
import java.io.InputStream;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Loads YAML configuration over the embedded defaults. Works on SnakeYAML's node tree (safe: no object
 * construction) so every error can name its line; unknown keys are errors, with a suggestion.
 */
public final class ConfigLoader {
    private static final String DEFAULT_RESOURCE = "default.yaml";
    private static final List<String> TOP_KEYS = List.of("frequency", "interval", "output", "pids", "http", "unwind",
            "remote-store", "kafka", "spool", "external-labels", "probes", "probes-max-functions");
    private static final List<String> REMOTE_STORE_KEYS = List.of("address", "insecure", "insecure-skip-verify",
            "bearer-token-file", "ca-file", "cert-file", "key-file", "headers", "timeout", "batch-max-bytes");
    private static final List<String> KAFKA_KEYS = List.of("bootstrap-servers", "topic", "producer", "transactional");
    private static final List<String> SPOOL_KEYS = List.of("dir", "max-bytes");
    static final long MIN_SPOOL = 1L << 20;
    static final long MAX_SPOOL = 1L << 40;
    static final long MIN_BATCH = 64L << 10;
    static final long MAX_BATCH = 64L << 20; // Parca's gRPC message limit
    private static final List<String> UNWIND_KEYS = List.of("table-budget", "tables");
    private static final List<String> HTTP_KEYS = List.of("address");
    private static final LoupeConfig DEFAULTS = loadDefaults();

    private ConfigLoader() {}

    static LoupeConfig defaults() {
        return DEFAULTS;
    }

    private static LoupeConfig loadDefaults() {
        try (InputStream in = ConfigLoader.class.getResourceAsStream(DEFAULT_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("embedded " + DEFAULT_RESOURCE + " missing from the jar");
            }
            Settings s = new Settings(1, Duration.ofSeconds(10), Path.of("profiles"), Set.of(), null, null, 64L << 20);
            return apply(s, new String(in.readAllBytes(), StandardCharsets.UTF_8), "default.yaml (embedded)")
                    .build(null, "default.yaml (embedded)");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (ConfigException e) {
            throw new IllegalStateException("embedded defaults are invalid: " + e.getMessage(), e);
        }
    }

    /** Reads {@code file} over the defaults. */
    public static LoupeConfig load(Path file) throws ConfigException {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new ConfigException(file.toString(), 0, "no such file");
        } catch (IOException e) {
            throw new ConfigException(file.toString(), 0, "cannot read: " + e.getMessage());
        }
        return apply(Settings.of(DEFAULTS), text, file.toString()).build(file, file.toString());
    }

    /** Parses YAML text over the defaults; {@code sourceName} is used in error messages. */
    public static LoupeConfig parse(String yaml, String sourceName) throws ConfigException {
        return apply(Settings.of(DEFAULTS), yaml, sourceName).build(null, sourceName);
    }

    static Settings apply(Settings s, String text, String source) throws ConfigException {
        Node root;
        try {
            LoaderOptions opts = new LoaderOptions();
            opts.setAllowDuplicateKeys(false);
            opts.setMaxAliasesForCollections(10);
            opts.setCodePointLimit(1 << 20);
            root = new Yaml(new SafeConstructor(opts)).compose(new StringReader(text));
        } catch (MarkedYAMLException e) {
            Mark m = e.getProblemMark() != null ? e.getProblemMark() : e.getContextMark();
            throw new ConfigException(source, m == null ? 0 : m.getLine() + 1, "invalid YAML: " + e.getProblem());
        } catch (YAMLException e) {
            throw new ConfigException(source, 0, "invalid YAML: " + e.getMessage());
        }
        if (root == null) {
            return s; // empty file: all defaults
        }
        if (!(root instanceof MappingNode map)) {
            throw new ConfigException(source, line(root), "the top level must be a mapping of keys such as frequency: 19");
        }
        for (NodeTuple t : map.getValue()) {
            String key = key(t, source, TOP_KEYS, "");
            Node v = t.getValueNode();
            switch (key) {
                case "frequency" -> s.frequency = value(source, v, key, Values::frequency);
                case "interval" -> s.interval = value(source, v, key, Values::interval);
                case "output" -> {
                    String out = value(source, v, key, x -> x);
                    s.localFiles = !out.trim().equals("off");
                    if (s.localFiles) {
                        s.output = value(source, v, key, ConfigLoader::nonEmptyPath);
                    }
                }
                case "remote-store" -> remoteStore(s, source, v);
                case "kafka" -> kafka(s, source, v);
                case "spool" -> {
                    for (NodeTuple u : mapping(source, v, "spool")) {
                        String k = key(u, source, SPOOL_KEYS, "spool.");
                        if (k.equals("dir")) {
                            s.spoolDir = value(source, u.getValueNode(), "spool.dir", ConfigLoader::nonEmptyPath);
                        } else {
                            s.spoolMaxBytes = value(source, u.getValueNode(), "spool.max-bytes", x -> Values.size(x, MIN_SPOOL, MAX_SPOOL));
                        }
                    }
                }
                case "external-labels" -> {
                    s.externalLabels.clear(); // a file's map replaces the defaults'
                    for (NodeTuple u : mapping(source, v, "external-labels")) {
                        String name = value(source, u.getKeyNode(), "external-labels", Values::labelName);
                        s.externalLabels.put(name, value(source, u.getValueNode(), "external-labels." + name, x -> x));
                    }
                }
                case "pids" -> s.pids = pids(source, v);
                case "probes" -> s.probes = ProbeConfigParser.fromYaml(source, v);
                case "probes-max-functions" -> s.probesMaxFunctions = value(source, v, key, ProbeConfigParser::maxFunctions);
                case "http" -> {
                    if (!(v instanceof MappingNode http)) {
                        throw new ConfigException(source, line(v), "http: must be a mapping with address:");
                    }
                    for (NodeTuple h : http.getValue()) {
                        key(h, source, HTTP_KEYS, "http.");
                        s.http = Optional.ofNullable(value(source, h.getValueNode(), "http.address", Values::httpAddress));
                    }
                }
                case "unwind" -> {
                    if (!(v instanceof MappingNode unwind)) {
                        throw new ConfigException(source, line(v), "unwind: must be a mapping with table-budget:");
                    }
                    for (NodeTuple u : unwind.getValue()) {
                        if (key(u, source, UNWIND_KEYS, "unwind.").equals("tables")) {
                            s.unwindTables = value(source, u.getValueNode(), "unwind.tables", Values::onOff);
                        } else {
                            s.unwindTableBudget = value(source, u.getValueNode(), "unwind.table-budget", Values::tableBudget);
                        }
                    }
                }
                default -> throw new IllegalStateException(key);
            }
        }
        return s;
    }

    private static List<NodeTuple> mapping(String source, Node v, String key) throws ConfigException {
        if (v instanceof ScalarNode sc && (sc.getValue().isEmpty() || sc.getValue().equals("null"))) {
            return List.of(); // "key:" with nothing under it
        }
        if (!(v instanceof MappingNode m)) {
            throw new ConfigException(source, line(v), key + ": must be a mapping");
        }
        return m.getValue();
    }

    private static void remoteStore(Settings s, String source, Node v) throws ConfigException {
        List<NodeTuple> tuples = mapping(source, v, "remote-store");
        if (!tuples.isEmpty()) {
            s.remoteStoreLine = line(v);
        }
        for (NodeTuple u : tuples) {
            String k = key(u, source, REMOTE_STORE_KEYS, "remote-store.");
            Node n = u.getValueNode();
            String name = "remote-store." + k;
            switch (k) {
                case "address" -> s.remoteAddress = value(source, n, name, t -> t.isBlank() ? null : Values.hostPort(t));
                case "insecure" -> s.remoteInsecure = value(source, n, name, Values::bool);
                case "insecure-skip-verify" -> s.remoteSkipVerify = value(source, n, name, Values::bool);
                case "bearer-token-file" -> s.remoteTokenFile = value(source, n, name, ConfigLoader::optionalPath);
                case "ca-file" -> s.remoteCaFile = value(source, n, name, ConfigLoader::optionalPath);
                case "cert-file" -> s.remoteCertFile = value(source, n, name, ConfigLoader::optionalPath);
                case "key-file" -> s.remoteKeyFile = value(source, n, name, ConfigLoader::optionalPath);
                case "timeout" -> s.remoteTimeout = value(source, n, name, ConfigLoader::requestTimeout);
                case "batch-max-bytes" -> s.remoteBatchMaxBytes = value(source, n, name, t -> Values.size(t, MIN_BATCH, MAX_BATCH));
                case "headers" -> {
                    s.remoteHeaders.clear();
                    for (NodeTuple h : mapping(source, n, name)) {
                        String header = value(source, h.getKeyNode(), name, Values::headerName);
                        s.remoteHeaders.put(header, value(source, h.getValueNode(), name + "." + header, Values::headerValue));
                    }
                }
                default -> throw new IllegalStateException(k);
            }
        }
    }

    private static void kafka(Settings s, String source, Node v) throws ConfigException {
        for (NodeTuple u : mapping(source, v, "kafka")) {
            String k = key(u, source, KAFKA_KEYS, "kafka.");
            Node n = u.getValueNode();
            switch (k) {
                case "bootstrap-servers" -> s.kafkaServers = value(source, n, "kafka.bootstrap-servers", t -> t.isBlank() ? null : Values.hostPorts(t));
                case "topic" -> s.kafkaTopic = value(source, n, "kafka.topic", Values::topic);
                case "transactional" -> s.kafkaTransactional = value(source, n, "kafka.transactional", Values::bool);
                case "producer" -> {
                    s.kafkaProducer.clear();
                    for (NodeTuple p : mapping(source, n, "kafka.producer")) {
                        String prop = value(source, p.getKeyNode(), "kafka.producer", t -> t.trim());
                        s.kafkaProducer.put(prop, value(source, p.getValueNode(), "kafka.producer." + prop, t -> t));
                    }
                }
                default -> throw new IllegalStateException(k);
            }
        }
    }

    static java.time.Duration requestTimeout(String text) {
        java.time.Duration d = Values.duration(text);
        if (d.compareTo(java.time.Duration.ofMillis(100)) < 0 || d.compareTo(java.time.Duration.ofMinutes(10)) > 0) {
            throw new IllegalArgumentException("must be between 100ms and 10m, got " + text);
        }
        return d;
    }

    private static Path optionalPath(String text) {
        return text.isBlank() ? null : Path.of(text.trim());
    }

    private static Path nonEmptyPath(String text) {
        if (text.isBlank()) {
            throw new IllegalArgumentException("must name a directory");
        }
        return Path.of(text);
    }

    private static String key(NodeTuple t, String source, List<String> allowed, String prefix) throws ConfigException {
        if (!(t.getKeyNode() instanceof ScalarNode k)) {
            throw new ConfigException(source, line(t.getKeyNode()), "keys must be plain words");
        }
        String key = k.getValue();
        if (!allowed.contains(key)) {
            String hint = closest(key, allowed).map(c -> " (did you mean " + prefix + c + "?)").orElse("");
            throw new ConfigException(source, line(k), "unknown key " + prefix + key + hint + "; known keys: "
                    + String.join(", ", allowed.stream().map(a -> prefix + a).toList()));
        }
        return key;
    }

    private interface Parser<T> {
        T parse(String text);
    }

    private static <T> T value(String source, Node v, String key, Parser<T> parser) throws ConfigException {
        if (!(v instanceof ScalarNode scalar)) {
            throw new ConfigException(source, line(v), key + ": must be a single value");
        }
        try {
            return parser.parse(scalar.getValue());
        } catch (IllegalArgumentException e) {
            throw new ConfigException(source, line(v), key + ": " + e.getMessage());
        }
    }

    private static Set<Integer> pids(String source, Node v) throws ConfigException {
        if (!(v instanceof SequenceNode seq)) {
            throw new ConfigException(source, line(v), "pids: must be a list such as [123, 456]");
        }
        Set<Integer> pids = new TreeSet<>();
        for (Node n : seq.getValue()) {
            pids.add(value(source, n, "pids", Values::pid));
        }
        return pids;
    }

    private static int line(Node n) {
        return n.getStartMark() == null ? 0 : n.getStartMark().getLine() + 1;
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

    /** Mutable settings while merging layers. */
    static final class Settings {
        int frequency;
        Duration interval;
        Path output;
        Set<Integer> pids;
        Optional<InetSocketAddress> http;
        Duration duration;
        long unwindTableBudget;
        boolean unwindTables = true;
        boolean localFiles = true;
        int remoteStoreLine;
        String remoteAddress;
        boolean remoteInsecure;
        boolean remoteSkipVerify;
        Path remoteTokenFile;
        Path remoteCaFile;
        Path remoteCertFile;
        Path remoteKeyFile;
        Map<String, String> remoteHeaders = new TreeMap<>();
        Duration remoteTimeout = RemoteStore.DEFAULT_TIMEOUT;
        long remoteBatchMaxBytes = RemoteStore.DEFAULT_BATCH_MAX_BYTES;
        String kafkaServers;
        String kafkaTopic = KafkaSettings.DEFAULT_TOPIC;
        Map<String, String> kafkaProducer = new TreeMap<>();
        boolean kafkaTransactional;
        Path spoolDir = Path.of("/var/lib/loupe/spool");
        long spoolMaxBytes = 1L << 30;
        Map<String, String> externalLabels = new TreeMap<>();
        List<ProbeConfig> probes = List.of();
        int probesMaxFunctions = ProbeConfigParser.DEFAULT_MAX_FUNCTIONS;

        Settings(int frequency, Duration interval, Path output, Set<Integer> pids, InetSocketAddress http, Duration duration,
                 long unwindTableBudget) {
            this.unwindTableBudget = unwindTableBudget;
            this.frequency = frequency;
            this.interval = interval;
            this.output = output;
            this.pids = new HashSet<>(pids);
            this.http = Optional.ofNullable(http);
            this.duration = duration;
        }

        static Settings of(LoupeConfig c) {
            Settings s = new Settings(c.frequencyHz(), c.interval(), c.outputDir(), c.pids(), c.httpAddress().orElse(null),
                    c.duration().orElse(null), c.unwindTableBudget());
            s.unwindTables = c.unwindTables();
            s.localFiles = c.localFiles();
            c.remoteStore().ifPresent(r -> {
                s.remoteAddress = r.address();
                s.remoteInsecure = r.insecure();
                s.remoteSkipVerify = r.insecureSkipVerify();
                s.remoteTokenFile = r.bearerTokenFile().orElse(null);
                s.remoteCaFile = r.caFile().orElse(null);
                s.remoteCertFile = r.certFile().orElse(null);
                s.remoteKeyFile = r.keyFile().orElse(null);
                s.remoteHeaders.putAll(r.headers());
                s.remoteTimeout = r.timeout();
                s.remoteBatchMaxBytes = r.batchMaxBytes();
            });
            c.kafka().ifPresent(k -> {
                s.kafkaServers = k.bootstrapServers();
                s.kafkaTopic = k.topic();
                s.kafkaProducer.putAll(k.producer());
                s.kafkaTransactional = k.transactional();
            });
            s.spoolDir = c.spoolDir();
            s.spoolMaxBytes = c.spoolMaxBytes();
            s.externalLabels.putAll(c.externalLabels());
            s.probes = c.probes();
            s.probesMaxFunctions = c.probesMaxFunctions();
            return s;
        }

        LoupeConfig build(Path source, String sourceName) throws ConfigException {
            Optional<RemoteStore> remote = Optional.empty();
            if (remoteAddress != null) {
                if ((remoteCertFile == null) != (remoteKeyFile == null)) {
                    throw new ConfigException(sourceName, remoteStoreLine,
                            "remote-store: cert-file and key-file go together (mutual TLS needs both)");
                }
                if (remoteInsecure && (remoteSkipVerify || remoteCaFile != null || remoteCertFile != null)) {
                    throw new ConfigException(sourceName, remoteStoreLine,
                            "remote-store: insecure (plaintext) cannot be combined with TLS settings");
                }
                remote = Optional.of(new RemoteStore(remoteAddress, remoteInsecure, remoteSkipVerify,
                        Optional.ofNullable(remoteTokenFile), Optional.ofNullable(remoteCaFile), Optional.ofNullable(remoteCertFile),
                        Optional.ofNullable(remoteKeyFile), remoteHeaders, remoteTimeout, remoteBatchMaxBytes));
            } else if (remoteStoreLine > 0 && (remoteInsecure || remoteSkipVerify || remoteTokenFile != null
                    || remoteCaFile != null || remoteCertFile != null || !remoteHeaders.isEmpty())) {
                throw new ConfigException(sourceName, remoteStoreLine, "remote-store: address is missing (host:port of Parca)");
            }
            Optional<KafkaSettings> k = kafkaServers == null ? Optional.empty()
                    : Optional.of(new KafkaSettings(kafkaServers, kafkaTopic, kafkaProducer, kafkaTransactional));
            return new LoupeConfig(frequency, interval, output, pids, http, Optional.ofNullable(duration),
                    Optional.ofNullable(source), unwindTableBudget, unwindTables, localFiles, remote, k, spoolDir, spoolMaxBytes,
                    externalLabels, probes, probesMaxFunctions);
        }
    }
}
