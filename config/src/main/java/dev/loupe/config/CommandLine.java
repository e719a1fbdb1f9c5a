package dev.loupe.config;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * {@code loupe run} arguments: {@code --flag value} or {@code --flag=value}. Flags override the
 * {@code --config} file, which overrides the embedded defaults.
 */
public final class CommandLine {
    /** @param help {@code --help} was given: print {@link #usage()} and do nothing else */
    public record Parsed(boolean help, LoupeConfig config) {}

    private static final Map<String, String> FLAGS = new java.util.LinkedHashMap<>();

    static {
        LoupeConfig d = LoupeConfig.defaults();
        FLAGS.put("--config FILE", "YAML configuration file (flags override it)");
        FLAGS.put("--frequency HZ", "samples per second per CPU, 1.." + Values.MAX_HZ + " (default " + d.frequencyHz() + ")");
        FLAGS.put("--interval DURATION", "one profile per interval, 1s..1h (default " + d.interval().toSeconds() + "s)");
        FLAGS.put("--duration DURATION", "stop after this long, e.g. 30s (default: run until SIGTERM)");
        FLAGS.put("--output DIR|off", "directory for gzipped pprof files (default " + d.outputDir() + "; off: no files)");
        FLAGS.put("--pid PID", "profile only this process; repeat or comma-separate (default: every process)");
        FLAGS.put("--http HOST:PORT|off", "local HTTP endpoint (default " + d.httpAddress()
                .map(a -> a.getHostString() + ":" + a.getPort()).orElse("off") + ")");
        FLAGS.put("--unwind-table-budget SIZE", "kernel memory for unwind tables, e.g. 64MiB (default "
                + (d.unwindTableBudget() >> 20) + "MiB)");
        FLAGS.put("--unwind-tables on|off", "walk user stacks with eh_frame tables (default on; off: frame pointers only)");
        FLAGS.put("--remote-store-address HOST:PORT", "send profiles to this Parca server (gRPC WriteRaw; TLS unless --remote-store-insecure)");
        FLAGS.put("--remote-store-insecure", "plaintext HTTP/2 to the remote store (no TLS)");
        FLAGS.put("--remote-store-insecure-skip-verify", "TLS without verifying the server's certificate");
        FLAGS.put("--remote-store-bearer-token-file FILE", "send the bearer token read from FILE");
        FLAGS.put("--kafka-bootstrap-servers HOST:PORT[,..]", "send profiles to Kafka");
        FLAGS.put("--kafka-topic TOPIC", "Kafka topic (default " + KafkaSettings.DEFAULT_TOPIC + ")");
        FLAGS.put("--spool-dir DIR", "what remote sinks have not confirmed is kept here (default " + d.spoolDir() + ")");
        FLAGS.put("--spool-max-bytes SIZE", "cap of each remote sink's spool; oldest dropped past it (default "
                + (d.spoolMaxBytes() >> 20) + "MiB)");
        FLAGS.put("--external-label NAME=VALUE", "label on every series sent to Parca or Kafka; repeatable");
        FLAGS.put("--probe BINARY:FUNCTION", "measure each call's latency (pid=PID:FUNCTION for one process; FUNCTION may be a glob such as main.*); repeatable");
        FLAGS.put("--probe-stacks BOOL", "true: latency profiles carry each call's caller stack for every probe (the flags' and the file's; YAML: stacks: true per entry)");
        FLAGS.put("--probes-max-functions N", "most functions one probe pattern may match, and all together (default " + d.probesMaxFunctions() + ")");
        FLAGS.put("--help", "show this help");
    }

    /** Flags that need no value ({@code --flag} means true; {@code --flag=false} is allowed). */
    private static final Set<String> BOOLEAN_FLAGS = Set.of("--remote-store-insecure", "--remote-store-insecure-skip-verify");

    private CommandLine() {}

    public static String usage() {
        StringBuilder b = new StringBuilder("Usage: loupe run [options]\n");
        b.append("Profiles every CPU with eBPF and writes gzipped pprof files; serves /debug/pprof/profile.\n\n");
        for (var e : FLAGS.entrySet()) {
            if (e.getKey().length() > 24) {
                b.append("  ").append(e.getKey()).append('\n').append(" ".repeat(27)).append(e.getValue()).append('\n');
            } else {
                b.append(String.format("  %-24s %s%n", e.getKey(), e.getValue()));
            }
        }
        return b.toString();
    }

    public static Parsed parse(String[] args) throws ConfigException {
        List<String[]> pairs = new ArrayList<>();
        boolean help = false;
        Path config = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--help") || a.equals("-h")) {
                help = true;
                continue;
            }
            if (!a.startsWith("--")) {
                throw new ConfigException(a, 0, "unexpected argument (options start with --; see --help)");
            }
            String name = a;
            String value;
            int eq = a.indexOf('=');
            if (eq > 0) {
                name = a.substring(0, eq);
                value = a.substring(eq + 1);
            } else if (BOOLEAN_FLAGS.contains(name)) {
                value = "true";
            } else {
                if (!known(name)) {
                    throw unknown(name);
                }
                if (i + 1 >= args.length) {
                    throw new ConfigException(name, 0, "needs a value");
                }
                value = args[++i];
            }
            if (!known(name)) {
                throw unknown(name);
            }
            if (name.equals("--config")) {
                config = Path.of(value);
            } else {
                pairs.add(new String[] {name, value});
            }
        }
        if (help) {
            return new Parsed(true, LoupeConfig.defaults());
        }
        ConfigLoader.Settings s = ConfigLoader.Settings.of(config == null ? LoupeConfig.defaults() : ConfigLoader.load(config));
        Set<Integer> flagPids = new TreeSet<>();
        Map<String, String> flagLabels = new java.util.TreeMap<>();
        List<ProbeConfig> flagProbes = new ArrayList<>();
        Boolean flagProbeStacks = null;
        for (String[] p : pairs) {
            String name = p[0];
            String value = p[1];
            try {
                switch (name) {
                    case "--frequency" -> s.frequency = Values.frequency(value);
                    case "--interval" -> s.interval = Values.interval(value);
                    case "--duration" -> s.duration = Values.runDuration(value);
                    case "--output" -> {
                        if (value.isBlank()) {
                            throw new IllegalArgumentException("must name a directory or off");
                        }
                        s.localFiles = !value.trim().equals("off");
                        if (s.localFiles) {
                            s.output = Path.of(value);
                        }
                    }
                    case "--remote-store-address" -> s.remoteAddress = Values.hostPort(value);
                    case "--remote-store-insecure" -> s.remoteInsecure = Values.bool(value);
                    case "--remote-store-insecure-skip-verify" -> s.remoteSkipVerify = Values.bool(value);
                    case "--remote-store-bearer-token-file" -> s.remoteTokenFile = Values.path(value);
                    case "--kafka-bootstrap-servers" -> s.kafkaServers = Values.hostPorts(value);
                    case "--kafka-topic" -> s.kafkaTopic = Values.topic(value);
                    case "--spool-dir" -> s.spoolDir = Values.path(value);
                    case "--spool-max-bytes" -> s.spoolMaxBytes = Values.size(value, ConfigLoader.MIN_SPOOL, ConfigLoader.MAX_SPOOL);
                    case "--external-label" -> {
                        int eqs = value.indexOf('=');
                        if (eqs <= 0) {
                            throw new IllegalArgumentException("must be NAME=VALUE, got \"" + value + "\"");
                        }
                        flagLabels.put(Values.labelName(value.substring(0, eqs)), value.substring(eqs + 1));
                    }
                    case "--pid" -> {
                        for (String part : value.split(",")) {
                            flagPids.add(Values.pid(part));
                        }
                    }
                    case "--probe" -> flagProbes.add(ProbeConfigParser.fromFlag(value));
                    case "--probe-stacks" -> flagProbeStacks = Values.bool(value);
                    case "--probes-max-functions" -> s.probesMaxFunctions = ProbeConfigParser.maxFunctions(value);
                    case "--http" -> s.http = java.util.Optional.ofNullable(Values.httpAddress(value));
                    case "--unwind-table-budget" -> s.unwindTableBudget = Values.tableBudget(value);
                    case "--unwind-tables" -> s.unwindTables = Values.onOff(value);
                    default -> throw new IllegalStateException(name);
                }
            } catch (IllegalArgumentException e) {
                throw new ConfigException(name, 0, e.getMessage());
            }
        }
        if (!flagPids.isEmpty()) {
            s.pids = flagPids; // flags replace the file's list
        }
        if (!flagProbes.isEmpty()) {
            s.probes = ProbeConfigParser.merge(flagProbes); // flags replace the file's list, like --pid
        }
        if (flagProbeStacks != null) {
            boolean on = flagProbeStacks;
            s.probes = s.probes.stream().map(p -> new ProbeConfig(p.binary(), p.pid(), p.functions(), on)).toList();
        }
        s.externalLabels.putAll(flagLabels); // flags add to (and override) the file's labels
        if ((s.remoteInsecure || s.remoteSkipVerify || s.remoteTokenFile != null) && s.remoteAddress == null) {
            throw new ConfigException("--remote-store-address", 0, "missing: the other --remote-store-* flags need it");
        }
        return new Parsed(false, s.build(config, config == null ? "command line" : config.toString()));
    }

    private static boolean known(String name) {
        return FLAGS.keySet().stream().anyMatch(f -> f.split(" ")[0].equals(name));
    }

    private static ConfigException unknown(String name) {
        List<String> names = FLAGS.keySet().stream().map(f -> f.split(" ")[0]).toList();
        String hint = ConfigLoader.closest(name, names).map(c -> " (did you mean " + c + "?)").orElse("");
        return new ConfigException(name, 0, "unknown option" + hint + "; see --help");
    }
}
