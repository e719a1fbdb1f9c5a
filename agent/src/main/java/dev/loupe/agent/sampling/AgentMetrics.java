package dev.loupe.agent.sampling;

import dev.loupe.agent.sink.SinkMetrics;
import dev.loupe.bpf.SamplerStats;
import dev.loupe.unwinder.symbolize.Symbolizer;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.util.function.ToLongFunction;

/** The sampling loop's metrics: the BPF sampler's counters, the loop's, the symbolizer's and the sinks'. */
final class AgentMetrics {
    private AgentMetrics() {}

    static void register(Agent agent, PrometheusRegistry r) {
        Agent.Status at = agent.status();
        sampler(r, agent, "loupe_samples_total", "CPU samples taken by the BPF program (not idle, passing the pid filter).",
                SamplerStats::samples);
        sampler(r, agent, "loupe_samples_idle_total", "Samples on idle CPUs, ignored.", SamplerStats::idle);
        sampler(r, agent, "loupe_samples_filtered_total", "Samples of processes outside the pid filter, ignored.",
                SamplerStats::filtered);
        CounterWithCallback.builder().name("loupe_samples_dropped_total").help("Samples lost, by reason.").labelNames("reason")
                .callback(cb -> {
                    SamplerStats s = agent.status().sampler();
                    cb.call(s.ringBufferDrops(), "ring_buffer_full");
                    cb.call(s.decodeErrors(), "undecodable");
                    cb.call(s.consumerErrors(), "consumer_failed");
                })
                .register(r);
        sampler(r, agent, "loupe_samples_outside_pid_namespace_total",
                "Samples of processes outside the agent's PID namespace (no pid, no user stack, label pid_namespace=outside).",
                SamplerStats::pidOutside);
        sampler(r, agent, "loupe_user_stack_read_errors_total", "User stacks cut short by an unreadable frame.",
                SamplerStats::userReadErrors);
        sampler(r, agent, "loupe_user_stack_truncated_total", "User stacks deeper than the frame limit.",
                SamplerStats::userTruncated);
        sampler(r, agent, "loupe_kernel_stack_errors_total", "Kernel stacks that could not be taken.", SamplerStats::kernelErrors);
        counter(r, agent, "loupe_samples_processed_total", "Samples symbolized into profiles.", Agent.Status::samplesProcessed);
        counter(r, agent, "loupe_profiles_written_total", "Profiles delivered to sinks.", Agent.Status::profilesWritten);
        counter(r, agent, "loupe_sink_errors_total", "Profiles a sink failed to take.", Agent.Status::sinkErrors);
        if (!at.sinks().isEmpty()) {
            SinkMetrics.register(r, () -> agent.status().sinks(), at.sinks().stream().anyMatch(s -> s.remote().isPresent()));
        }
        counter(r, agent, "loupe_poll_errors_total", "Failed polls of the sample ring buffer.", Agent.Status::pollErrors);
        if (at.symbolizer() != null) {
            symbolizerGauge(r, agent, "loupe_symbolizer_processes", "Processes whose mappings are cached.", Symbolizer.Stats::processes);
            symbolizerGauge(r, agent, "loupe_symbolizer_binaries", "Binaries whose symbol tables are cached.", Symbolizer.Stats::binaries);
            symbolizer(r, agent, "loupe_symbolizer_bad_binaries_total",
                    "Mapped files that are not readable ELF (frames kept as addresses).", Symbolizer.Stats::binaryFailures);
            symbolizer(r, agent, "loupe_symbolizer_unresolved_frames_total",
                    "Frames left as addresses (no mapping or no symbol).", Symbolizer.Stats::unresolvedFrames);
            symbolizer(r, agent, "loupe_symbolizer_maps_reads_total", "Reads of /proc/PID/maps.", Symbolizer.Stats::mapsReads);
            symbolizer(r, agent, "loupe_symbolizer_maps_read_failures_total",
                    "Reads of /proc/PID/maps that failed (process gone, permissions).", Symbolizer.Stats::mapsReadFailures);
            symbolizer(r, agent, "loupe_symbolizer_frames_from_sampled_mappings_total",
                    "Frames named from the mappings the kernel's walk found (no /proc read; the process may have exited).",
                    Symbolizer.Stats::framesFromSampledMappings);
            symbolizer(r, agent, "loupe_symbolizer_mappings_from_own_root_total",
                    "Mappings of processes gone before their files could be opened through /proc, named by the same file "
                            + "(device and inode) in the agent's own root.", Symbolizer.Stats::mappingsFromOwnRoot);
        }
        sampler(r, agent, "loupe_unwind_fp_fallback_samples_total",
                "Samples with frames in files whose unwind tables were not in the kernel yet: walked with frame pointers there "
                        + "(label unwind=frame_pointers).",
                SamplerStats::fpFallback);
        sampler(r, agent, "loupe_unwind_vma_lookups_total",
                "Mappings the kernel's walk found itself in a process's memory map (bpf_find_vma), then their file's table.",
                SamplerStats::vmaLookups);
        sampler(r, agent, "loupe_unwind_vma_lookup_failures_total",
                "Return addresses the kernel's walk found in no executable mapping, or whose memory map was locked.",
                SamplerStats::vmaLookupFailures);
        sampler(r, agent, "loupe_unwind_file_table_misses_total",
                "Mappings the kernel's walk found whose file has no table in the kernel yet (frame pointers there).",
                SamplerStats::fileTableMisses);
        sampler(r, agent, "loupe_unwind_stopped_stacks_total", "User stacks that end early in an [unwind: ...] frame naming why.",
                SamplerStats::unwindStopped);
        sampler(r, agent, "loupe_unwind_table_frames_total", "User frames unwound with eh_frame tables in the kernel.",
                SamplerStats::tableFrames);
        sampler(r, agent, "loupe_unwind_fp_frames_total", "User frames unwound with frame pointers.", SamplerStats::fpFrames);
        sampler(r, agent, "loupe_unwind_fp_no_fde_frames_total",
                "User frames in a binary's code without unwind info (no FDE: V8 builtins, hand-written assembly) unwound "
                        + "with frame pointers after checking the frame.", SamplerStats::fpNoFdeFrames);
        sampler(r, agent, "loupe_process_exits_total",
                "Process exits the kernel reported (the last thread left), after the process's samples.", SamplerStats::processExits);
        sampler(r, agent, "loupe_process_exits_dropped_total",
                "Process exits the kernel could not report (ring buffer full): found by the periodic /proc scan instead.",
                SamplerStats::exitDrops);
        GaugeWithCallback.builder().name("loupe_process_states")
                .help("Processes each part of the agent holds state for now (released when the process exits).")
                .labelNames("holder")
                .callback(cb -> agent.processStates().forEach((holder, n) -> cb.call(n, holder)))
                .register(r);
        GaugeWithCallback.builder().name("loupe_up").help("Whether the sampling loop is polling.")
                .callback(cb -> cb.call(agent.status().healthy() ? 1 : 0))
                .register(r);
    }

    private static void sampler(PrometheusRegistry r, Agent agent, String name, String help, ToLongFunction<SamplerStats> v) {
        CounterWithCallback.builder().name(name).help(help)
                .callback(cb -> cb.call(v.applyAsLong(agent.status().sampler())))
                .register(r);
    }

    private static void counter(PrometheusRegistry r, Agent agent, String name, String help, ToLongFunction<Agent.Status> v) {
        CounterWithCallback.builder().name(name).help(help)
                .callback(cb -> cb.call(v.applyAsLong(agent.status())))
                .register(r);
    }

    private static void symbolizer(PrometheusRegistry r, Agent agent, String name, String help,
                                   ToLongFunction<Symbolizer.Stats> v) {
        CounterWithCallback.builder().name(name).help(help)
                .callback(cb -> cb.call(v.applyAsLong(agent.status().symbolizer())))
                .register(r);
    }

    private static void symbolizerGauge(PrometheusRegistry r, Agent agent, String name, String help,
                                        ToLongFunction<Symbolizer.Stats> v) {
        GaugeWithCallback.builder().name(name).help(help)
                .callback(cb -> cb.call(v.applyAsLong(agent.status().symbolizer())))
                .register(r);
    }
}
