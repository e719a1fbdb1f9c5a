package dev.loupe.agent;

import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.proto.Profile;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * Writes each profile as a gzipped pprof file named by its start time in UTC, so names sort by time:
 * {@code cpu-20261122T101500.000Z.pb.gz}. Files appear atomically (temp file + rename).
 */
public final class LocalFileSink implements ProfileSink {
    private static final DateTimeFormatter NAME = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss.SSS'Z'")
            .withZone(ZoneOffset.UTC);
    private final Path directory;

    public LocalFileSink(Path directory) throws IOException {
        this.directory = directory;
        Files.createDirectories(directory);
    }

    @Override
    public String name() {
        return "file";
    }

    static String fileName(long timeNanos) {
        Instant start = Instant.ofEpochSecond(0, timeNanos);
        return "cpu-" + NAME.format(start) + ".pb.gz";
    }

    @Override
    public void write(Profile profile) throws IOException {
        Path file = directory.resolve(fileName(profile.getTimeNanos()));
        PprofFiles.writeAtomically(profile, file);
    }

    public Path directory() {
        return directory;
    }
}
