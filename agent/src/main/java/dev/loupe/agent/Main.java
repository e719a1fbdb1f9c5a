package dev.loupe.agent;

import dev.loupe.agent.http.DebugHttpServer;
import dev.loupe.agent.logging.LogFormat;
import dev.loupe.agent.sampling.Agent;
import dev.loupe.agent.sampling.Clocks;
import dev.loupe.agent.sampling.KernelSampleSource;
import dev.loupe.agent.sink.ProfileSink;
import dev.loupe.agent.unwind.KernelUnwindTarget;
import dev.loupe.agent.unwind.UnwindMetrics;
import dev.loupe.agent.unwind.UnwindTableUploader;
import dev.loupe.agent.unwind.UnwinderAbi;
import dev.loupe.bpf.BpfAvailability;
import dev.loupe.bpf.BpfException;
import dev.loupe.bpf.PerfEventSampler;
import dev.loupe.config.CommandLine;
import dev.loupe.config.ConfigException;
import dev.loupe.config.LoupeConfig;
import dev.loupe.unwinder.proc.ProcessRegistry;
import dev.loupe.unwinder.symbolize.Symbolizer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code loupe run [options]}. Exit codes: 0 done, 1 runtime failure, 2 bad arguments or config,
 * 3 BPF unavailable on this host.
 */
public final class Main {
    /*
     * How often the unwind uploader lists /proc to forget exited processes. Only kernel memory waits on it
     * (the BPF program checks each process's start time, so a reused pid never meets stale tables); every
     * 500 ms the uploader thread used 111 ms of CPU a minute at steady state, 26 ms at 5 s.
     */
    static final long EXIT_SCAN_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(5);

    private Main() {}

    public static void main(String[] args) {
        LogFormat.install();
        if (args.length > 0 && args[0].equals("relay")) {
            System.exit(dev.loupe.agent.relay.RelayCommand.run(Arrays.copyOfRange(args, 1, args.length)));
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
        System.exit(run(parsed.config()));
    }

    static int run(LoupeConfig config) {
        Optional<String> unavailable = BpfAvailability.unavailabilityReason();
        if (unavailable.isPresent()) {
            System.err.println("loupe: BPF unavailable: " + unavailable.get());
            return 3;
        }
        List<ProfileSink> sinks;
        try {
            sinks = Sinks.open(config);
        } catch (Sinks.StartFailure e) {
            System.err.println("loupe: " + e.getMessage());
            return 1;
        }
        PerfEventSampler sampler;
        try {
            sampler = config.unwindTables()
                    ? PerfEventSampler.open(config.frequencyHz(), config.pids(),
                            dev.loupe.bpf.UnwindMaps.Capacity.forBudget(config.unwindTableBudget()), UnwinderAbi.constants())
                    : PerfEventSampler.openWithoutUnwindTables(config.frequencyHz(), config.pids());
        } catch (BpfException e) {
            System.err.println("loupe: " + e.getMessage());
            Sinks.closeAll(sinks);
            return 1;
        }
        // One reader of /proc for the symbolizer and the unwind tables: a process one of them reads is pushed to the other.
        ProcessRegistry processes = ProcessRegistry.host();
        Symbolizer symbolizer = Symbolizer.create(Symbolizer.Options.defaults(), processes);
        PrometheusRegistry metrics = new PrometheusRegistry();
        Agent agent = new Agent(config.frequencyHz(), config.interval(), new KernelSampleSource(sampler), symbolizer,
                sinks, Clocks.system(), Agent.Options.defaults(Map.of("node", HostName.get())));
        if (config.unwindTables()) {
            // Only with tables: the uploader listens to the process registry and queues every new process.
            UnwindTableUploader unwind = new UnwindTableUploader(new KernelUnwindTarget(sampler.unwindMaps()),
                    new UnwindTableUploader.TableBuilder() {
                        @Override
                        public dev.loupe.unwinder.ehframe.UnwindTable build(java.nio.file.Path file) throws Exception {
                            return dev.loupe.unwinder.ehframe.UnwindTableBuilder.build(file);
                        }

                        @Override
                        public dev.loupe.unwinder.ehframe.UnwindTable build(String name, java.nio.ByteBuffer image) throws Exception {
                            return dev.loupe.unwinder.ehframe.UnwindTableBuilder.build(name, image);
                        }
                    }, processes, EXIT_SCAN_NANOS, System::nanoTime,
                    config.pids().isEmpty() ? pid -> true : config.pids()::contains);
            agent.unwindTables(unwind);
            UnwindMetrics.register(unwind, metrics);
            unwind.start();
        }
        if (!config.probes().isEmpty()) {
            // Caller stacks (stacks: true) are symbolized by a symbolizer of their own (one thread each) over the shared registry.
            dev.loupe.agent.latency.ProbeManager.start(config.probes(),
                    dev.loupe.agent.latency.ProbeManager.Options.defaults(config.probesMaxFunctions()),
                    () -> Symbolizer.create(new Symbolizer.Options(java.nio.file.Path.of("/proc"), java.nio.file.Path.of("/proc/kallsyms"),
                            16L << 20, System::nanoTime), processes)).ifPresent(agent::addSideProfiles);
        }
        agent.registerMetrics(metrics);
        DebugHttpServer http = null;
        if (config.httpAddress().isPresent()) {
            InetSocketAddress addr = config.httpAddress().get();
            try {
                http = DebugHttpServer.start(addr, agent, metrics);
            } catch (IOException e) {
                System.err.println("loupe: cannot serve HTTP on " + addr.getHostString() + ":" + addr.getPort()
                        + ": " + e.getMessage() + " (set http.address or --http off)");
                sampler.close();
                Sinks.closeAll(sinks);
                return 1;
            }
        }
        DebugHttpServer server = http;
        Thread hook = new Thread(() -> {
            if (server != null) {
                server.close();
            }
            agent.stop(); // flushes the partial interval on SIGTERM/SIGINT
        }, "loupe-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        agent.start();
        System.Logger log = System.getLogger(Main.class.getName());
        log.log(System.Logger.Level.INFO, "profiling at " + config.frequencyHz() + " Hz, a profile every "
                + config.interval().toSeconds() + " s to " + (config.localFiles() ? config.outputDir().toAbsolutePath() + " " : "")
                + config.remoteStore().map(r -> "parca " + r.address() + " ").orElse("")
                + config.kafka().map(k -> "kafka " + k.bootstrapServers() + "/" + k.topic() + " ").orElse("")
                + "(sinks: " + sinks.stream().map(ProfileSink::name).toList() + ")"
                + (server == null ? "" : ", http://" + server.address().getHostString() + ":" + server.address().getPort()
                + "/debug/pprof/profile"));
        try {
            if (config.duration().isPresent()) {
                Duration d = config.duration().get();
                if (agent.awaitStopped(d)) {
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
