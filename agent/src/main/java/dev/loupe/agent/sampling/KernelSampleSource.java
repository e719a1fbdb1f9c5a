package dev.loupe.agent.sampling;

import dev.loupe.bpf.BpfException;
import dev.loupe.bpf.PerfEventSampler;
import dev.loupe.bpf.ProcessExits;
import dev.loupe.bpf.RawSample;
import dev.loupe.bpf.SamplerStats;

import java.time.Duration;
import java.util.function.Consumer;

/** The BPF perf_event sampler as the agent's {@link SampleSource}: BPF failures stay on this side. */
public final class KernelSampleSource implements SampleSource {
    private final PerfEventSampler sampler;

    public KernelSampleSource(PerfEventSampler sampler) {
        this.sampler = sampler;
    }

    @Override
    public int poll(Duration timeout, Consumer<RawSample> sink) throws SampleSourceException {
        try {
            return sampler.poll(timeout, sink);
        } catch (BpfException e) {
            throw new SampleSourceException(e.getMessage(), e);
        }
    }

    @Override
    public int poll(Duration timeout, Consumer<RawSample> sink, ProcessExits exits) throws SampleSourceException {
        try {
            return sampler.poll(timeout, sink, exits);
        } catch (BpfException e) {
            throw new SampleSourceException(e.getMessage(), e);
        }
    }

    @Override
    public SamplerStats stats() {
        return sampler.stats();
    }

    @Override
    public void close() {
        sampler.close();
    }
}
