package dev.loupe.bpf;

import java.time.Duration;
import java.util.function.Consumer;

/**
 * Where samples come from. {@link PerfEventSampler} is the kernel one; tests use fakes.
 * Polled from a single thread.
 */
public interface SampleSource extends AutoCloseable {
    /** Waits up to {@code timeout} and hands every available sample to {@code sink}; returns how many. */
    int poll(Duration timeout, Consumer<RawSample> sink) throws BpfException;

    /** Counters since start (samples, drops, stack read failures). Safe from any thread. */
    SamplerStats stats();

    @Override
    void close();
}
