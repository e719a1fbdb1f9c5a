package dev.loupe.agent.sink;

import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.util.List;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;

/** The sinks' metrics, one series per sink ({@code sink} label), read from their stats at each scrape. */
public final class SinkMetrics {
    private SinkMetrics() {}

    /**
     * Registers the per-sink families, and the remote ones when {@code remote} (some sink ships off the host).
     *
     * @param stats every sink's stats now
     */
    public static void register(PrometheusRegistry registry, Supplier<List<SinkStats>> stats, boolean remote) {
        sink(registry, stats, "loupe_sink_intervals_written_total", "Intervals a sink delivered.", SinkStats::written);
        sink(registry, stats, "loupe_sink_intervals_failed_total", "Intervals a sink failed to deliver.", SinkStats::failed);
        sink(registry, stats, "loupe_sink_intervals_dropped_total",
                "Intervals dropped before a sink took them (its queue was full, or left at stop).", SinkStats::dropped);
        GaugeWithCallback.builder().name("loupe_sink_queue_intervals").help("Intervals waiting in a sink's queue.")
                .labelNames("sink")
                .callback(cb -> stats.get().forEach(s -> cb.call(s.queued(), s.sink())))
                .register(registry);
        sink(registry, stats, "loupe_sink_bytes_written_total", "Encoded profile bytes a sink delivered.", SinkStats::bytesWritten);
        if (!remote) {
            return;
        }
        remoteCounter(registry, stats, "loupe_remote_batches_sent_total", "Batches the remote end confirmed.",
                RemoteSinkStats::delivered);
        remoteCounter(registry, stats, "loupe_remote_bytes_sent_total", "Bytes of confirmed batches.",
                RemoteSinkStats::deliveredBytes);
        remoteCounter(registry, stats, "loupe_remote_send_failures_total", "Sends that failed (every attempt counts).",
                RemoteSinkStats::failedAttempts);
        remoteCounter(registry, stats, "loupe_remote_retries_total", "Sends that retried an earlier failure.",
                RemoteSinkStats::retries);
        remoteCounter(registry, stats, "loupe_remote_batches_rejected_total",
                "Batches the remote end refused for good, moved to the spool's quarantine folder.", RemoteSinkStats::rejected);
        remoteCounter(registry, stats, "loupe_remote_batches_dropped_total",
                "Batches deleted unsent because the spool reached its size cap.", RemoteSinkStats::droppedBatches);
        remoteCounter(registry, stats, "loupe_remote_bytes_dropped_total", "Bytes of batches the spool cap deleted.",
                RemoteSinkStats::droppedBytes);
        remoteCounter(registry, stats, "loupe_series_dropped_by_relabel_total",
                "Series the relabel rules dropped: never encoded nor sent.", RemoteSinkStats::seriesDroppedByRelabel);
        remoteGauge(registry, stats, "loupe_spool_batches", "Batches waiting in a remote sink's spool.",
                RemoteSinkStats::spooledBatches);
        remoteGauge(registry, stats, "loupe_spool_bytes", "Bytes waiting in a remote sink's spool.",
                RemoteSinkStats::spooledBytes);
        remoteGauge(registry, stats, "loupe_spool_oldest_age_seconds",
                "Age of the oldest batch waiting in a remote sink's spool.", r -> r.oldestAgeNanos() / 1e9);
    }

    private static void sink(PrometheusRegistry registry, Supplier<List<SinkStats>> stats, String name, String help,
                             ToLongFunction<SinkStats> value) {
        CounterWithCallback.builder().name(name).help(help).labelNames("sink")
                .callback(cb -> stats.get().forEach(s -> cb.call(value.applyAsLong(s), s.sink())))
                .register(registry);
    }

    private static void remoteCounter(PrometheusRegistry registry, Supplier<List<SinkStats>> stats, String name,
                                      String help, ToLongFunction<RemoteSinkStats> value) {
        CounterWithCallback.builder().name(name).help(help).labelNames("sink")
                .callback(cb -> stats.get().forEach(s -> s.remote().ifPresent(r -> cb.call(value.applyAsLong(r), s.sink()))))
                .register(registry);
    }

    private static void remoteGauge(PrometheusRegistry registry, Supplier<List<SinkStats>> stats, String name,
                                    String help, ToDoubleFunction<RemoteSinkStats> value) {
        GaugeWithCallback.builder().name(name).help(help).labelNames("sink")
                .callback(cb -> stats.get().forEach(s -> s.remote().ifPresent(r -> cb.call(value.applyAsDouble(r), s.sink()))))
                .register(registry);
    }
}
