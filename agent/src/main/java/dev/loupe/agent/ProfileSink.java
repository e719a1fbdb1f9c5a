package dev.loupe.agent;

import dev.loupe.pprof.proto.Profile;

import java.io.IOException;

/**
 * Where finished profiles go: local files now; Parca (gRPC WriteRaw) and Kafka later. Called from one
 * sink thread, never from the sampling thread, so a slow sink does not lose samples.
 */
public interface ProfileSink extends AutoCloseable {
    /** Short name for logs and metrics, e.g. "file". */
    String name();

    /** Delivers one profile (a whole host, one interval). */
    void write(Profile profile) throws IOException;

    @Override
    default void close() {}
}
