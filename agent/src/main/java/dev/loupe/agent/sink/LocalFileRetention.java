package dev.loupe.agent.sink;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.format.ResolverStyle;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Keeps a {@link LocalFileSink} directory within an age and a total size: deletes the oldest profiles until
 * none is older than {@code maxAge} and the profiles together take at most {@code maxTotalBytes}. Only
 * regular files named as the sink names them ({@code TYPE-yyyyMMddTHHmmss.SSSZ.pb.gz}) are counted or
 * deleted; anything else in the directory (the sink's temp files, a user's notes, subdirectories,
 * symbolic links) is left alone. Age is the time in the name, the profile's start: copying or touching a
 * file does not make it younger. Failures are returned, not thrown: retention must not stop the agent. A
 * profile that cannot be deleted still takes its bytes, so the next oldest goes instead.
 */
public final class LocalFileRetention {
    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9_-]*-(\\d{8}T\\d{6}\\.\\d{3}Z)\\.pb\\.gz");
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("uuuuMMdd'T'HHmmss.SSS'Z'")
            .withZone(ZoneOffset.UTC).withResolverStyle(ResolverStyle.STRICT);

    /** What one pass did: files and bytes deleted, profiles and bytes kept, and what failed (one line each). */
    public record Result(int deletedFiles, long deletedBytes, int keptFiles, long keptBytes, List<String> errors) {
        public Result {
            errors = List.copyOf(errors);
        }
    }

    private record Profile(Path path, Instant time, long size) {}

    private final Path directory;
    private final Duration maxAge;
    private final long maxTotalBytes;
    private final InstantSource clock;

    /**
     * @param maxAge        profiles older than this go (a very long duration, e.g. 100 years, for none)
     * @param maxTotalBytes the profiles' total size afterwards ({@link Long#MAX_VALUE} for no limit)
     */
    public LocalFileRetention(Path directory, Duration maxAge, long maxTotalBytes, InstantSource clock) {
        if (maxAge.isNegative() || maxAge.isZero() || maxTotalBytes < 0) {
            throw new IllegalArgumentException("max age must be positive and max bytes not negative: " + maxAge
                    + ", " + maxTotalBytes);
        }
        this.directory = Objects.requireNonNull(directory, "directory");
        this.maxAge = maxAge;
        this.maxTotalBytes = maxTotalBytes;
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /** The time in a profile file's name, or null when the name is not one the sink writes. */
    static Instant profileTime(String fileName) {
        Matcher m = NAME.matcher(fileName);
        if (!m.matches()) {
            return null;
        }
        try {
            return Instant.from(TIME.parse(m.group(1)));
        } catch (DateTimeParseException e) {
            return null; // digits in the shape of a time that is none (month 13): not ours
        }
    }

    /** One pass over the directory, oldest first. */
    public Result enforce() {
        List<String> errors = new ArrayList<>();
        List<Profile> profiles = list(errors);
        if (profiles == null) {
            return new Result(0, 0, 0, 0, errors);
        }
        profiles.sort(Comparator.comparing(Profile::time).thenComparing(p -> p.path().getFileName().toString()));
        Instant cutoff = cutoff();
        long total = profiles.stream().mapToLong(Profile::size).sum();
        int deleted = 0;
        long deletedBytes = 0;
        int kept = 0;
        for (Profile p : profiles) {
            if (!p.time().isBefore(cutoff) && total <= maxTotalBytes) {
                kept++;
                continue;
            }
            try {
                Files.delete(p.path());
                deleted++;
                deletedBytes += p.size();
                total -= p.size();
            } catch (NoSuchFileException gone) {
                total -= p.size(); // someone else removed it: no longer counts
            } catch (IOException e) {
                errors.add("cannot delete " + p.path() + ": " + e);
                kept++;
            }
        }
        return new Result(deleted, deletedBytes, kept, total, errors);
    }

    private Instant cutoff() {
        try {
            return clock.instant().minus(maxAge);
        } catch (DateTimeException | ArithmeticException e) {
            return Instant.MIN; // an age limit longer than time itself: none
        }
    }

    /** The profile files, or null when the directory cannot be read. */
    private List<Profile> list(List<String> errors) {
        List<Profile> profiles = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory)) {
            for (Path path : entries) {
                Instant time = profileTime(path.getFileName().toString());
                if (time == null) {
                    continue;
                }
                try {
                    BasicFileAttributes a = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                    if (a.isRegularFile()) {
                        profiles.add(new Profile(path, time, a.size()));
                    }
                } catch (NoSuchFileException gone) {
                    // deleted between the listing and now
                } catch (IOException e) {
                    errors.add("cannot read " + path + ": " + e);
                }
            }
        } catch (IOException e) {
            errors.add("cannot list " + directory + ": " + e);
            return null;
        }
        return profiles;
    }
}
