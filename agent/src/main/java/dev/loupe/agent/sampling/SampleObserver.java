package dev.loupe.agent.sampling;

/**
 * Told of every sampled process on the sampling thread (so it must be quick: a map lookup, the work on a thread of
 * its own), and whether the sample showed code no runtime named or walked ({@code unknownCode}): e.g. the HotSpot
 * attach fallback, which asks such a JVM for a perf map. Closed when the agent stops.
 */
public interface SampleObserver extends AutoCloseable {
    void sampled(int pid, long processStartNs, boolean unknownCode);

    /** The process exited (and its last samples were seen): whatever is kept for it can go. */
    default void exited(int pid, long processStartNs) {}

    @Override
    default void close() {}
}
