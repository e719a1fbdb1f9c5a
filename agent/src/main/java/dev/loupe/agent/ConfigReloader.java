package dev.loupe.agent;

import dev.loupe.agent.latency.ProbeManager;
import dev.loupe.agent.logging.LogFormat;
import dev.loupe.agent.sampling.Agent;
import dev.loupe.config.CommandLine;
import dev.loupe.config.ConfigChange;
import dev.loupe.config.ConfigException;
import dev.loupe.config.LoupeConfig;
import dev.loupe.config.Options;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code systemctl reload} (SIGHUP): reads the configuration again (the same file and flags as at start),
 * applies what may change live (sinks and their credentials, external labels: series labels of the remote sinks
 * and sample labels of local files, output and its retention, log level, probes and the regression settings),
 * and logs one line naming what it applied and what waits for a restart. A file with an error is
 * refused with its file and line, and everything keeps running as it was. The interval, the spool and the BPF
 * program are never touched.
 */
final class ConfigReloader {
    private static final System.Logger LOG = System.getLogger(ConfigReloader.class.getName());
    private static final long SWAP_TIMEOUT_SECONDS = 60;

    private final String[] args;
    private final Agent agent;
    private final ServiceSupervisor supervisor;
    private final ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "loupe-reload");
        t.setDaemon(true);
        return t;
    });
    private volatile LoupeConfig running;
    private final ProbeManager probes; // null when the latency programs could not be loaded
    private final SourceLinesSwitch lines;

    /** Live options applied elsewhere than in the sinks: changing only these swaps no sink. */
    private static final java.util.Set<dev.loupe.config.Option<?>> NOT_SINKS = java.util.Set.of(Options.LOG_LEVEL,
            Options.PROBES, Options.PROBE_STACKS, Options.LATENCY_REGRESSION_WINDOW, Options.LATENCY_REGRESSION_MIN_CALLS,
            Options.LATENCY_REGRESSION_THRESHOLD, Options.LATENCY_REGRESSION_WARMUP, Options.LINES, Options.OFF_CPU_THRESHOLD,
            Options.OFF_CPU_INCLUDE_SELF);

    ConfigReloader(String[] args, LoupeConfig running, Agent agent, ServiceSupervisor supervisor, SourceLinesSwitch lines) {
        this.lines = lines;
        this.args = args.clone();
        this.probes = agent.sideProfiles().stream().filter(ProbeManager.class::isInstance).map(ProbeManager.class::cast)
                .findFirst().orElse(null);
        this.running = running;
        this.agent = agent;
        this.supervisor = supervisor;
    }

    /**
     * SIGHUP reloads (instead of the JVM's default of exiting). An agent started with SIGHUP ignored (under nohup) cannot
     * have it: HotSpot installs no handler for a shutdown signal ignored at start, silently; said once here.
     */
    @SuppressWarnings("removal")
    void onSighup() {
        sun.misc.SignalHandler before = sun.misc.Signal.handle(new sun.misc.Signal("HUP"), sig -> worker.execute(this::reload));
        if (before == sun.misc.SignalHandler.SIG_IGN) {
            LOG.log(System.Logger.Level.WARNING, "SIGHUP was ignored when the agent started (under nohup?): a reload by"
                    + " SIGHUP (systemctl reload) does nothing; restart the agent to apply a changed configuration");
        }
    }

    LoupeConfig running() {
        return running;
    }

    /** One reload; returns what changed (empty when refused). */
    synchronized ConfigChange reload() {
        supervisor.reloading();
        try {
            LoupeConfig loaded;
            try {
                loaded = CommandLine.parse(args).config();
            } catch (ConfigException e) {
                LOG.log(System.Logger.Level.ERROR, "reload refused, the running configuration stays: " + e.getMessage());
                return new ConfigChange(List.of(), List.of());
            }
            java.util.Optional<String> badRelabel = Sinks.relabelConfigError(loaded);
            if (badRelabel.isPresent()) {
                LOG.log(System.Logger.Level.ERROR, "reload refused, the running configuration stays: " + badRelabel.get());
                return new ConfigChange(List.of(), List.of());
            }
            LoupeConfig before = running;
            ConfigChange change = ConfigChange.between(before, loaded);
            LoupeConfig next;
            try {
                next = before.reloadedWith(loaded);
            } catch (ConfigException e) {
                LOG.log(System.Logger.Level.ERROR, "reload refused, the running configuration stays: " + e.getMessage());
                return new ConfigChange(List.of(), List.of());
            }
            if (change.live().stream().anyMatch(o -> !NOT_SINKS.contains(o))) {
                try {
                    // External labels are live and swap the sinks: local files get them with the new sinks.
                    List<String> sinks = agent.replaceSinks(() -> open(next), () -> open(before))
                            .get(SWAP_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                    LOG.log(System.Logger.Level.INFO, "reload: sinks now " + sinks);
                } catch (ExecutionException e) {
                    LOG.log(System.Logger.Level.ERROR, "reload refused: " + e.getCause().getMessage()
                            + "; the running configuration's sinks were reopened");
                    return new ConfigChange(List.of(), List.of());
                } catch (TimeoutException e) {
                    LOG.log(System.Logger.Level.ERROR, "reload: the sinks were not swapped within " + SWAP_TIMEOUT_SECONDS
                            + " s; it goes on in the background");
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return new ConfigChange(List.of(), List.of());
                }
            }
            if (change.changedLive(Options.LOG_LEVEL)) {
                LogFormat.level(next.logLevel());
            }
            if (change.changedLive(Options.OFF_CPU_THRESHOLD, Options.OFF_CPU_INCLUDE_SELF)) {
                agent.sideProfiles().stream().filter(dev.loupe.agent.sampling.OffCpuProfiles.class::isInstance)
                        .map(dev.loupe.agent.sampling.OffCpuProfiles.class::cast).findFirst().ifPresent(o -> {
                            try {
                                o.configure(next.offCpuThreshold(), next.offCpuIncludeSelf());
                            } catch (Exception e) {
                                LOG.log(System.Logger.Level.ERROR, "reload: off-CPU profiles stay at probability "
                                        + o.probability() + (o.includesSelf() ? ", the agent's own waits included" : "")
                                        + ": " + e.getMessage());
                            }
                        });
            }
            if (change.changedLive(Options.LINES)) {
                lines.set(next.lines()); // frames symbolized from now on; a profile window keeps the lines its locations got
            }
            if (probes != null && change.changedLive(Options.PROBES, Options.PROBE_STACKS)) {
                LOG.log(System.Logger.Level.INFO, "reload: " + probes.reconfigure(next.probes()));
            }
            if (probes != null && change.changedLive(Options.LATENCY_REGRESSION_WINDOW, Options.LATENCY_REGRESSION_MIN_CALLS,
                    Options.LATENCY_REGRESSION_THRESHOLD, Options.LATENCY_REGRESSION_WARMUP)) {
                probes.updateRegressionSettings(Main.regressionSettings(next));
            }
            running = next;
            LOG.log(System.Logger.Level.INFO, "reload: " + change.describe());
            return change;
        } finally {
            supervisor.reloaded();
        }
    }

    /**
     * A configuration's sinks, and its external labels for local files' samples; run by the agent's loop between
     * two intervals, so the interval after the swap is the first with both.
     */
    private List<dev.loupe.agent.sink.ProfileSink> open(LoupeConfig config) throws Sinks.StartFailure {
        List<dev.loupe.agent.sink.ProfileSink> sinks = Sinks.open(config);
        agent.externalLabels(config.externalLabels());
        return sinks;
    }

    void close() {
        worker.shutdownNow();
    }
}
