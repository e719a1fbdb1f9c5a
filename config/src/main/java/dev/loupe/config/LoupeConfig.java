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
 * The agent's settings after merging embedded defaults, an optional YAML file and command-line flags.
 *
 * @param frequencyHz samples per second per CPU
 * @param interval    one profile per interval
 * @param outputDir   where profile files go
 * @param pids        only these processes; empty = all
 * @param httpAddress local HTTP endpoint; empty = off
 * @param duration    how long to run; empty = until SIGTERM (command line only)
 * @param source      the config file used, if any
 * @param unwindTableBudget kernel memory for unwind tables and process mappings, bytes
 * @param unwindTables      walk user stacks with eh_frame tables (false: frame pointers only)
 * @param localFiles        write pprof files to {@code outputDir} ({@code --output off}: no files)
 * @param remoteStore       send profiles to Parca
 * @param kafka             send profiles to Kafka
 * @param spoolDir          what the remote sinks have not yet confirmed is kept here
 * @param spoolMaxBytes     cap on the spool of each remote sink; past it the oldest batches are dropped (counted)
 * @param externalLabels    labels added to every series sent to Parca or Kafka
 * @param probes             latency probes (issue 7): functions to measure per binary or process
 * @param probesMaxFunctions most functions one probe pattern may match, and all probes together
 */
public record LoupeConfig(int frequencyHz, Duration interval, Path outputDir, Set<Integer> pids,
                          Optional<InetSocketAddress> httpAddress, Optional<Duration> duration,
                          Optional<Path> source, long unwindTableBudget, boolean unwindTables,
                          boolean localFiles, Optional<RemoteStore> remoteStore, Optional<KafkaSettings> kafka,
                          Path spoolDir, long spoolMaxBytes, Map<String, String> externalLabels,
                          List<ProbeConfig> probes, int probesMaxFunctions) {
    public LoupeConfig {
        probes = List.copyOf(probes);
        pids = Collections.unmodifiableSortedSet(new TreeSet<>(pids));
        externalLabels = Collections.unmodifiableMap(new java.util.TreeMap<>(externalLabels));
    }

    /** The embedded defaults (default.yaml in this jar). */
    public static LoupeConfig defaults() {
        return ConfigLoader.defaults();
    }

    /** Nanoseconds between samples on one CPU: the pprof period. */
    public long periodNanos() {
        return 1_000_000_000L / frequencyHz;
    }
}
