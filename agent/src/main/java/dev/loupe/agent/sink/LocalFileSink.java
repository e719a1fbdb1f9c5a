package dev.loupe.agent.sink;

import dev.loupe.pprof.PprofFiles;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * Writes each profile as a gzipped pprof file named by its type and start time in UTC, so names sort by
 * time: {@code cpu-20261122T101500.000Z.pb.gz}. Files appear atomically (temp file + rename).
 */
public final class LocalFileSink implements ProfileSink {
    private static final DateTimeFormatter NAME = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss.SSS'Z'")
            .withZone(ZoneOffset.UTC);
    private static final System.Logger LOG = System.getLogger(LocalFileSink.class.getName());
    private final Path directory;
    private final LocalFileRetention retention;

    /** Files are kept until something else deletes them. */
    public LocalFileSink(Path directory) throws IOException {
        this(directory, null);
    }

    /** After each write, the oldest files go until {@code retention}'s age and size limits hold. */
    public LocalFileSink(Path directory, LocalFileRetention retention) throws IOException {
        this.directory = directory;
        this.retention = retention;
        Files.createDirectories(directory);
    }

    @Override
    public String name() {
        return "file";
    }

    static String fileName(String profileType, long timeNanos) {
        return profileType + "-" + NAME.format(Instant.ofEpochSecond(0, timeNanos)) + ".pb.gz";
    }

    @Override
    public void write(ProfileBatch batch) throws IOException {
        for (EncodedProfile p : batch.profiles()) {
            PprofFiles.writeAtomically(p.gzippedPprof(), directory.resolve(fileName(p.profileType(), p.timeNanos())));
        }
        if (retention != null) {
            LocalFileRetention.Result r = retention.enforce();
            if (!r.errors().isEmpty()) {
                LOG.log(System.Logger.Level.WARNING, "output retention in " + directory + ": " + r.errors().getFirst()
                        + (r.errors().size() > 1 ? " (and " + (r.errors().size() - 1) + " more)" : ""));
            }
        }
    }

    public Path directory() {
        return directory;
    }
}
