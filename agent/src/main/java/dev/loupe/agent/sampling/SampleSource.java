package dev.loupe.agent.sampling;

import dev.loupe.bpf.ProcessExits;
import dev.loupe.bpf.RawSample;
import dev.loupe.bpf.SamplerStats;

import java.time.Duration;
import java.util.function.Consumer;

/**
 * Where the agent's samples come from: {@link KernelSampleSource} in production, fakes in tests. The
 * agent owns this interface (the consumer defines what it needs); implementations translate their own
 * failures into {@link SampleSourceException}. Polled from a single thread; {@link #stats()} from any.
 */
public interface SampleSource extends AutoCloseable {
    /** Waits up to {@code timeout} and hands every available sample to {@code sink}; returns how many. */
    int poll(Duration timeout, Consumer<RawSample> sink) throws SampleSourceException;

    /**
     * As {@link #poll(Duration, Consumer)}, and tells {@code exits} of processes that exited, in order with the
     * samples (a process's exit after the samples of its life). A source that sees no exits only polls.
     */
    default int poll(Duration timeout, Consumer<RawSample> sink, ProcessExits exits) throws SampleSourceException {
        return poll(timeout, sink);
    }

    /** Counters since start (samples, drops, stack read failures). Safe from any thread. */
    SamplerStats stats();

    @Override
    void close();

    /** A poll that failed; the source may work again on the next poll. */
    final class SampleSourceException extends Exception {
        public SampleSourceException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
