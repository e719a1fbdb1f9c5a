package dev.loupe.agent.ship;

/**
 * A spool's state for /metrics.
 *
 * @param batches            batches waiting for the sink
 * @param bytes              their size on disk
 * @param oldestAgeNanos     how long the oldest waiting batch has been spooled (0 when empty)
 * @param droppedBatches     batches deleted unsent because the spool was full (since start)
 * @param droppedBytes       their size
 * @param quarantinedBatches batches the sink rejected for good, moved to quarantine (since start)
 * @param quarantineBytes    size of the quarantine folder now
 */
public record SpoolStats(long batches, long bytes, long oldestAgeNanos, long droppedBatches, long droppedBytes,
                         long quarantinedBatches, long quarantineBytes) {}
