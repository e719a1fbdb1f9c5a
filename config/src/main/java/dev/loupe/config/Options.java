package dev.loupe.config;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Every option of {@code loupe run}, {@code loupe relay} and {@code loupe latency-diff}, each declared once. Adding an option means adding
 * a declaration here and reading it where it is used ({@link LoupeConfig#get}); the loader, the flags,
 * {@code --help}, default.yaml and docs/configuration.md follow (ConfigDocsTest keeps the last two current).
 */
public final class Options {
    private Options() {}

    static final long MIN_SPOOL = 1L << 20;
    static final long MAX_SPOOL = 1L << 40;
    static final long MIN_BATCH = 64L << 10;
    static final long MAX_BATCH = 64L << 20; // Parca's gRPC message limit
    static final long MIN_OUTPUT = 1L << 20;
    static final long MAX_OUTPUT = 1L << 40;

    public static final Option<Path> CONFIG = Option.value(null, "--config", "FILE", Values::path)
            .help("YAML configuration file (flags override it)").commands(Command.RUN, Command.RELAY, Command.LATENCY_DIFF);

    public static final Option<Integer> FREQUENCY = Option.value("frequency", "--frequency", "HZ", Values::frequency)
            .byDefault("19").help("samples per second per CPU (Hz), " + Values.MIN_HZ + ".." + Values.MAX_HZ);

    public static final Option<Double> OFF_CPU_THRESHOLD = Option.value("off-cpu-threshold", "--off-cpu-threshold", "P",
                    Options::offCpuThreshold)
            .byDefault("0").reloadable().help("off-CPU profiles (offcpu-TIME.pb.gz: where threads wait, and how long): the "
                    + "probability, 0..1, that a thread's switch-out is recorded (each wait weighted 1/P); 0: off. "
                    + "use 0.01 on a busy host: the agent's cost stays that of P = 0 (docs/profiles.md: choosing P)");

    public static final Option<Boolean> OFF_CPU_INCLUDE_SELF = Option.value("off-cpu-include-self", "--off-cpu-include-self",
                    "BOOL", Values::bool)
            .byDefault("false").reloadable().flagNeedsNoValue()
            .help("off-CPU profiles record the agent's own waits too (its sampling, symbolizing and sending threads); "
                    + "false: the kernel skips the agent's switch-outs");

    public static final Option<Duration> INTERVAL = Option.value("interval", "--interval", "DURATION", Values::interval)
            .byDefault("10s").help("one host-wide profile per interval (1s..1h)");

    public static final Option<Optional<Duration>> DURATION = Option.value(null, "--duration", "DURATION",
                    t -> Optional.of(Values.runDuration(t)))
            .help("stop after this long, e.g. 30s (default: run until SIGTERM)");

    /** Empty: no files ({@code off}). */
    public static final Option<Optional<Path>> OUTPUT = Option.value("output", "--output", "DIR|off", Options::output)
            .byDefault("./profiles").reloadable().help("directory for gzipped pprof files; off: no files");

    public static final Option<List<Integer>> PIDS = Option.list("pids", "--pid", "PID", Values::pid)
            .byDefault("[]")
            .help("only these processes; empty = every process (flag: repeat or comma-separate; flags replace the file's list)");

    public static final Option<Duration> OUTPUT_RETENTION = Option.value("output-retention", "--output-retention", "DURATION",
                    Options::retention)
            .byDefault("24h").reloadable().help("local profile files older than this are deleted (1m..8760h)");

    public static final Option<Long> OUTPUT_MAX_BYTES = Option.value("output-max-bytes", "--output-max-bytes", "SIZE",
                    t -> Values.size(t, MIN_OUTPUT, MAX_OUTPUT))
            .byDefault("1GiB").reloadable().help("past this total the oldest local profile files are deleted (1MiB..1024GiB)");

    /** Empty: no HTTP endpoint ({@code off}). */
    public static final Option<Optional<InetSocketAddress>> HTTP = Option.value("http.address", "--http", "HOST:PORT|off",
                    t -> Optional.ofNullable(Values.httpAddress(t)))
            .byDefault("127.0.0.1:7071").help("TCP endpoint: /metrics and /healthz always, /debug/pprof/* as http.profiles says; "
                    + "off disables it");

    public static final Option<HttpSettings.Profiles> HTTP_PROFILES = Option.value("http.profiles", "--http-profiles",
                    "off|on|unauthenticated", HttpSettings.Profiles::parse)
            .byDefault("off").help("profiles (/debug/pprof/*: every process's stacks) over TCP: off: 403, use http.socket; "
                    + "on: to requests with the bearer token of http.bearer-token-file; unauthenticated: to every local "
                    + "user, loopback addresses only (./loupe run's default)");

    public static final Option<Optional<Path>> HTTP_BEARER_TOKEN_FILE = Option.value("http.bearer-token-file",
                    "--http-bearer-token-file", "FILE", Options::optionalPath)
            .byDefault("\"\"").help("with http.profiles: on, requests need 'Authorization: Bearer <token read from FILE>'; "
                    + "FILE must not be open to other users (chmod o-rwx); re-read when it changes");

    public static final Option<Optional<Path>> HTTP_TLS_CERT_FILE = Option.value("http.tls-cert-file", "--http-tls-cert-file",
                    "FILE", Options::optionalPath)
            .byDefault("\"\"").help("PEM certificate chain (server first); with http.tls-key-file the TCP endpoint speaks "
                    + "only TLS; both re-read when they change");

    public static final Option<Optional<Path>> HTTP_TLS_KEY_FILE = Option.value("http.tls-key-file", "--http-tls-key-file",
                    "FILE", Options::optionalPath)
            .byDefault("\"\"").help("PEM PKCS#8 private key (BEGIN PRIVATE KEY) of http.tls-cert-file");

    /** Empty: no socket ({@code off}). */
    public static final Option<Optional<Path>> HTTP_SOCKET = Option.value("http.socket", "--http-socket", "PATH|off",
                    Values::unixSocket)
            .byDefault("off").help("Unix domain socket serving everything (profiles too) without a token: who may "
                    + "connect is who may write it (mode 0660, the agent's or the setgid directory's group); "
                    + "the directory must exist");

    public static final Option<Boolean> UNWIND_TABLES = Option.value("unwind.tables", "--unwind-tables", "on|off", Values::onOff)
            .byDefault("on").help("walk user stacks with eh_frame tables; off: frame pointers only");

    public static final Option<Long> UNWIND_TABLE_BUDGET = Option.value("unwind.table-budget", "--unwind-table-budget", "SIZE",
                    Values::tableBudget)
            .byDefault("64MiB").help("kernel memory for eh_frame unwind tables and process mappings (1MiB..4GiB)");

    public static final Option<Boolean> JVM_SYMBOLS = Option.value("jvm-symbols", "--jvm-symbols", "on|off", Values::onOff)
            .byDefault("on").help("JIT frame names for HotSpot JVMs (JDK 17+) without JVM flags: Compiler.perfmap through the "
                    + "attach mechanism when a JVM shows unnamed JIT code, at most every 30 s per JVM; off: never attach to a JVM");

    public static final Option<Boolean> JVM_CODE_CACHE = Option.value("jvm-code-cache", "--jvm-code-cache", "on|off", Values::onOff)
            .byDefault("on").help("complete Java stacks and Java frame names for HotSpot JVMs without JVM flags or attach: "
                    + "each JVM's code cache and method metadata are read from /proc/PID/mem (HotSpot's VMStructs) and "
                    + "scanned again as code is compiled; off: JIT frames are walked by frame pointers and named by perf maps only");

    public static final Option<Boolean> NODE_FRAMES = Option.value("node-frames", "--node-frames", "on|off", Values::onOff)
            .byDefault("on").help("complete stacks and JavaScript frame names for node without flags: V8's postmortem "
                    + "metadata in node's binary and each frame's function read from /proc/PID/mem; off: V8's frames are "
                    + "walked by frame pointers and named by perf maps only (node --perf-basic-prof)");

    public static final Option<Boolean> LINES = Option.value("lines", "--lines", "on|off", Values::onOff)
            .byDefault("on").reloadable().help("source file and line of each frame (Go pclntab, DWARF line tables and inlined "
                    + "subroutines, HotSpot's line number tables; file, line and inlined calls in the profile's locations); "
                    + "off: function names only, smaller profiles");

    public static final Option<Optional<String>> REMOTE_STORE_ADDRESS = Option.value("remote-store.address",
                    "--remote-store-address", "HOST:PORT", t -> t.isBlank() ? Optional.<String>empty() : Optional.of(Values.hostPort(t)))
            .byDefault("\"\"").reloadable().commands(Command.RUN, Command.RELAY)
            .help("send profiles to this Parca server (gRPC WriteRaw); empty = off");

    public static final Option<Boolean> REMOTE_STORE_INSECURE = Option.value("remote-store.insecure", "--remote-store-insecure",
                    "BOOL", Values::bool)
            .byDefault("false").reloadable().flagNeedsNoValue().commands(Command.RUN, Command.RELAY)
            .help("plaintext HTTP/2 (h2c); the default is TLS with certificate verification");

    public static final Option<Boolean> REMOTE_STORE_INSECURE_SKIP_VERIFY = Option.value("remote-store.insecure-skip-verify",
                    "--remote-store-insecure-skip-verify", "BOOL", Values::bool)
            .byDefault("false").reloadable().flagNeedsNoValue().commands(Command.RUN, Command.RELAY)
            .help("TLS without verifying the server's certificate");

    public static final Option<Optional<Path>> REMOTE_STORE_BEARER_TOKEN_FILE = Option.value("remote-store.bearer-token-file",
                    "--remote-store-bearer-token-file", "FILE", Options::optionalPath)
            .byDefault("\"\"").reloadable().commands(Command.RUN, Command.RELAY)
            .help("send 'authorization: Bearer <token read from FILE>'; the token is never taken on the command line");

    public static final Option<Optional<Path>> REMOTE_STORE_CA_FILE = Option.value("remote-store.ca-file", null, null,
                    Options::optionalPath)
            .byDefault("\"\"").reloadable().commands(Command.RUN, Command.RELAY).help("extra CA certificates (PEM)");

    public static final Option<Optional<Path>> REMOTE_STORE_CERT_FILE = Option.value("remote-store.cert-file", null, null,
                    Options::optionalPath)
            .byDefault("\"\"").reloadable().commands(Command.RUN, Command.RELAY).help("client certificate (PEM) for mutual TLS, with key-file");

    public static final Option<Optional<Path>> REMOTE_STORE_KEY_FILE = Option.value("remote-store.key-file", null, null,
                    Options::optionalPath)
            .byDefault("\"\"").reloadable().commands(Command.RUN, Command.RELAY).help("client key (PEM) for mutual TLS");

    public static final Option<Map<String, String>> REMOTE_STORE_HEADERS = Option.map("remote-store.headers", null, null,
                    Values::headerName, Values::headerValue)
            .byDefault("{}").reloadable().commands(Command.RUN, Command.RELAY).help("extra request headers, e.g. {projectID: my-project}");

    public static final Option<Duration> REMOTE_STORE_TIMEOUT = Option.value("remote-store.timeout", null, null,
                    Options::requestTimeout)
            .byDefault("10s").reloadable().commands(Command.RUN, Command.RELAY).help("per request (100ms..10m)");

    public static final Option<Long> REMOTE_STORE_BATCH_MAX_BYTES = Option.value("remote-store.batch-max-bytes", null, null,
                    t -> Values.size(t, MIN_BATCH, MAX_BATCH))
            .byDefault("16MiB").reloadable().help("requests are split to stay under this (64KiB..64MiB)");

    public static final Option<Optional<String>> KAFKA_BOOTSTRAP_SERVERS = Option.value("kafka.bootstrap-servers",
                    "--kafka-bootstrap-servers", "HOST:PORT[,...]",
                    t -> t.isBlank() ? Optional.<String>empty() : Optional.of(Values.hostPorts(t)))
            .byDefault("\"\"").reloadable().commands(Command.RUN, Command.RELAY)
            .help("Kafka brokers: the agent sends profiles there, the relay reads them; empty = off");

    public static final Option<String> KAFKA_TOPIC = Option.value("kafka.topic", "--kafka-topic", "TOPIC", Values::topic)
            .byDefault(KafkaSettings.DEFAULT_TOPIC).reloadable().commands(Command.RUN, Command.RELAY).help("the topic profiles go to");

    public static final Option<Map<String, String>> KAFKA_PRODUCER = Option.map("kafka.producer", null, null,
                    String::trim, t -> t)
            .byDefault("{}").reloadable().help("extra producer properties (security.protocol, sasl.*, ssl.*)");

    public static final Option<Boolean> KAFKA_TRANSACTIONAL = Option.value("kafka.transactional", null, null, Values::bool)
            .byDefault("false").reloadable().help("one transaction per batch for read_committed consumers (docs/kafka.md)");

    public static final Option<String> KAFKA_GROUP_ID = Option.value("kafka.group-id", "--kafka-group-id", "ID",
                    Options::nonBlank)
            .byDefault("loupe-relay").commands(Command.RELAY)
            .help("the relay's consumer group: instances with the same id share the partitions");

    public static final Option<Map<String, String>> KAFKA_CONSUMER = Option.map("kafka.consumer", "--kafka-property",
                    "KEY=VALUE", String::trim, t -> t)
            .byDefault("{}").commands(Command.RELAY)
            .help("extra consumer properties, e.g. security.protocol=SASL_SSL (flag: repeatable)");

    public static final Option<Path> STATE_DIR = Option.value("state-dir", "--state-dir", "DIR", Values::path)
            .byDefault("/var/lib/loupe").commands(Command.RUN, Command.RELAY)
            .help("what the agent keeps across restarts lives under it (the spool, the relay's quarantine)");

    /** Empty: {@code <state-dir>/relay-quarantine}. */
    public static final Option<Optional<Path>> RELAY_QUARANTINE_DIR = Option.value("relay.quarantine-dir", "--quarantine-dir",
                    "DIR", Options::optionalPath)
            .byDefault("\"\"").commands(Command.RELAY)
            .help("where records Parca rejects for good are kept; empty = <state-dir>/relay-quarantine");

    /** Empty: {@code <state-dir>/spool}. */
    public static final Option<Optional<Path>> SPOOL_DIR = Option.value("spool.dir", "--spool-dir", "DIR", Options::optionalPath)
            .byDefault("\"\"").help("what the remote sinks have not confirmed is kept here; empty = <state-dir>/spool");

    public static final Option<Long> SPOOL_MAX_BYTES = Option.value("spool.max-bytes", "--spool-max-bytes", "SIZE",
                    t -> Values.size(t, MIN_SPOOL, MAX_SPOOL))
            .byDefault("1GiB").help("cap of each remote sink's spool; past it the oldest batches are dropped (counted)");

    public static final Option<Map<String, String>> EXTERNAL_LABELS = Option.map("external-labels", "--external-label",
                    "NAME=VALUE", Values::labelName, t -> t)
            .byDefault("{}").reloadable()
            .help("added to every series sent to Parca or Kafka and to every sample of local files, e.g. {region: eu-west-1} (flag: repeatable)");

    /** Prometheus relabel_config rules as plain values; the agent validates and applies them. */
    public static final Option<List<Map<String, Object>>> RELABEL = Option.custom("relabel", null, null,
                    RelabelYaml::read, null)
            .byDefault("[]").reloadable().commands(Command.RUN)
            .help("Prometheus relabel_config rules (replace, keep, drop, labeldrop, labelkeep, labelmap, hashmod, ...) "
                    + "applied in order to each series' labels before it is sent to Parca or Kafka; a dropped series is "
                    + "not sent, e.g. " + RelabelYaml.EXAMPLE);

    public static final Option<List<ProbeConfig>> PROBES = Option.custom("probes", "--probe", "BINARY:FUNCTION",
                    (source, node, key) -> ProbeConfigParser.fromYaml(source, node),
                    (values, current) -> ProbeConfigParser.merge(values.stream().map(ProbeConfigParser::fromFlag).toList()))
            .byDefault("[]").reloadable()
            .help("measure each call's latency into /metrics histograms and a latency profile per interval, e.g. "
                    + "[{binary: /usr/bin/app, functions: [\"main.*\"]}, {pid: 123, functions: [main.work], stacks: true}] "
                    + "(flag: BINARY:FUNCTION or pid=PID:FUNCTION, FUNCTION may be a glob; repeatable; flags replace the file's list)");

    public static final Option<Optional<Boolean>> PROBE_STACKS = Option.value(null, "--probe-stacks", "BOOL",
                    t -> Optional.of(Values.bool(t)))
            .reloadable()
            .help("true: latency profiles carry each call's caller stack, for every probe (the flags' and the file's; "
                    + "YAML: stacks: true per entry)");

    public static final Option<java.util.logging.Level> LOG_LEVEL = Option.value("log-level", "--log-level", "LEVEL",
                    Options::logLevel)
            .byDefault("info").reloadable().commands(Command.RUN, Command.RELAY)
            .help("error, warning, info or debug");

    public static final Option<Integer> PROBES_MAX_FUNCTIONS = Option.value("probes-max-functions", "--probes-max-functions",
                    "N", ProbeConfigParser::maxFunctions)
            .byDefault(String.valueOf(ProbeConfigParser.DEFAULT_MAX_FUNCTIONS))
            .help("most functions one probe pattern may match, and all probes together (1.." + ProbeConfigParser.MAX_MAX_FUNCTIONS + ")");

    public static final Option<Duration> LATENCY_REGRESSION_WINDOW = Option.value("latency-regression.window",
                    "--latency-regression-window", "DURATION", Options::regressionWindow)
            .byDefault("10m").reloadable()
            .help("each probed function's last DURATION of calls is compared with its baselines (the previous build's, "
                    + "and the current build's trailing 24h without this window) (10s..24h)");

    public static final Option<Long> LATENCY_REGRESSION_MIN_CALLS = Option.value("latency-regression.min-calls",
                    "--latency-regression-min-calls", "N", Options::regressionMinCalls)
            .byDefault("200").reloadable().commands(Command.RUN, Command.LATENCY_DIFF)
            .help("no verdict unless the window and the baseline each hold at least N calls (2..1000000000)");

    public static final Option<Double> LATENCY_REGRESSION_THRESHOLD = Option.value("latency-regression.threshold",
                    "--latency-regression-threshold", "RATIO", Options::regressionThreshold)
            .byDefault("1.2").reloadable().commands(Command.RUN, Command.LATENCY_DIFF)
            .help("slower means significantly slower by a rank test and p50 or p90 at least RATIO times the "
                    + "baseline's (1.0..100)");

    public static final Option<Duration> LATENCY_REGRESSION_WARMUP = Option.value("latency-regression.warmup",
                    "--latency-regression-warmup", "DURATION", Options::regressionWarmup)
            .byDefault("1m").reloadable()
            .help("a new build's calls in its first DURATION after the deploy are left out of the comparison: a fresh "
                    + "process's first calls are slower (cold caches, JIT) (0s..1h)");

    /** Absent: {@link LatencyDiffConfig.Format#TABLE}. */
    public static final Option<LatencyDiffConfig.Format> LATENCY_DIFF_FORMAT = Option.value(null, "--format", "table|json",
                    Options::diffFormat)
            .commands(Command.LATENCY_DIFF)
            .help("table: a fixed-width table, one row per function, and a summary line (default); "
                    + "json: a JSON array, one object per function");

    /** Every option, in the order of help and documentation. */
    public static final List<Option<?>> ALL = List.of(CONFIG, FREQUENCY, OFF_CPU_THRESHOLD, OFF_CPU_INCLUDE_SELF, INTERVAL, DURATION, OUTPUT, PIDS, HTTP, HTTP_PROFILES,
            HTTP_BEARER_TOKEN_FILE, HTTP_TLS_CERT_FILE, HTTP_TLS_KEY_FILE, HTTP_SOCKET,
            OUTPUT_RETENTION, OUTPUT_MAX_BYTES, STATE_DIR, LOG_LEVEL, UNWIND_TABLES, UNWIND_TABLE_BUDGET, JVM_SYMBOLS, JVM_CODE_CACHE,
            NODE_FRAMES, LINES, REMOTE_STORE_ADDRESS, REMOTE_STORE_INSECURE, REMOTE_STORE_INSECURE_SKIP_VERIFY,
            REMOTE_STORE_BEARER_TOKEN_FILE, REMOTE_STORE_CA_FILE, REMOTE_STORE_CERT_FILE, REMOTE_STORE_KEY_FILE,
            REMOTE_STORE_HEADERS, REMOTE_STORE_TIMEOUT, REMOTE_STORE_BATCH_MAX_BYTES, KAFKA_BOOTSTRAP_SERVERS, KAFKA_TOPIC,
            KAFKA_PRODUCER, KAFKA_TRANSACTIONAL, KAFKA_GROUP_ID, KAFKA_CONSUMER, RELAY_QUARANTINE_DIR, SPOOL_DIR,
            SPOOL_MAX_BYTES, EXTERNAL_LABELS, RELABEL, PROBES, PROBE_STACKS, PROBES_MAX_FUNCTIONS,
            LATENCY_REGRESSION_WINDOW, LATENCY_REGRESSION_MIN_CALLS, LATENCY_REGRESSION_THRESHOLD, LATENCY_REGRESSION_WARMUP,
            LATENCY_DIFF_FORMAT);

    /** A comment above each YAML section in default.yaml. */
    static final Map<String, String> SECTIONS = sections();

    private static Map<String, String> sections() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("http", "The local HTTP endpoints (docs/profiles.md: who may read profiles).");
        m.put("unwind", "User stacks without frame pointers.");
        m.put("remote-store", "Parca (gRPC WriteRaw); flags --remote-store-*. Shipping is off unless an address is set; "
                + "what a remote sink has not confirmed is spooled on disk first, so outages and restarts lose nothing.");
        m.put("kafka", "Kafka: loupe run sends profiles (one record per series); loupe relay forwards them to Parca.");
        m.put("relay", "loupe relay only.");
        m.put("spool", "The remote sinks' on-disk queue.");
        m.put("latency-regression", "Latency regression verdicts for probed functions (docs/alerting.md); "
                + "loupe latency-diff takes min-calls and threshold too.");
        return m;
    }

    private static Optional<Path> output(String text) {
        if (text.isBlank()) {
            throw new IllegalArgumentException("must name a directory or off");
        }
        return text.trim().equals("off") ? Optional.empty() : Optional.of(Path.of(text));
    }

    private static Optional<Path> optionalPath(String text) {
        return text.isBlank() ? Optional.empty() : Optional.of(Path.of(text.trim()));
    }

    private static String nonBlank(String text) {
        if (text.isBlank()) {
            throw new IllegalArgumentException("must not be empty");
        }
        return text.trim();
    }

    static Duration retention(String text) {
        Duration d = Values.duration(text);
        if (d.compareTo(Duration.ofMinutes(1)) < 0 || d.compareTo(Duration.ofDays(365)) > 0) {
            throw new IllegalArgumentException("must be between 1m and 8760h, got " + text);
        }
        return d;
    }

    static java.util.logging.Level logLevel(String text) {
        return switch (text.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "error" -> java.util.logging.Level.SEVERE;
            case "warning", "warn" -> java.util.logging.Level.WARNING;
            case "info" -> java.util.logging.Level.INFO;
            case "debug" -> java.util.logging.Level.FINE;
            default -> throw new IllegalArgumentException("must be error, warning, info or debug, got \"" + text + "\"");
        };
    }

    static Duration requestTimeout(String text) {
        Duration d = Values.duration(text);
        if (d.compareTo(Duration.ofMillis(100)) < 0 || d.compareTo(Duration.ofMinutes(10)) > 0) {
            throw new IllegalArgumentException("must be between 100ms and 10m, got " + text);
        }
        return d;
    }

    static Duration regressionWindow(String text) {
        Duration d = Values.duration(text);
        if (d.compareTo(Duration.ofSeconds(10)) < 0 || d.compareTo(Duration.ofHours(24)) > 0) {
            throw new IllegalArgumentException("must be between 10s and 24h, got " + text);
        }
        return d;
    }

    static Duration regressionWarmup(String text) {
        Duration d = Values.duration(text);
        if (d.isNegative() || d.compareTo(Duration.ofHours(1)) > 0) {
            throw new IllegalArgumentException("must be between 0s and 1h, got " + text);
        }
        return d;
    }

    static LatencyDiffConfig.Format diffFormat(String text) {
        return switch (text.trim()) {
            case "table" -> LatencyDiffConfig.Format.TABLE;
            case "json" -> LatencyDiffConfig.Format.JSON;
            default -> throw new IllegalArgumentException("must be table or json, got \"" + text + "\"");
        };
    }

    static long regressionMinCalls(String text) {
        long n;
        try {
            n = Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a whole number: " + text);
        }
        if (n < 2 || n > 1_000_000_000L) {
            throw new IllegalArgumentException("must be between 2 and 1000000000, got " + text);
        }
        return n;
    }

    static double offCpuThreshold(String text) {
        double p;
        try {
            p = Double.parseDouble(text.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a probability: " + text + " (0..1; 0 turns off-CPU profiles off)");
        }
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("a probability is between 0 and 1 (0: off), got " + text);
        }
        return p;
    }

    static double regressionThreshold(String text) {
        double r;
        try {
            r = Double.parseDouble(text.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a number: " + text);
        }
        if (!(r >= 1.0 && r <= 100)) {
            throw new IllegalArgumentException("must be between 1.0 and 100, got " + text);
        }
        return r;
    }
}
