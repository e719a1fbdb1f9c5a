package dev.loupe.agent.sink;

import java.util.List;

/**
 * What one interval produced, handed to every sink: its profiles (one per series), already encoded.
 * Immutable, shared by all sinks.
 *
 * @param sequence       interval number since the agent started (gaps mean dropped batches)
 * @param timeNanos      interval start, wall clock, ns since the epoch
 * @param durationNanos  interval length (monotonic)
 */
public record ProfileBatch(long sequence, long timeNanos, long durationNanos, List<EncodedProfile> profiles) {
    public ProfileBatch {
        profiles = List.copyOf(profiles);
    }

    /** Bytes of encoded profiles in the batch. */
    public long bytes() {
        long n = 0;
        for (EncodedProfile p : profiles) {
            n += p.gzippedPprof().length;
        }
        return n;
    }
}
