package dev.loupe.agent;

import dev.loupe.agent.http.DebugHttpServer;
import dev.loupe.agent.jvm.JvmSymbols;
import dev.loupe.unwinder.KnownRuntimes;
import dev.loupe.unwinder.runtime.RuntimeRegistry;
import dev.loupe.agent.logging.LogFormat;
import dev.loupe.agent.sampling.Agent;
import dev.loupe.agent.sampling.Clocks;
import dev.loupe.agent.sampling.KernelSampleSource;
import dev.loupe.agent.sampling.OffCpuProfiles;
import dev.loupe.agent.service.SdNotify;
import dev.loupe.agent.sink.ProfileSink;
import dev.loupe.agent.unwind.KernelUnwindTarget;
import dev.loupe.agent.unwind.UnwindMetrics;
import dev.loupe.agent.unwind.UnwindTableUploader;
import dev.loupe.agent.unwind.UnwinderAbi;
import dev.loupe.bpf.BpfAvailability;
import dev.loupe.bpf.BpfException;
import dev.loupe.bpf.PerfEventSampler;
import dev.loupe.bpf.UnwindMaps;
import dev.loupe.agent.latency.ProbeManager;
import dev.loupe.agent.regression.RegressionTracker;
import dev.loupe.agent.latencydiff.LatencyDiffCommand;
import dev.loupe.config.Command;
import dev.loupe.config.CommandLine;
import dev.loupe.config.ConfigException;
import dev.loupe.config.LoupeConfig;
import dev.loupe.config.Options;
import dev.loupe.unwinder.proc.ProcessRegistry;
import dev.loupe.unwinder.symbolize.Symbolizer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * {@code loupe run [options]}. Exit codes: 0 done, 1 runtime failure, 2 bad arguments or config,
 * 3 BPF unavailable on this host. {@code loupe relay} and {@code loupe latency-diff} are handed to their packages.
 */
public final class Main {
    /*
     * How often the unwind uploader lists /proc to forget exited processes. Only kernel memory waits on it
     * (the BPF program checks each process's start time, so a reused pid never meets stale tables); every
     * 500 ms the uploader thread used 111 ms of CPU a minute at steady state, 26 ms at 5 s.
     */
    /** The runtime --jvm-code-cache off leaves out. */
    private static final String HOTSPOT = "hotspot";
    private static final String V8 = "v8";
    static final long EXIT_SCAN_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(5);

    private Main() {}

    public static void main(String[] args) {
        LogFormat.install();
        if (args.length > 0 && (args[0].equals("--version") || args[0].equals("version"))) {
            System.out.println("loupe " + version() + " (Java " + Runtime.version() + ", " + System.getProperty("java.home") + ")");
            return;
        }
        if (args.length > 0 && args[0].equals("relay")) {
            System.exit(dev.loupe.agent.relay.RelayCommand.run(Arrays.copyOfRange(args, 1, args.length)));
            return;
        }
        if (args.length > 0 && args[0].equals(Command.LATENCY_DIFF.word())) {
            System.exit(LatencyDiffCommand.run(Arrays.copyOfRange(args, 1, args.length)));
            return;
        }
        String[] rest = args.length > 0 && args[0].equals("run") ? Arrays.copyOfRange(args, 1, args.length) : args;
        CommandLine.Parsed parsed;
        try {
            parsed = CommandLine.parse(rest);
        } catch (ConfigException e) {
            System.err.println("loupe: " + e.getMessage());
            System.err.println("Try 'loupe run --help'.");
            System.exit(2);
            return;
        }
        if (parsed.help()) {
            System.out.println(CommandLine.usage());
            return;
        }
        Optional<String> badRelabel = Sinks.relabelConfigError(parsed.config());
        if (badRelabel.isPresent()) {
            System.err.println("loupe: " + badRelabel.get());
            System.exit(2);
            return;
        }
        System.exit(run(parsed.config(), rest));
    }

    /** The agent jar's Implementation-Version ("dev" when run from classes). */
    static String version() {
        String v = Main.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }

    /** A start that failed part-way: what it already opened is closed, and the message is for the user. */
    static final class StartFailure extends Exception {
        StartFailure(String message) {
            super(message);
        }
    }

    /** @param args the run command's arguments, read again on reload (the file and the same flags) */
    static int run(LoupeConfig config, String[] args) {
        LogFormat.level(config.logLevel());
        Optional<String> unavailable = BpfAvailability.unavailabilityReason();
        if (unavailable.isPresent()) {
            System.err.println("loupe: BPF unavailable: " + unavailable.get());
            return 3;
        }
        PrometheusRegistry metrics = new PrometheusRegistry();
        Agent agent;
        SourceLinesSwitch lines = new SourceLinesSwitch(config.lines());
        try {
            agent = compose(config, metrics, lines);
        } catch (StartFailure e) {
            System.err.println("loupe: " + e.getMessage());
            return 1;
        }
        agent.registerMetrics(metrics);
        DebugHttpServer server;
        try {
            server = serveHttp(config, agent, metrics);
        } catch (StartFailure e) {
            System.err.println("loupe: " + e.getMessage());
            agent.stop(); // closes the sinks, the sampler and the side sources it was given
            return 1;
        }
        ServiceSupervisor supervisor = ServiceSupervisor.start(sdNotify(), agent, System::nanoTime);
        ConfigReloader reloader = new ConfigReloader(args, config, agent, supervisor, lines);
        Thread hook = new Thread(() -> {
            supervisor.close(); // STOPPING=1
            reloader.close();
            if (server != null) {
                server.close();
            }
            agent.stop(); // flushes the partial interval on SIGTERM/SIGINT
        }, "loupe-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        agent.start();
        reloader.onSighup();
        logStart(config, agent, server);
        return awaitEnd(config, agent, server, hook);
    }

    /**
     * Sinks, the sampler, the symbolizer, the unwind-table uploader and latency probes, wired into an agent that
     * owns them from then on. A step that fails closes what the steps before it opened.
     */
    private static Agent compose(LoupeConfig config, PrometheusRegistry metrics, SourceLinesSwitch lines) throws StartFailure {
        List<ProfileSink> sinks;
        try {
            sinks = Sinks.open(config);
        } catch (Sinks.StartFailure e) {
            throw new StartFailure(e.getMessage());
        }
        PerfEventSampler sampler;
        try {
            sampler = config.unwindTables()
                    ? PerfEventSampler.open(config.frequencyHz(), config.pids(), UnwindMaps.Capacity.forBudget(config.unwindTableBudget()),
                            UnwinderAbi.constants())
                    : PerfEventSampler.openWithoutUnwindTables(config.frequencyHz(), config.pids());
        } catch (BpfException e) {
            Sinks.closeAll(sinks);
            throw new StartFailure(e.getMessage());
        }
        // One reader of /proc for the symbolizer and the unwind tables: a process one of them reads is pushed to the other.
        ProcessRegistry processes;
        RuntimeRegistry runtimes;
        Agent agent;
        try {
            processes = ProcessRegistry.host();
            // One reader of each process's runtimes (a JVM's memory, a perf map) for names and tables alike.
            Set<String> off = new java.util.HashSet<>();
            if (!config.get(Options.JVM_CODE_CACHE)) {
                off.add(HOTSPOT);
            }
            if (!config.get(Options.NODE_FRAMES)) {
                off.add(V8);
            }
            runtimes = new RuntimeRegistry(KnownRuntimes.all(processes.procRoot(), System::nanoTime, off), processes,
                    System::nanoTime);
            agent = new Agent(config.frequencyHz(), config.interval(), new KernelSampleSource(sampler),
                    lines.register(Symbolizer.create(Symbolizer.Options.defaults(), processes, runtimes)),
                    sinks, Clocks.system(),
                    Agent.Options.defaults(Map.of("node", HostName.get())));
        } catch (RuntimeException e) {
            // Until the agent owns them, the sampler and the sinks started above are this method's to close.
            sampler.close();
            Sinks.closeAll(sinks);
            throw e;
        }
        try {
            agent.externalLabels(config.externalLabels()); // on every sample of local files, as node is
            // The kernel's exit records release what every consumer of the registry holds for a process (the symbolizer's
            // state, its runtimes, its unwind registration); the periodic /proc scan is the fallback.
            agent.onProcessExit((pid, startNs) -> processes.processExited(pid, startNs / ProcessRegistry.NANOS_PER_TICK));
            agent.reportProcessStates("registry", processes::size);
            agent.reportProcessStates("runtimes", runtimes::size);
            if (config.unwindTables()) {
                // Only with tables: the uploader listens to the process registry and queues every new process.
                UnwindTableUploader unwind = new UnwindTableUploader(new KernelUnwindTarget(sampler.unwindMaps()),
                        UnwindTableUploader.TableBuilder.ehFrame(), processes, runtimes, EXIT_SCAN_NANOS, System::nanoTime,
                        config.pids().isEmpty() ? pid -> true : config.pids()::contains);
                agent.unwindTables(unwind);
                UnwindMetrics.register(unwind, metrics);
                unwind.start();
            }
            if (config.get(Options.JVM_SYMBOLS)) {
                jvmSymbols(processes).ifPresent(j -> {
                    agent.addSampleObserver(j);
                    agent.reportProcessStates("jvm_symbols", j::tracked);
                });
            }
            // Always there, so that a reload can turn it on; the kernel side is loaded the first time it is.
            OffCpuProfiles offCpu = agent.offCpuProfiles(new OffCpuProfiles.Control() {
                @Override
                public void probability(double p, boolean includeSelf) throws BpfException {
                    sampler.offCpu(p, includeSelf ? 0 : selfHostTgid());
                }

                @Override
                public long[] counters() {
                    PerfEventSampler.OffCpuStats s = sampler.offCpuStats();
                    return new long[] {s.switches(), s.recorded(), s.drops() + s.endDrops(), s.delivered(), s.unmatched()};
                }
            });
            if (config.offCpuThreshold() > 0) {
                try {
                    offCpu.configure(config.offCpuThreshold(), config.offCpuIncludeSelf());
                } catch (Exception e) {
                    throw new IllegalStateException("off-CPU profiles (--off-cpu-threshold " + config.offCpuThreshold()
                            + ") cannot start: " + e.getMessage(), e);
                }
            }
            // Always there, so that a reload can add probes; the kernel side is loaded with the first probe.
            // Caller stacks (stacks: true) are symbolized by a symbolizer of their own (one thread each) over the shared registry.
            ProbeManager.start(config.probes(), ProbeManager.Options.defaults(config.probesMaxFunctions()),
                    () -> lines.register(Symbolizer.create(new Symbolizer.Options(Path.of("/proc"), Path.of("/proc/kallsyms"),
                            16L << 20, System::nanoTime), processes, runtimes)),
                    RegressionTracker.open(config.stateDir().resolve("latency-baselines"), regressionSettings(config),
                            System::currentTimeMillis)).ifPresent(agent::addSideProfiles);
        } catch (RuntimeException e) {
            agent.stop();
            throw e;
        }
        return agent;
    }

    /**
     * This process's tgid as the kernel names it (the first of /proc/self/status's NSpid, when /proc is the host's):
     * off-CPU profiles leave the agent's own waits out. Its pid here when that cannot be read.
     */
    static int selfHostTgid() {
        try {
            for (String line : java.nio.file.Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("NSpid:")) {
                    return Integer.parseInt(line.substring(6).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // below
        }
        return (int) ProcessHandle.current().pid();
    }

    /** HotSpot JVMs' JIT symbols (--jvm-symbols on); without /proc/self/status the agent runs without them. */
    private static Optional<JvmSymbols> jvmSymbols(ProcessRegistry processes) {
        try {
            return Optional.of(JvmSymbols.start(processes));
        } catch (IOException | RuntimeException e) {
            System.getLogger(Main.class.getName()).log(System.Logger.Level.WARNING,
                    "jvm symbols off: cannot read the agent's own credentials: " + e.getMessage());
            return Optional.empty();
        }
    }

    static RegressionTracker.Settings regressionSettings(LoupeConfig config) {
        return new RegressionTracker.Settings(config.get(Options.LATENCY_REGRESSION_WINDOW),
                config.get(Options.LATENCY_REGRESSION_MIN_CALLS), config.get(Options.LATENCY_REGRESSION_THRESHOLD),
                config.get(Options.LATENCY_REGRESSION_WARMUP));
    }

    private static SdNotify sdNotify() {
        try {
            return SdNotify.fromEnvironment();
        } catch (IllegalArgumentException e) {
            System.getLogger(Main.class.getName()).log(System.Logger.Level.WARNING,
                    "not telling systemd about readiness: " + e.getMessage());
            return SdNotify.disabled();
        }
    }

    private static DebugHttpServer serveHttp(LoupeConfig config, Agent agent, PrometheusRegistry metrics) throws StartFailure {
        if (config.http().address().isEmpty() && config.http().socket().isEmpty()) {
            return null;
        }
        try {
            return DebugHttpServer.start(config.http(), agent, metrics);
        } catch (IOException e) {
            throw new StartFailure(e.getMessage());
        }
    }

    private static void logStart(LoupeConfig config, Agent agent, DebugHttpServer server) {
        System.getLogger(Main.class.getName()).log(System.Logger.Level.INFO, "profiling at " + config.frequencyHz()
                + " Hz, a profile every " + config.interval().toSeconds() + " s to "
                + (config.localFiles() ? config.outputDir().toAbsolutePath() + " " : "")
                + config.remoteStore().map(r -> "parca " + r.address() + " ").orElse("")
                + config.kafka().map(k -> "kafka " + k.bootstrapServers() + "/" + k.topic() + " ").orElse("")
                + "(sinks: " + agent.sinkNames() + ")"
                + (server == null ? "" : server.baseUrl().map(u -> ", " + u + "/metrics (profiles: "
                        + config.http().profiles().word() + ")").orElse("")
                        + server.socket().map(p -> ", " + p + " (profiles, metrics)").orElse("")));
    }

    /** Until --duration ends (0) or the loop dies on its own (1); SIGTERM ends the JVM through the hook. */
    private static int awaitEnd(LoupeConfig config, Agent agent, DebugHttpServer server, Thread hook) {
        try {
            if (config.duration().isPresent()) {
                if (agent.awaitStopped(config.duration().get())) {
                    return 1; // the loop died on its own
                }
                agent.stop();
                if (server != null) {
                    server.close();
                }
                Runtime.getRuntime().removeShutdownHook(hook);
                return 0;
            }
            agent.awaitStopped(Duration.ofNanos(Long.MAX_VALUE)); // ofDays(365_000) overflowed toNanos()
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 1;
        }
    }
}
