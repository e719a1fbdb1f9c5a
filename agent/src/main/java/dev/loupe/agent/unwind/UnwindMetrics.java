package dev.loupe.agent.unwind;

import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;

import java.util.Map;
import java.util.TreeMap;
import java.util.function.ToLongFunction;

/** The unwind-table uploader's metrics, read from {@link UnwindTableUploader#stats()} at each scrape. */
public final class UnwindMetrics {
    static final String DELAY = "loupe_unwind_registration_delay_seconds";

    private UnwindMetrics() {}

    public static void register(UnwindTableUploader uploader, PrometheusRegistry r) {
        counter(r, uploader, "loupe_unwind_tables_built_total", "Unwind tables compiled from .eh_frame/.debug_frame.",
                UnwindTableUploader.Stats::tablesBuilt);
        gauge(r, uploader, "loupe_unwind_tables_loaded", "Unwind tables in the kernel now.", UnwindTableUploader.Stats::tablesLoaded);
        gauge(r, uploader, "loupe_unwind_table_rows", "Unwind table rows in the kernel now.", UnwindTableUploader.Stats::rowsLoaded);
        gauge(r, uploader, "loupe_unwind_table_bytes", "Kernel memory the loaded unwind tables take.",
                UnwindTableUploader.Stats::bytesLoaded);
        counter(r, uploader, "loupe_unwind_table_evictions_total", "Unwind tables evicted to stay within the budget.",
                UnwindTableUploader.Stats::evictions);
        gauge(r, uploader, "loupe_unwind_processes",
                "Processes registered for table unwinding with mappings of their own (runtimes); the rest need no registration.",
                UnwindTableUploader.Stats::processes);
        gauge(r, uploader, "loupe_unwind_files", "Files whose table (or why they have none) the kernel's walk finds by device and inode.",
                UnwindTableUploader.Stats::filesPublished);
        gauge(r, uploader, "loupe_unwind_files_capacity", "Entries of the kernel's file table map.",
                UnwindTableUploader.Stats::fileCapacity);
        counter(r, uploader, "loupe_unwind_file_loads_total",
                "Processes whose files' tables were loaded without registering the process (a sample met a file without one).",
                UnwindTableUploader.Stats::fileLoads);
        counter(r, uploader, "loupe_unwind_processes_refused_total",
                "Processes left to frame pointers because they have more executable mappings than the kernel's search covers.",
                UnwindTableUploader.Stats::refusedTooManyMappings);
        gauge(r, uploader, "loupe_unwind_mappings", "Slots of the kernel's process mappings array held by registered processes now.",
                UnwindTableUploader.Stats::mappingsInUse);
        gauge(r, uploader, "loupe_unwind_mappings_capacity", "Slots of the kernel's process mappings array (from the unwind table budget).",
                UnwindTableUploader.Stats::mappingCapacity);
        counter(r, uploader, "loupe_unwind_registrations_total",
                "Processes registered for table unwinding (again after a change of mappings, pid reuse or eviction).",
                UnwindTableUploader.Stats::registrations);
        counter(r, uploader, "loupe_unwind_mappings_allocated_total", "Mapping slots handed out to registrations since start.",
                UnwindTableUploader.Stats::mappingsAllocated);
        counter(r, uploader, "loupe_unwind_mapping_space_full_total",
                "Registrations refused for want of free mapping slots (the process keeps frame pointers and is tried again later).",
                UnwindTableUploader.Stats::mappingSpaceFull);
        counter(r, uploader, "loupe_unwind_exits_released_total",
                "Registrations released because their process exited (the kernel's exit records, or the /proc scan).",
                UnwindTableUploader.Stats::exitsReleased);
        CounterWithCallback.builder().name("loupe_unwind_table_failures_total")
                .help("Binaries without a usable unwind table, by reason.").labelNames("reason")
                .callback(cb -> {
                    Map<String, Long> byReason = uploader.stats().failuresByReason();
                    if (byReason.isEmpty()) {
                        cb.call(0, "none"); // the family is never empty, so rules can rely on it
                    }
                    new TreeMap<>(byReason).forEach((reason, n) -> cb.call(n, reason));
                })
                .register(r);
        r.register(() -> delay(uploader.stats().registrationDelay()));
    }

    static HistogramSnapshot delay(UnwindTableUploader.DelayHistogram d) {
        double[] bounds = new double[d.bounds().length + 1];
        System.arraycopy(d.bounds(), 0, bounds, 0, d.bounds().length);
        bounds[bounds.length - 1] = Double.POSITIVE_INFINITY;
        long[] counts = new long[bounds.length];
        long finite = 0;
        for (int i = 0; i < d.bounds().length; i++) {
            counts[i] = d.counts()[i];
            finite += d.counts()[i];
        }
        counts[counts.length - 1] = d.count() - finite;
        return HistogramSnapshot.builder().name(DELAY)
                .help("From a process's start (after the agent's) to its unwind tables being live in the kernel; 10 ms resolution.")
                .dataPoint(HistogramSnapshot.HistogramDataPointSnapshot.builder()
                        .labels(Labels.EMPTY)
                        .classicHistogramBuckets(ClassicHistogramBuckets.of(bounds, counts))
                        .sum(d.sumSeconds())
                        .build())
                .build();
    }

    private static void counter(PrometheusRegistry r, UnwindTableUploader u, String name, String help,
                                ToLongFunction<UnwindTableUploader.Stats> v) {
        CounterWithCallback.builder().name(name).help(help).callback(cb -> cb.call(v.applyAsLong(u.stats()))).register(r);
    }

    private static void gauge(PrometheusRegistry r, UnwindTableUploader u, String name, String help,
                              ToLongFunction<UnwindTableUploader.Stats> v) {
        GaugeWithCallback.builder().name(name).help(help).callback(cb -> cb.call(v.applyAsLong(u.stats()))).register(r);
    }
}
