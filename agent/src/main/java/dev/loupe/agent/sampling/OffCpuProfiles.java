package dev.loupe.agent.sampling;

import dev.loupe.pprof.proto.Profile;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Off-CPU profiles ({@code offcpu-TIME.pb.gz}, {@code /debug/pprof/offcpu}): where threads waited and how long, from
 * the waits the sample source delivers among its samples (each recorded with probability P, weighted 1/P by the
 * {@link SampleProcessor}). One window per interval, the same interval as the CPU profile's (its time and duration);
 * the kernel side is turned on, off and retuned through {@link Control}, at start and at a reload.
 */
public final class OffCpuProfiles implements SideProfileSource {
    private static final System.Logger LOG = System.getLogger(OffCpuProfiles.class.getName());
    static final String TYPE = "offcpu";
    static final String SERIES_NAME = "parca_agent_offcpu";

    /**
     * The kernel side: records switch-outs with a probability (0: not at all), the agent's own only when asked, and
     * reports its counters.
     */
    public interface Control {
        void probability(double p, boolean includeSelf) throws Exception;

        /** switches seen, recorded, records lost (either half), waits delivered, halves unmatched. */
        long[] counters();
    }

    private final SampleProcessor processor;
    private final Clocks clocks;
    private final Control control;
    private volatile double probability;
    private volatile boolean includeSelf;
    private ProfileWindow window; // guarded by this

    OffCpuProfiles(SampleProcessor processor, Clocks clocks, Control control) {
        this.processor = processor;
        this.clocks = clocks;
        this.control = control;
    }

    /**
     * Sets the probability a switch-out is recorded with (0..1, 0 off) and whether the agent's own switch-outs are
     * among them; the interval's window stays open either way.
     */
    public synchronized void configure(double p, boolean includeSelf) throws Exception {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("off-CPU probability " + p + " is outside 0..1");
        }
        control.probability(p, includeSelf);
        probability = p;
        this.includeSelf = includeSelf;
        processor.offCpuProbability(p);
    }

    /** Opens the first interval's window: when the agent starts, with the CPU profile's. */
    synchronized void start() {
        if (window == null) {
            window = newWindow();
            processor.openOffCpu(window);
        }
    }

    public double probability() {
        return probability;
    }

    public boolean includesSelf() {
        return includeSelf;
    }

    private ProfileWindow newWindow() {
        return ProfileWindow.offCpu(clocks.wallNanos(), clocks.nanoTime());
    }

    @Override
    public String profileType() {
        return TYPE;
    }

    @Override
    public String seriesName() {
        return SERIES_NAME;
    }

    /** The interval's waits, with the CPU profile's time and duration; empty while off and nothing was recorded. */
    @Override
    public synchronized Optional<Profile> interval(long timeNanos, long durationNanos) {
        ProfileWindow w = window;
        if (w == null) {
            return Optional.empty();
        }
        window = newWindow();
        processor.openOffCpu(window);
        processor.closeOffCpu(w);
        Profile p = w.finish(clocks.nanoTime());
        if (probability == 0 && p.getSampleCount() == 0) {
            return Optional.empty();
        }
        return Optional.of(p.toBuilder().setTimeNanos(timeNanos).setDurationNanos(durationNanos).build());
    }

    @Override
    public Profile capture(Duration duration) throws InterruptedException {
        ProfileWindow w = newWindow();
        processor.openOffCpu(w);
        try {
            TimeUnit.NANOSECONDS.sleep(duration.toNanos());
        } finally {
            processor.closeOffCpu(w);
        }
        return w.finish(clocks.nanoTime());
    }

    @Override
    public void registerMetrics(PrometheusRegistry registry) {
        CounterWithCallback.builder().name("loupe_offcpu_switches_total")
                .help("Switch-outs of user threads the off-CPU program saw, and those it recorded (probability P).")
                .labelNames("outcome").callback(cb -> {
                    long[] c = control.counters();
                    cb.call(c[0], "seen");
                    cb.call(c[1], "recorded");
                }).register(registry);
        CounterWithCallback.builder().name("loupe_offcpu_waits_total")
                .help("Off-CPU waits: delivered with stack and length, or lost (a record lost to a full ring buffer, "
                        + "or a half without its other).")
                .labelNames("outcome").callback(cb -> {
                    long[] c = control.counters();
                    cb.call(c[3], "delivered");
                    cb.call(c[2], "ring_buffer_full");
                    cb.call(c[4], "unmatched");
                }).register(registry);
        GaugeWithCallback.builder().name("loupe_offcpu_probability")
                .help("The probability a switch-out is recorded with (--off-cpu-threshold); 0: off.")
                .callback(cb -> cb.call(probability)).register(registry);
    }

    @Override
    public void close() {
        try {
            control.probability(0, includeSelf);
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "off-CPU: detaching failed: " + e.getMessage());
        }
    }
}
