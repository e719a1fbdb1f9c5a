package dev.loupe.agent.sink;

import java.io.IOException;

/**
 * Where finished profiles go: local files, Parca, Kafka. Each sink runs on its own thread behind a bounded
 * queue ({@link SinkRunner}), so a slow or stalled sink never holds up sampling or another sink.
 */
public interface ProfileSink extends AutoCloseable {
    /** Short name for logs and metrics, e.g. "file". */
    String name();

    /** Delivers one interval's profiles; throws if it could not (counted as a failure of this sink). */
    void write(ProfileBatch batch) throws IOException;

    @Override
    default void close() {}

    /**
     * Closes at the agent's stop: a sink that buffers (the remote sinks' spools) makes its last delivery
     * attempt until {@code deadlineNanos} (monotonic), keeping the rest for the next start.
     */
    default void close(long deadlineNanos) {
        close();
    }

    /** Delivery and spool counters of a sink that ships off the host; empty for local sinks. */
    default java.util.Optional<RemoteSinkStats> remoteStats() {
        return java.util.Optional.empty();
    }
}
