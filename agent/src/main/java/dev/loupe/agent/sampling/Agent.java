package dev.loupe.agent.sampling;

import dev.loupe.agent.labels.CgroupLabelCache;
import dev.loupe.agent.logging.RateLimitedLog;
import dev.loupe.agent.sink.EncodedProfile;
import dev.loupe.agent.sink.ProfileBatch;
import dev.loupe.agent.sink.ProfileSink;
import dev.loupe.agent.sink.SinkRunner;
import dev.loupe.agent.sink.SinkStats;
import dev.loupe.agent.unwind.UnwindTableUploader;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.SampleLabels;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.unwinder.symbolize.Symbolizer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The main loop: polls the sample source, symbolizes into the open profile windows, and every interval
 * (monotonic) encodes the finished host-wide profile once and queues it for every sink. Sinks run on
 * their own threads behind bounded queues, so nothing a sink does can stall sampling or grow the heap
 * without bound. {@link #stop()} flushes the partial last interval, so SIGTERM loses nothing.
 */
public final class Agent {
    private static final System.Logger LOG = System.getLogger(Agent.class.getName());
    // How long a poll waits when nothing forces a wakeup: each wakeup of this thread costs CPU (here, in a VM, about
    // 0.25 ms: at 100 ms, a third of the idle agent's CPU). Samples that need prompt work force their wakeup (see
    // profiler.bpf.c) and a quarter-full ring buffer wakes it, so a longer wait delays only plain samples, and the
    // end of an interval by as much.
    private static final Duration POLL = Duration.ofMillis(250);
    private static final long HEALTHY_POLL_AGE = TimeUnit.SECONDS.toNanos(5);
    /** Profile type and Parca's series name for CPU profiles (what Parca's UI looks for). */
    static final String CPU_TYPE = "cpu";
    static final String CPU_SERIES_NAME = "parca_agent_cpu";

    /**
     * Tunables of the agent loop.
     *
     * @param sinkQueueCapacity intervals queued per sink before the oldest is dropped
     * @param stopTimeout       how long stop() lets sinks deliver what is queued
     * @param seriesLabels      labels on every series (e.g. node), besides __name__
     * @param cgroupReader      a process's cgroup file, for its systemd unit and container id labels
     */
    public record Options(int sinkQueueCapacity, Duration stopTimeout, Map<String, String> seriesLabels,
                          CgroupLabelCache.Reader cgroupReader) {
        public Options {
            seriesLabels = Map.copyOf(seriesLabels);
        }

        public static Options defaults(Map<String, String> seriesLabels) {
            return new Options(8, Duration.ofSeconds(30), seriesLabels,
                    CgroupLabelCache.procReader(java.nio.file.Path.of("/proc")));
        }

        public Options withCgroupReader(CgroupLabelCache.Reader reader) {
            return new Options(sinkQueueCapacity, stopTimeout, seriesLabels, reader);
        }
    }

    private final SampleSource source;
    private final Symbolizer symbolizer;
    /** Replaced whole (never changed in place) by the loop thread when a reload swaps the sinks. */
    private volatile List<SinkRunner> sinks;
    /** Sinks a reload asked for; the loop swaps them in between two polls. */
    private final java.util.concurrent.atomic.AtomicReference<SinkSwap> pendingSwap = new java.util.concurrent.atomic.AtomicReference<>();
    private final Clocks clocks;
    private final Options options;
    /** Labels on every sample of the gzipped bytes (local files): the series labels and the external labels. */
    private volatile Map<String, String> fileLabels;
    private final long periodNanos;
    private final long intervalNanos;
    private final SampleProcessor processor;
    private volatile Thread loop;
    private final CountDownLatch stopped = new CountDownLatch(1);
    private final AtomicLong pollErrors = new AtomicLong();
    private final AtomicLong intervals = new AtomicLong();
    private final RateLimitedLog pollErrorLog;
    private volatile boolean running;
    private volatile long lastPollNanos;
    /** Polls completed by the loop: the watchdog's sign of progress (an idle host may go long without a sample). */
    private volatile long polls;
    private boolean stopRequested;

    public Agent(int frequencyHz, Duration interval, SampleSource source, Symbolizer symbolizer,
                 List<ProfileSink> sinks, Clocks clocks, Options options) {
        this.source = source;
        this.symbolizer = symbolizer;
        this.clocks = clocks;
        this.options = options;
        this.fileLabels = java.util.Collections.unmodifiableMap(new TreeMap<>(options.seriesLabels()));
        this.periodNanos = 1_000_000_000L / frequencyHz;
        this.intervalNanos = interval.toNanos();
        this.processor = new SampleProcessor(symbolizer, options.cgroupReader(), clocks.monotonicNanos());
        this.sinks = runners(sinks);
        this.pollErrorLog = new RateLimitedLog(LOG, System.Logger.Level.ERROR, TimeUnit.MINUTES.toNanos(1),
                clocks.monotonicNanos());
    }

    private List<SinkRunner> runners(List<ProfileSink> sinks) {
        List<SinkRunner> r = new ArrayList<>();
        for (ProfileSink s : sinks) {
            r.add(new SinkRunner(s, options.sinkQueueCapacity(), clocks.monotonicNanos()));
        }
        return List.copyOf(r);
    }

    /** Opens the sinks of a reload; called on the loop thread after the old sinks have drained and closed. */
    @FunctionalInterface
    public interface SinkOpener {
        List<ProfileSink> open() throws Exception;
    }

    private record SinkSwap(SinkOpener opener, SinkOpener fallback, java.util.concurrent.CompletableFuture<List<String>> done) {}

    /**
     * Replaces the sinks between two polls of the loop, so no interval meets a gap: the old sinks write what
     * they hold (remote ones into their spools) and close, then {@code opener}'s sinks take the next interval.
     * If {@code opener} fails, {@code fallback}'s sinks (the running configuration's) are opened instead and the
     * future completes exceptionally with the opener's failure. Completes with the new sinks' names.
     */
    public java.util.concurrent.CompletableFuture<List<String>> replaceSinks(SinkOpener opener, SinkOpener fallback) {
        java.util.concurrent.CompletableFuture<List<String>> done = new java.util.concurrent.CompletableFuture<>();
        synchronized (this) {
            if (stopRequested) {
                done.completeExceptionally(new IllegalStateException("the agent is stopping"));
                return done;
            }
            SinkSwap previous = pendingSwap.getAndSet(new SinkSwap(opener, fallback, done));
            if (previous != null) {
                previous.done().completeExceptionally(new IllegalStateException("superseded by a later reload"));
            }
            if (loop == null) {
                swapSinks(); // not started: nothing polls yet, so swap here
            }
        }
        return done;
    }

    private void swapSinks() {
        SinkSwap swap = pendingSwap.getAndSet(null);
        if (swap == null) {
            return;
        }
        long deadline = clocks.nanoTime() + options.stopTimeout().toNanos();
        for (SinkRunner s : sinks) {
            s.stop(deadline);
        }
        try {
            sinks = runners(swap.opener().open());
            swap.done().complete(sinkNames());
        } catch (Exception e) {
            try {
                sinks = runners(swap.fallback().open());
            } catch (Exception again) {
                sinks = List.of();
                LOG.log(System.Logger.Level.ERROR, "reload: the running configuration's sinks failed to reopen too: " + again);
            }
            swap.done().completeExceptionally(e);
        }
    }

    /**
     * The user's external labels for local files: from the next interval encoded, every sample of the gzipped bytes
     * carries them besides the series labels (node), which win over an external label of the same name (config
     * forbids such names anyway); a sample's own label of that name wins over both. Series labels, and so the
     * remote sinks, do not get them: Parca and Kafka sinks add external labels to their series themselves. A reload
     * sets them from its sink opener, on the loop thread, so they change together with the sinks.
     */
    public void externalLabels(Map<String, String> external) {
        Map<String, String> labels = new TreeMap<>(external);
        labels.putAll(options.seriesLabels());
        fileLabels = java.util.Collections.unmodifiableMap(labels);
    }

    /** Samples turned into profile samples so far (cheap: a counter; {@link #status()} reads the kernel's maps). */
    public long samplesProcessed() {
        return processor.processed();
    }

    /** Polls the loop has completed since start. */
    public long polls() {
        return polls;
    }

    /** Names of sinks whose thread has died (never stopped by us). */
    public List<String> deadSinkThreads() {
        return sinks.stream().filter(s -> !s.threadAlive()).map(SinkRunner::name).toList();
    }

    private ProfileWindow newWindow() {
        return new ProfileWindow(periodNanos, clocks.wallNanos(), clocks.nanoTime());
    }

    private volatile UnwindTableUploader unwind;
    private final List<SideProfileSource> sideProfiles = new java.util.concurrent.CopyOnWriteArrayList<>();

    /**
     * Off-CPU profiles from the waits among the source's samples, the kernel side turned on and off by {@code control}:
     * made and added as a side profile here (before start); its probability is set by the caller (0 until then).
     */
    public OffCpuProfiles offCpuProfiles(OffCpuProfiles.Control control) {
        OffCpuProfiles o = new OffCpuProfiles(processor, clocks, control);
        sideProfiles.add(o);
        offCpu = o;
        return o;
    }

    private volatile OffCpuProfiles offCpu;

    /** A profile to make each interval beside the CPU profile (before start). */
    public void addSideProfiles(SideProfileSource s) {
        sideProfiles.add(s);
    }

    /** Registers the loop's, the sampler's, the symbolizer's, the sinks' and the side sources' metrics. */
    public void registerMetrics(io.prometheus.metrics.model.registry.PrometheusRegistry registry) {
        AgentMetrics.register(this, registry);
        for (SideProfileSource s : sideProfiles) {
            s.registerMetrics(registry);
        }
    }

    /** The sinks' names, in the order they were given. */
    public List<String> sinkNames() {
        return sinks.stream().map(SinkRunner::name).toList();
    }

    public List<SideProfileSource> sideProfiles() {
        return List.copyOf(sideProfiles);
    }

    /** Unwind tables to feed with the processes samples reveal, and to report on /metrics (before start). */
    public void unwindTables(UnwindTableUploader u) {
        this.unwind = u;
        processor.unwindTables(u);
    }

    /**
     * Told of each process exit the sample source reports, once the process's last samples were processed (before
     * start): the agent wires the shared process registry here, which tells the symbolizer and the unwind tables.
     */
    public void onProcessExit(dev.loupe.bpf.ProcessExits l) {
        processor.addExitListener(l);
    }

    private final Map<String, java.util.function.LongSupplier> processStateHolders = new java.util.concurrent.ConcurrentSkipListMap<>();

    /**
     * One more holder of per-process state to report on /metrics ({@code loupe_process_states{holder}}) besides the
     * loop's own (before {@link #registerMetrics}): how many processes it holds state for now. Read from any thread.
     */
    public void reportProcessStates(String holder, java.util.function.LongSupplier processes) {
        processStateHolders.put(holder, processes);
    }

    /** How many processes each holder of per-process state holds state for now (symbolizer, labels, unwind, ...). */
    Map<String, Long> processStates() {
        Map<String, Long> out = new TreeMap<>();
        Symbolizer.Stats st = symbolizer.stats();
        if (st != null) {
            out.put("symbolizer", st.processes());
        }
        out.put("labels", (long) processor.cachedLabelProcesses());
        out.put("cgroups", (long) processor.cachedCgroups());
        out.put("exits_pending", (long) processor.pendingExits());
        UnwindTableUploader u = unwind;
        if (u != null) {
            UnwindTableUploader.Stats s = u.stats();
            out.put("unwind_registrations", s.registrationsHeld());
            out.put("unwind_retry_pauses", s.retryPauses());
            out.put("unwind_runtime_tables", s.runtimeTableProcesses());
        }
        processStateHolders.forEach((k, v) -> out.put(k, v.getAsLong()));
        return out;
    }

    private final List<SampleObserver> observers = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** Told of every sampled process (before start); closed at stop. */
    public void addSampleObserver(SampleObserver o) {
        observers.add(o);
        processor.addObserver(o);
    }

    UnwindTableUploader.Stats unwindStats() {
        UnwindTableUploader u = unwind;
        return u == null ? null : u.stats();
    }

    /** Starts sampling; the first interval begins now (not when the loop thread gets scheduled). */
    public synchronized void start() {
        running = true;
        lastPollNanos = clocks.nanoTime();
        ProfileWindow first = newWindow();
        processor.open(first);
        OffCpuProfiles o = offCpu;
        if (o != null) {
            o.start(); // the same interval as the CPU profile's
        }
        loop = new Thread(() -> run(first), "loupe-sampler");
        loop.start();
    }

    private void run(ProfileWindow firstWindow) {
        ProfileWindow window = firstWindow;
        try {
            while (running) {
                try {
                    source.poll(POLL, processor, processor::processExited);
                } catch (SampleSource.SampleSourceException | RuntimeException e) {
                    pollErrors.incrementAndGet();
                    pollErrorLog.log("sampling poll failed: " + e.getMessage());
                    sleepQuietly(POLL);
                }
                processor.releaseExited();
                long now = clocks.nanoTime();
                lastPollNanos = now;
                polls++; // one writer: this thread
                if (pendingSwap.get() != null) {
                    swapSinks();
                }
                if (now - window.startMonotonicNanos() >= intervalNanos) {
                    window = rotate(window, true);
                }
            }
            try {
                source.poll(Duration.ZERO, processor); // what is already in the buffer belongs to this interval
            } catch (SampleSource.SampleSourceException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "final poll failed: " + e.getMessage());
            }
            rotate(window, false);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "sampling loop died", t);
        } finally {
            stopped.countDown();
        }
    }

    private ProfileWindow rotate(ProfileWindow window, boolean openNext) {
        ProfileWindow next = null;
        if (openNext) {
            next = newWindow();
            processor.open(next);
        }
        processor.close(window);
        Profile profile = window.finish(clocks.nanoTime());
        ProfileBatch batch = encode(profile);
        for (SinkRunner s : sinks) {
            s.offer(batch);
        }
        return next;
    }

    /**
     * Encodes once for every sink. One host-wide series for now. The gzipped bytes (local files) carry the series
     * labels (node) and the external labels on every sample, so a file says which host it is from; remote sinks
     * send the series labels and their own external labels as series labels.
     */
    private ProfileBatch encode(Profile profile) {
        Map<String, String> inFiles = fileLabels;
        Map<String, String> labels = new TreeMap<>(options.seriesLabels());
        labels.put("__name__", CPU_SERIES_NAME);
        EncodedProfile p = new EncodedProfile(CPU_TYPE, new TreeMap<>(labels), profile.getTimeNanos(),
                profile.getDurationNanos(), PprofFiles.gzip(SampleLabels.withEverySample(profile, inFiles)),
                profile.getSampleCount(), profile);
        List<EncodedProfile> all = new ArrayList<>(List.of(p));
        for (SideProfileSource side : sideProfiles) {
            try {
                side.interval(profile.getTimeNanos(), profile.getDurationNanos()).ifPresent(sp -> {
                    Map<String, String> sideLabels = new TreeMap<>(options.seriesLabels());
                    sideLabels.put("__name__", side.seriesName());
                    all.add(new EncodedProfile(side.profileType(), new TreeMap<>(sideLabels), sp.getTimeNanos(),
                            sp.getDurationNanos(), PprofFiles.gzip(SampleLabels.withEverySample(sp, inFiles)),
                            sp.getSampleCount(), sp));
                });
            } catch (RuntimeException e) {
                pollErrorLog.log(side.profileType() + " profile failed: " + e.getMessage());
            }
        }
        return new ProfileBatch(intervals.incrementAndGet(), profile.getTimeNanos(), profile.getDurationNanos(), all);
    }

    /**
     * Collects a profile for {@code duration} (the /debug/pprof/profile endpoint). Returns early with what
     * it has if the agent stops meanwhile.
     */
    public Profile capture(Duration duration) throws InterruptedException {
        ProfileWindow w = newWindow();
        processor.open(w);
        try {
            stopped.await(duration.toNanos(), TimeUnit.NANOSECONDS);
        } finally {
            processor.close(w);
        }
        return w.finish(clocks.nanoTime());
    }

    /** Stops sampling, flushes the last partial interval and gives the sinks the stop timeout. Idempotent. */
    public void stop() {
        synchronized (this) {
            if (stopRequested) {
                awaitStoppedQuietly();
                return;
            }
            stopRequested = true;
            running = false;
        }
        Thread l = loop;
        if (l != null && l.isAlive()) {
            awaitStoppedQuietly();
        }
        SinkSwap unswapped = pendingSwap.getAndSet(null);
        if (unswapped != null) {
            unswapped.done().completeExceptionally(new IllegalStateException("the agent stopped before the swap"));
        }
        for (SideProfileSource side : sideProfiles) {
            side.close(); // after the last interval took its share
        }
        long deadline = clocks.nanoTime() + options.stopTimeout().toNanos();
        for (SinkRunner s : sinks) {
            s.stop(deadline);
        }
        UnwindTableUploader u = unwind;
        if (u != null) {
            u.close();
        }
        for (SampleObserver o : observers) {
            o.close();
        }
        source.close();
        try {
            symbolizer.close();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "closing symbolizer: " + e);
        }
    }

    private void awaitStoppedQuietly() {
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Blocks until the sampling loop has ended (after {@link #stop()}) or the timeout passes. */
    public boolean awaitStopped(Duration timeout) throws InterruptedException {
        return stopped.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** A snapshot for /healthz and /metrics. */
    public Status status() {
        long now = clocks.nanoTime();
        List<SinkStats> sinkStats = new ArrayList<>();
        long written = 0;
        long failed = 0;
        for (SinkRunner s : sinks) {
            SinkStats st = s.stats();
            sinkStats.add(st);
            written += st.written();
            failed += st.failed();
        }
        Thread l = loop;
        return new Status(running && l != null && l.isAlive() && now - lastPollNanos < HEALTHY_POLL_AGE,
                source.stats(), processor.processed(), processor.emptyStacks(), written, failed, pollErrors.get(),
                symbolizer.stats(), List.copyOf(sinkStats), unwindStats());
    }

    /**
     * @param profilesWritten intervals delivered, summed over sinks
     * @param sinkErrors      intervals a sink failed to take, summed over sinks
     */
    public record Status(boolean healthy, dev.loupe.bpf.SamplerStats sampler, long samplesProcessed, long emptyStacks,
                         long profilesWritten, long sinkErrors, long pollErrors, Symbolizer.Stats symbolizer,
                         List<SinkStats> sinks, UnwindTableUploader.Stats unwind) {}

    private static void sleepQuietly(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
