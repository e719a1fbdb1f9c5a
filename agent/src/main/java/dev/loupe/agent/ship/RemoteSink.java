package dev.loupe.agent.ship;

import dev.loupe.agent.sink.EncodedProfile;
import dev.loupe.agent.sink.ProfileBatch;
import dev.loupe.agent.sink.ProfileSink;
import dev.loupe.agent.sink.RemoteSinkStats;
import dev.loupe.pprof.parca.WriteRawRequest;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A sink that ships off the host (Parca, Kafka): each interval becomes WriteRaw requests that go to the
 * spool before {@link #write} returns; a {@link DeliveryLoop} thread sends them and deletes them only when
 * the remote end confirmed. At the agent's stop, one last attempt runs until the stop deadline and the rest
 * stays spooled for the next start.
 */
public final class RemoteSink implements ProfileSink {
    /** Spool attributes every batch carries (Kafka puts them in record headers). */
    public static final String PROFILE_TYPE = "profile_type";
    public static final String START_NANOS = "start_nanos";
    public static final String END_NANOS = "end_nanos";
    public static final String NODE = "node";

    /** Profiles whose samples are per process (CPU and off-CPU): a series per pid, as Parca's UI groups them. */
    private static final java.util.Set<String> PER_PROCESS = java.util.Set.of("cpu", "offcpu");
    private static final System.Logger LOG = System.getLogger(RemoteSink.class.getName());

    private final String name;
    private final Spool spool;
    private final DeliveryLoop loop;
    private final WriteRawEncoder encoder;
    private final AutoCloseable sender;
    private final Thread thread;

    /**
     * @param sender closed after the last delivery attempt (e.g. the ParcaClient or Kafka producer)
     */
    public RemoteSink(String name, Spool spool, DeliveryLoop loop, WriteRawEncoder encoder, AutoCloseable sender) {
        this.name = name;
        this.spool = spool;
        this.loop = loop;
        this.encoder = encoder;
        this.sender = sender;
        this.thread = new Thread(loop, "loupe-deliver-" + name);
        thread.setDaemon(true);
        thread.start();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void write(ProfileBatch batch) throws IOException {
        for (EncodedProfile p : batch.profiles()) {
            if (p.samples() == 0) {
                continue; // an idle interval: nothing for the store
            }
            // CPU and off-CPU: a series per process (what Parca's UI groups by); latency: per function already, one series
            List<WriteRawEncoder.Series> series = encoder.series(p.profile(), p.labels(), PER_PROCESS.contains(p.profileType()));
            List<WriteRawRequest> requests = encoder.requests(series);
            Map<String, String> attributes = Map.of(
                    PROFILE_TYPE, p.profileType(),
                    START_NANOS, Long.toString(p.timeNanos()),
                    END_NANOS, Long.toString(p.timeNanos() + p.durationNanos()),
                    NODE, p.labels().getOrDefault("node", ""));
            for (WriteRawRequest r : requests) {
                spool.append(attributes, r.toByteArray());
            }
        }
    }

    @Override
    public void close(long deadlineNanos) {
        loop.stop();
        try {
            thread.join(Math.max(1, (deadlineNanos - System.nanoTime()) / 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!thread.isAlive()) {
            loop.drainOnce(deadlineNanos);
        }
        closeQuietly();
    }

    @Override
    public void close() {
        close(System.nanoTime());
    }

    private void closeQuietly() {
        try {
            sender.close();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "sink " + name + ": closing: " + e);
        }
        try {
            spool.close();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "sink " + name + ": closing spool: " + e);
        }
    }

    @Override
    public Optional<RemoteSinkStats> remoteStats() {
        DeliveryLoop.Stats d = loop.stats();
        SpoolStats s = spool.stats();
        return Optional.of(new RemoteSinkStats(d.delivered(), d.deliveredBytes(), d.failedAttempts(), d.retries(), d.rejected(),
                s.batches(), s.bytes(), s.oldestAgeNanos(), s.droppedBatches(), s.droppedBytes(),
                encoder.seriesDroppedByRelabel()));
    }
}
