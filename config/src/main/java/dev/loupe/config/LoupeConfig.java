package dev.loupe.config;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * {@code loupe run}'s settings after merging the defaults, an optional YAML file and command-line flags. Any
 * option is {@link #get}; the accessors below are the ones with derived or grouped values.
 */
public final class LoupeConfig {
    private final OptionValues values;
    private final Optional<Path> source;
    private final Optional<RemoteStore> remoteStore;
    private final Optional<KafkaSettings> kafka;
    private final List<ProbeConfig> probes;
    private final Set<Integer> pids;
    private final HttpSettings http;

    private LoupeConfig(OptionValues values, Optional<Path> source, Optional<RemoteStore> remoteStore,
                        Optional<KafkaSettings> kafka, List<ProbeConfig> probes, HttpSettings http) {
        this.values = values;
        this.source = source;
        this.remoteStore = remoteStore;
        this.kafka = kafka;
        this.probes = List.copyOf(probes);
        this.pids = Collections.unmodifiableSortedSet(new TreeSet<>(values.get(Options.PIDS)));
        this.http = http;
    }

    /** Checks what no single option can (TLS settings that go together, ...) and builds the settings. */
    static LoupeConfig build(OptionValues v, Optional<Path> source, String sourceName) throws ConfigException {
        Optional<RemoteStore> remote = RemoteStore.from(v, sourceName);
        HttpSettings http = HttpSettings.from(v, sourceName);
        Optional<KafkaSettings> kafka = v.get(Options.KAFKA_BOOTSTRAP_SERVERS).map(servers -> new KafkaSettings(servers,
                v.get(Options.KAFKA_TOPIC), v.get(Options.KAFKA_PRODUCER), v.get(Options.KAFKA_TRANSACTIONAL)));
        List<ProbeConfig> probes = v.get(Options.PROBES);
        Optional<Boolean> stacks = Optional.ofNullable(v.get(Options.PROBE_STACKS)).flatMap(s -> s);
        if (stacks.isPresent()) {
            boolean on = stacks.get();
            probes = probes.stream().map(p -> new ProbeConfig(p.binary(), p.pid(), p.functions(), on)).toList();
        }
        return new LoupeConfig(v.copy(), source, remote, kafka, probes, http);
    }

    /**
     * The settings a reload leaves running: {@code loaded}'s value for each option a reload may change, this
     * one's for the others (they wait for a restart).
     */
    public LoupeConfig reloadedWith(LoupeConfig loaded) throws ConfigException {
        OptionValues v = values.copy();
        for (Option<?> o : Options.ALL) {
            if (o.isReloadable()) {
                take(v, o, loaded);
            }
        }
        return build(v, loaded.source, loaded.source.map(Path::toString).orElse("reload"));
    }

    private static <T> void take(OptionValues into, Option<T> o, LoupeConfig from) {
        into.set(o, from.get(o));
    }

    /** The embedded defaults (the table in {@link Options}; default.yaml shows them). */
    public static LoupeConfig defaults() {
        return ConfigLoader.defaults();
    }

    /** Any option's value (null for a flag-only option that was not given). */
    public <T> T get(Option<T> option) {
        return values.get(option);
    }

    /** Samples per second per CPU. */
    public int frequencyHz() {
        return get(Options.FREQUENCY);
    }

    /** The probability that a switch-out is recorded for off-CPU profiles; 0: none. */
    public double offCpuThreshold() {
        return get(Options.OFF_CPU_THRESHOLD);
    }

    /** Whether off-CPU profiles record the agent's own waits (false: the kernel skips its switch-outs). */
    public boolean offCpuIncludeSelf() {
        return get(Options.OFF_CPU_INCLUDE_SELF);
    }

    /** Nanoseconds between samples on one CPU: the pprof period. */
    public long periodNanos() {
        return 1_000_000_000L / frequencyHz();
    }

    /** One profile per interval. */
    public Duration interval() {
        return get(Options.INTERVAL);
    }

    /** Where profile files go (the default directory when {@link #localFiles()} is off). */
    public Path outputDir() {
        return get(Options.OUTPUT).orElse(Path.of(Options.OUTPUT.defaultYaml()));
    }

    /** Write pprof files to {@link #outputDir()} ({@code --output off}: no files). */
    public boolean localFiles() {
        return get(Options.OUTPUT).isPresent();
    }

    /** Only these processes; empty = all. */
    public Set<Integer> pids() {
        return pids;
    }

    /** Local HTTP endpoint; empty = off. */
    public Optional<InetSocketAddress> httpAddress() {
        return get(Options.HTTP);
    }

    /** The HTTP listeners and who may read profiles on them. */
    public HttpSettings http() {
        return http;
    }

    /** How long to run; empty = until SIGTERM (command line only). */
    public Optional<Duration> duration() {
        return Optional.ofNullable(get(Options.DURATION)).flatMap(d -> d);
    }

    /** The config file used, if any. */
    public Optional<Path> source() {
        return source;
    }

    /** Kernel memory for unwind tables and process mappings, bytes. */
    public long unwindTableBudget() {
        return get(Options.UNWIND_TABLE_BUDGET);
    }

    /** Walk user stacks with eh_frame tables (false: frame pointers only). */
    /** {@code --lines}: frames carry source files and lines. */
    public boolean lines() {
        return get(Options.LINES);
    }

    public boolean unwindTables() {
        return get(Options.UNWIND_TABLES);
    }

    /** Send profiles to Parca. */
    public Optional<RemoteStore> remoteStore() {
        return remoteStore;
    }

    /** Send profiles to Kafka. */
    public Optional<KafkaSettings> kafka() {
        return kafka;
    }

    /** What the remote sinks have not yet confirmed is kept here ({@code <state-dir>/spool} unless set). */
    public Path spoolDir() {
        return get(Options.SPOOL_DIR).orElseGet(() -> stateDir().resolve("spool"));
    }

    /** The parent of what the agent keeps across restarts. */
    public Path stateDir() {
        return get(Options.STATE_DIR);
    }

    /** Local profile files older than this are deleted. */
    public Duration outputRetention() {
        return get(Options.OUTPUT_RETENTION);
    }

    /** Past this total size the oldest local profile files are deleted. */
    public long outputMaxBytes() {
        return get(Options.OUTPUT_MAX_BYTES);
    }

    public java.util.logging.Level logLevel() {
        return get(Options.LOG_LEVEL);
    }

    /** Cap on the spool of each remote sink; past it the oldest batches are dropped (counted). */
    public long spoolMaxBytes() {
        return get(Options.SPOOL_MAX_BYTES);
    }

    /** Labels added to every series sent to Parca or Kafka and to every sample of local files. */
    public Map<String, String> externalLabels() {
        return get(Options.EXTERNAL_LABELS);
    }

    /** Latency probes: functions to measure per binary or process ({@code --probe-stacks} applied). */
    public List<ProbeConfig> probes() {
        return probes;
    }

    /** Most functions one probe pattern may match, and all probes together. */
    public int probesMaxFunctions() {
        return get(Options.PROBES_MAX_FUNCTIONS);
    }

    @Override
    public String toString() {
        return "LoupeConfig[frequency=" + frequencyHz() + "Hz, interval=" + interval() + ", output="
                + (localFiles() ? outputDir() : "off") + ", source=" + source.map(Path::toString).orElse("-") + "]";
    }
}
