package dev.loupe.agent.http;

import dev.loupe.agent.sampling.Agent;
import dev.loupe.agent.sink.RemoteSinkStats;
import dev.loupe.agent.sink.SinkStats;
import dev.loupe.agent.unwind.UnwindTableUploader;
import dev.loupe.bpf.SamplerStats;
import dev.loupe.unwinder.symbolize.Symbolizer;

/** Prometheus text exposition (format 0.0.4) of the agent's counters. */
public final class MetricsText {
    private MetricsText() {}

    public static String render(Agent.Status st) {
        SamplerStats s = st.sampler();
        StringBuilder b = new StringBuilder(2048);
        counter(b, "loupe_samples_total", "CPU samples taken by the BPF program (not idle, passing the pid filter).", s.samples());
        counter(b, "loupe_samples_idle_total", "Samples on idle CPUs, ignored.", s.idle());
        counter(b, "loupe_samples_filtered_total", "Samples of processes outside the pid filter, ignored.", s.filtered());
        b.append("# HELP loupe_samples_dropped_total Samples lost, by reason.\n");
        b.append("# TYPE loupe_samples_dropped_total counter\n");
        b.append("loupe_samples_dropped_total{reason=\"ring_buffer_full\"} ").append(s.ringBufferDrops()).append('\n');
        b.append("loupe_samples_dropped_total{reason=\"undecodable\"} ").append(s.decodeErrors()).append('\n');
        b.append("loupe_samples_dropped_total{reason=\"consumer_failed\"} ").append(s.consumerErrors()).append('\n');
        counter(b, "loupe_user_stack_read_errors_total", "User stacks cut short by an unreadable frame.", s.userReadErrors());
        counter(b, "loupe_user_stack_truncated_total", "User stacks deeper than the frame limit.", s.userTruncated());
        counter(b, "loupe_kernel_stack_errors_total", "Kernel stacks that could not be taken.", s.kernelErrors());
        counter(b, "loupe_samples_processed_total", "Samples symbolized into profiles.", st.samplesProcessed());
        counter(b, "loupe_profiles_written_total", "Profiles delivered to sinks.", st.profilesWritten());
        counter(b, "loupe_sink_errors_total", "Profiles a sink failed to take.", st.sinkErrors());
        sinkFamily(b, st, "loupe_sink_intervals_written_total", "counter", "Intervals a sink delivered.", SinkStats::written);
        sinkFamily(b, st, "loupe_sink_intervals_failed_total", "counter", "Intervals a sink failed to deliver.", SinkStats::failed);
        sinkFamily(b, st, "loupe_sink_intervals_dropped_total", "counter",
                "Intervals dropped before a sink took them (its queue was full, or left at stop).", SinkStats::dropped);
        sinkFamily(b, st, "loupe_sink_queue_intervals", "gauge", "Intervals waiting in a sink's queue.", SinkStats::queued);
        sinkFamily(b, st, "loupe_sink_bytes_written_total", "counter", "Encoded profile bytes a sink delivered.", SinkStats::bytesWritten);
        remoteFamily(b, st, "loupe_remote_batches_sent_total", "counter", "Batches the remote end confirmed.", RemoteSinkStats::delivered);
        remoteFamily(b, st, "loupe_remote_bytes_sent_total", "counter", "Bytes of confirmed batches.", RemoteSinkStats::deliveredBytes);
        remoteFamily(b, st, "loupe_remote_send_failures_total", "counter", "Sends that failed (every attempt counts).",
                RemoteSinkStats::failedAttempts);
        remoteFamily(b, st, "loupe_remote_retries_total", "counter", "Sends that retried an earlier failure.", RemoteSinkStats::retries);
        remoteFamily(b, st, "loupe_remote_batches_rejected_total", "counter",
                "Batches the remote end refused for good, moved to the spool's quarantine folder.", RemoteSinkStats::rejected);
        remoteFamily(b, st, "loupe_remote_batches_dropped_total", "counter",
                "Batches deleted unsent because the spool reached its size cap.", RemoteSinkStats::droppedBatches);
        remoteFamily(b, st, "loupe_remote_bytes_dropped_total", "counter", "Bytes of batches the spool cap deleted.",
                RemoteSinkStats::droppedBytes);
        remoteFamily(b, st, "loupe_spool_batches", "gauge", "Batches waiting in a remote sink's spool.", RemoteSinkStats::spooledBatches);
        remoteFamily(b, st, "loupe_spool_bytes", "gauge", "Bytes waiting in a remote sink's spool.", RemoteSinkStats::spooledBytes);
        remoteSeconds(b, st, "loupe_spool_oldest_age_seconds", "Age of the oldest batch waiting in a remote sink's spool.",
                RemoteSinkStats::oldestAgeNanos);
        counter(b, "loupe_poll_errors_total", "Failed polls of the sample ring buffer.", st.pollErrors());
        Symbolizer.Stats sym = st.symbolizer();
        if (sym != null) {
            gauge(b, "loupe_symbolizer_processes", "Processes whose mappings are cached.", sym.processes());
            gauge(b, "loupe_symbolizer_binaries", "Binaries whose symbol tables are cached.", sym.binaries());
            counter(b, "loupe_symbolizer_bad_binaries_total", "Mapped files that are not readable ELF (frames kept as addresses).", sym.binaryFailures());
            counter(b, "loupe_symbolizer_unresolved_frames_total", "Frames left as addresses (no mapping or no symbol).", sym.unresolvedFrames());
            counter(b, "loupe_symbolizer_maps_reads_total", "Reads of /proc/PID/maps.", sym.mapsReads());
            counter(b, "loupe_symbolizer_maps_read_failures_total", "Reads of /proc/PID/maps that failed (process gone, permissions).", sym.mapsReadFailures());
        }
        counter(b, "loupe_unwind_fp_fallback_samples_total",
                "Samples of processes whose unwind tables were not live yet (frame pointers only, label unwind=frame_pointers).", s.fpFallback());
        counter(b, "loupe_unwind_stopped_stacks_total", "User stacks that end early in an [unwind: ...] frame naming why.", s.unwindStopped());
        counter(b, "loupe_unwind_table_frames_total", "User frames unwound with eh_frame tables in the kernel.", s.tableFrames());
        counter(b, "loupe_unwind_fp_frames_total", "User frames unwound with frame pointers.", s.fpFrames());
        UnwindTableUploader.Stats u = st.unwind();
        if (u != null) {
            counter(b, "loupe_unwind_tables_built_total", "Unwind tables compiled from .eh_frame/.debug_frame.", u.tablesBuilt());
            gauge(b, "loupe_unwind_tables_loaded", "Unwind tables in the kernel now.", u.tablesLoaded());
            gauge(b, "loupe_unwind_table_rows", "Unwind table rows in the kernel now.", u.rowsLoaded());
            gauge(b, "loupe_unwind_table_bytes", "Kernel memory the loaded unwind tables take.", u.bytesLoaded());
            counter(b, "loupe_unwind_table_evictions_total", "Unwind tables evicted to stay within the budget.", u.evictions());
            gauge(b, "loupe_unwind_processes", "Processes registered for table unwinding.", u.processes());
            b.append("# HELP loupe_unwind_table_failures_total Binaries without a usable unwind table, by reason.\n");
            b.append("# TYPE loupe_unwind_table_failures_total counter\n");
            if (u.failuresByReason().isEmpty()) {
                b.append("loupe_unwind_table_failures_total{reason=\"none\"} 0\n");
            }
            new java.util.TreeMap<>(u.failuresByReason()).forEach((k, v) ->
                    b.append("loupe_unwind_table_failures_total{reason=\"").append(k.replace("\"", "'")).append("\"} ").append(v).append('\n'));
            UnwindTableUploader.DelayHistogram d = u.registrationDelay();
            String h = "loupe_unwind_registration_delay_seconds";
            b.append("# HELP ").append(h).append(" From a process's start (after the agent's) to its unwind tables being live in the kernel; 10 ms resolution.\n");
            b.append("# TYPE ").append(h).append(" histogram\n");
            long cumulative = 0;
            for (int i = 0; i < d.bounds().length; i++) {
                cumulative += d.counts()[i];
                b.append(h).append("_bucket{le=\"").append(Double.toString(d.bounds()[i])).append("\"} ").append(cumulative).append('\n');
            }
            b.append(h).append("_bucket{le=\"+Inf\"} ").append(d.count()).append('\n');
            b.append(h).append("_sum ").append(d.sumSeconds()).append('\n');
            b.append(h).append("_count ").append(d.count()).append('\n');
        }
        b.append("# HELP loupe_up Whether the sampling loop is polling.\n# TYPE loupe_up gauge\n");
        b.append("loupe_up ").append(st.healthy() ? 1 : 0).append('\n');
        return b.toString();
    }

    private static void remoteFamily(StringBuilder b, Agent.Status st, String name, String type, String help,
                                     java.util.function.ToLongFunction<RemoteSinkStats> value) {
        if (st.sinks().stream().noneMatch(s -> s.remote().isPresent())) {
            return;
        }
        b.append("# HELP ").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE ").append(name).append(' ').append(type).append('\n');
        for (SinkStats s : st.sinks()) {
            s.remote().ifPresent(r ->
                    b.append(name).append("{sink=\"").append(s.sink()).append("\"} ").append(value.applyAsLong(r)).append('\n'));
        }
    }

    private static void remoteSeconds(StringBuilder b, Agent.Status st, String name, String help,
                                      java.util.function.ToLongFunction<RemoteSinkStats> nanos) {
        if (st.sinks().stream().noneMatch(s -> s.remote().isPresent())) {
            return;
        }
        b.append("# HELP ").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE ").append(name).append(" gauge\n");
        for (SinkStats s : st.sinks()) {
            s.remote().ifPresent(r -> b.append(name).append("{sink=\"").append(s.sink()).append("\"} ")
                    .append(nanos.applyAsLong(r) / 1e9).append('\n'));
        }
    }

    private static void sinkFamily(StringBuilder b, Agent.Status st, String name, String type, String help,
                                   java.util.function.ToLongFunction<SinkStats> value) {
        if (st.sinks().isEmpty()) {
            return;
        }
        b.append("# HELP ").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE ").append(name).append(' ').append(type).append('\n');
        for (SinkStats s : st.sinks()) {
            b.append(name).append("{sink=\"").append(s.sink()).append("\"} ").append(value.applyAsLong(s)).append('\n');
        }
    }

    private static void gauge(StringBuilder b, String name, String help, long value) {
        b.append("# HELP ").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE ").append(name).append(" gauge\n");
        b.append(name).append(' ').append(value).append('\n');
    }

    private static void counter(StringBuilder b, String name, String help, long value) {
        b.append("# HELP ").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE ").append(name).append(" counter\n");
        b.append(name).append(' ').append(value).append('\n');
    }
}
