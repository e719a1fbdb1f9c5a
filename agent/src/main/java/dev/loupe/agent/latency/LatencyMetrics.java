package dev.loupe.agent.latency;

import dev.loupe.agent.regression.FunctionKey;

import dev.loupe.bpf.LatencyHistogram;
import dev.loupe.bpf.LatencyStats;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The latency probes' metrics: one histogram series per probed function, cumulative since its probe was
 * attached (present at 0 from then on), and the probes' counters. One collector, so a scrape reads the
 * kernel's histograms once for all of them.
 */
final class LatencyMetrics implements MultiCollector {
    static final String HISTOGRAM = "loupe_function_duration_seconds";
    /** Upper bounds in seconds, 2^k µs for k = 0..30, then +Inf. */
    private static final double[] BOUNDS = new double[LatencyHistogram.BUCKETS];

    static {
        for (int k = 0; k < LatencyHistogram.FINITE_BUCKETS; k++) {
            BOUNDS[k] = LatencyHistogram.upperBoundSeconds(k);
        }
        BOUNDS[LatencyHistogram.FINITE_BUCKETS] = Double.POSITIVE_INFINITY;
    }

    /**
     * What one scrape shows.
     *
     * @param totals per function ever probed, in first-attach order: its counts since then, over every build and
     *               probe it had (detached ones keep their final counts)
     * @param stats  the kernel side's counters, null before the programs were loaded
     */
    record Snapshot(Map<FunctionKey, LatencyHistogram> totals, LatencyStats stats, int attached, long problems,
                    long profileGroupsDropped) {}

    private final Supplier<Snapshot> source;

    LatencyMetrics(Supplier<Snapshot> source) {
        this.source = source;
    }

    static double[] bounds() {
        return BOUNDS.clone();
    }

    @Override
    public MetricSnapshots collect() {
        Snapshot s = source.get();
        List<MetricSnapshot> out = new ArrayList<>();
        HistogramSnapshot.Builder h = HistogramSnapshot.builder().name(HISTOGRAM)
                .help("Duration of calls of probed functions (entry to return), measured in the kernel.");
        for (var e : s.totals().entrySet()) {
            LatencyHistogram hist = e.getValue();
            h.dataPoint(HistogramSnapshot.HistogramDataPointSnapshot.builder()
                    .labels(Labels.of("binary", e.getKey().binary(), "function", e.getKey().function()))
                    .classicHistogramBuckets(ClassicHistogramBuckets.of(BOUNDS, hist.buckets()))
                    .sum(hist.sumNanos() / 1e9)
                    .build());
        }
        out.add(h.build());
        out.add(gauge("loupe_probe_functions_attached", "Functions measured by latency probes now.", s.attached()));
        out.add(counter("loupe_probe_problems", "Probe patterns or functions that could not be probed (logged with the reason).",
                s.problems()));
        LatencyStats st = s.stats();
        if (st != null) {
            out.add(counter("loupe_probe_calls_entered", "Calls of probed functions entered.", st.entries()));
            out.add(counter("loupe_probe_calls_measured", "Calls of probed functions measured into a histogram.", st.exits()));
            out.add(counter("loupe_probe_thread_migrations",
                    "Measured calls that returned on a different thread than they entered (Go goroutines moving between threads).",
                    st.threadMigrations()));
            out.add(counter("loupe_probe_reentries",
                    "Go function entries run again for one call (stack growth or preemption in the prologue), collapsed.",
                    st.reentries()));
            out.add(counter("loupe_probe_stale_entries",
                    "Native calls whose exit was missed (longjmp, exceptions), replaced by a later call.", st.staleReplaced()));
            out.add(counter("loupe_probe_unmatched_exits", "Returns with no recorded entry.", st.unmatchedExits()));
            out.add(counter("loupe_probe_in_flight_full", "Calls not measured because the in-flight table was full.",
                    st.inFlightFull()));
            out.add(counter("loupe_probe_goid_read_errors", "Go probe hits whose goroutine could not be read.", st.gReadErrors()));
            out.add(counter("loupe_probe_unconfigured_hits", "Probe hits of no active probe.", st.unconfigured()));
            out.add(counter("loupe_probe_groups_full",
                    "Measured calls left out of the latency profile's per-process/goroutine/stack groups (kernel table full; histograms stay exact).",
                    st.groupsFull() + s.profileGroupsDropped()));
            out.add(counter("loupe_probe_stacks_full",
                    "Calls whose caller stack was not stored (kernel stack table full; shown as [stack unavailable]).",
                    st.stacksFull()));
            out.add(counter("loupe_probe_aged_out",
                    "Calls in flight too long (goroutines or threads that never returned), forgotten.", st.agedOut()));
        }
        return new MetricSnapshots(out);
    }

    /** A counter family; the exposition adds {@code _total} to {@code name}. */
    private static CounterSnapshot counter(String name, String help, long value) {
        return CounterSnapshot.builder().name(name).help(help)
                .dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().value(value).build()).build();
    }

    private static GaugeSnapshot gauge(String name, String help, long value) {
        return GaugeSnapshot.builder().name(name).help(help)
                .dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(value).build()).build();
    }
}
