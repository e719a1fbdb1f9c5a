package dev.loupe.agent.sink;

/**
 * One sink's counters since start.
 *
 * @param written      intervals the sink took
 * @param failed       intervals the sink failed to take (its write threw)
 * @param dropped      intervals dropped before the sink saw them (queue full, or left at stop)
 * @param queued       intervals waiting now
 * @param bytesWritten encoded bytes the sink took
 * @param remote       delivery and spool counters, for sinks that ship off the host
 */
public record SinkStats(String sink, long written, long failed, long dropped, long queued, long bytesWritten,
                        java.util.Optional<RemoteSinkStats> remote) {}
