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
    private final Path directory;

    public LocalFileSink(Path directory) throws IOException {
        this.directory = directory;
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
    }

    public Path directory() {
        return directory;
    }
}
