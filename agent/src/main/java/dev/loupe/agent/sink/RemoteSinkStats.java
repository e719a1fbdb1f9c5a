package dev.loupe.agent.sink;

/**
 * A remote sink's counters since start, and its spool now.
 *
 * @param delivered        batches (requests / record groups) the remote end confirmed
 * @param deliveredBytes   their bytes
 * @param failedAttempts   sends that failed (each retry of a batch counts)
 * @param retries          sends that were retries of an earlier failure
 * @param rejected         batches the remote end refused for good (quarantined)
 * @param spooledBatches   batches waiting in the spool
 * @param spooledBytes     their bytes on disk
 * @param oldestAgeNanos   age of the oldest waiting batch (0 when empty)
 * @param droppedBatches   batches the spool cap deleted unsent
 * @param droppedBytes     their bytes
 * @param seriesDroppedByRelabel series the user's relabel rules dropped (never encoded)
 */
public record RemoteSinkStats(long delivered, long deliveredBytes, long failedAttempts, long retries, long rejected,
                              long spooledBatches, long spooledBytes, long oldestAgeNanos, long droppedBatches,
                              long droppedBytes, long seriesDroppedByRelabel) {}
