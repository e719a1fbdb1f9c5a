package dev.loupe.agent.sink;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

class LocalFileRetentionTest {
    private static final Instant NOW = Instant.parse("2026-11-22T12:00:00Z");
    private static final InstantSource CLOCK = () -> NOW;

    @TempDir
    Path dir;

    /** A profile named as the sink names it, {@code minutesAgo} before NOW, of {@code bytes} bytes. */
    private Path profile(String type, int minutesAgo, int bytes) throws IOException {
        long nanos = NOW.minus(Duration.ofMinutes(minutesAgo)).toEpochMilli() * 1_000_000L;
        return Files.write(dir.resolve(LocalFileSink.fileName(type, nanos)), new byte[bytes]);
    }

    private Set<String> names() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return new TreeSet<>(s.map(p -> p.getFileName().toString()).toList());
        }
    }

    @Test
    void readsTheTimeInTheSinksOwnNames() {
        assertEquals(Instant.parse("2026-11-22T10:15:00Z"), LocalFileRetention.profileTime("cpu-20261122T101500.000Z.pb.gz"));
        assertEquals(Instant.parse("2026-11-22T10:15:00.123Z"),
                LocalFileRetention.profileTime(LocalFileSink.fileName("latency", Instant.parse("2026-11-22T10:15:00.123Z").toEpochMilli() * 1_000_000L)));
        assertEquals(Instant.parse("2024-02-29T00:00:00Z"), LocalFileRetention.profileTime("off-cpu-20240229T000000.000Z.pb.gz"));
        for (String notOurs : List.of("cpu-20261122T101500.000Z.pb", "cpu-20261122T101500Z.pb.gz", "notes.txt",
                "cpu-latest.pb.gz", ".cpu-20261122T101500.000Z.pb.gz123.tmp", "cpu-20261322T101500.000Z.pb.gz",
                "cpu-20250229T000000.000Z.pb.gz", "CPU-20261122T101500.000Z.pb.gz", "-20261122T101500.000Z.pb.gz",
                "cpu-20261122T101500.000Z.pb.gz.bak")) {
            assertNull(LocalFileRetention.profileTime(notOurs), notOurs);
        }
    }

    @Test
    void deletesWhatIsOlderThanTheMaxAge() throws IOException {
        profile("cpu", 90, 10);
        profile("latency", 61, 10);
        Path hour = profile("cpu", 60, 10);
        Path recent = profile("cpu", 5, 10);
        LocalFileRetention.Result r = new LocalFileRetention(dir, Duration.ofHours(1), Long.MAX_VALUE, CLOCK).enforce();
        assertEquals(new LocalFileRetention.Result(2, 20, 2, 20, List.of()), r);
        assertEquals(Set.of(hour.getFileName().toString(), recent.getFileName().toString()), names(),
                "exactly an hour old is not older than an hour");
    }

    @Test
    void deletesTheOldestUntilTheTotalFits() throws IOException {
        profile("cpu", 40, 300);
        profile("latency", 30, 200);
        Path b = profile("cpu", 20, 400);
        Path c = profile("cpu", 10, 100);
        LocalFileRetention.Result r = new LocalFileRetention(dir, Duration.ofDays(1), 500, CLOCK).enforce();
        assertEquals(new LocalFileRetention.Result(2, 500, 2, 500, List.of()), r);
        assertEquals(Set.of(b.getFileName().toString(), c.getFileName().toString()), names());
        assertEquals(new LocalFileRetention.Result(0, 0, 2, 500, List.of()),
                new LocalFileRetention(dir, Duration.ofDays(1), 500, CLOCK).enforce(), "a second pass has nothing to do");
        assertEquals(new LocalFileRetention.Result(2, 500, 0, 0, List.of()),
                new LocalFileRetention(dir, Duration.ofDays(1), 0, CLOCK).enforce(), "0 bytes: nothing stays");
    }

    @Test
    void bothLimitsHold() throws IOException {
        profile("cpu", 120, 1);
        profile("cpu", 50, 100);
        Path keep = profile("cpu", 40, 100);
        LocalFileRetention.Result r = new LocalFileRetention(dir, Duration.ofHours(1), 150, CLOCK).enforce();
        assertEquals(new LocalFileRetention.Result(2, 101, 1, 100, List.of()), r);
        assertEquals(Set.of(keep.getFileName().toString()), names());
    }

    @Test
    void neverTouchesWhatTheSinkDidNotName() throws IOException {
        Path old = profile("cpu", 600, 10);
        Files.writeString(dir.resolve("notes.txt"), "x".repeat(1000));
        Files.write(dir.resolve(".cpu-20261122T101500.000Z.pb.gz123.tmp"), new byte[1000]);
        Files.write(dir.resolve("cpu-20261322T101500.000Z.pb.gz"), new byte[1000]);
        Files.createDirectory(dir.resolve("cpu-20200101T000000.000Z.pb.gz"));
        Path outside = Files.write(dir.getParent().resolve(dir.getFileName() + "-big"), new byte[5000]);
        try {
            Files.createSymbolicLink(dir.resolve("cpu-20200102T000000.000Z.pb.gz"), outside);
            LocalFileRetention.Result r = new LocalFileRetention(dir, Duration.ofMinutes(1), 0, CLOCK).enforce();
            assertEquals(new LocalFileRetention.Result(1, 10, 0, 0, List.of()), r);
            assertEquals(Set.of("notes.txt", ".cpu-20261122T101500.000Z.pb.gz123.tmp", "cpu-20261322T101500.000Z.pb.gz",
                    "cpu-20200101T000000.000Z.pb.gz", "cpu-20200102T000000.000Z.pb.gz"), names());
            assertEquals(false, Files.exists(old));
            assertEquals(5000, Files.size(outside), "a link's target is never followed");
        } finally {
            Files.delete(outside);
        }
    }

    @Test
    void failuresAreReturnedAndTheRestGoesOn() throws Exception {
        Path stuck = profile("cpu", 30, 100);
        Path next = profile("cpu", 20, 100);
        Path newest = profile("cpu", 10, 100);
        chattr("+i", stuck); // immutable: even root cannot delete it
        try {
            LocalFileRetention.Result r = new LocalFileRetention(dir, Duration.ofDays(1), 250, CLOCK).enforce();
            assertEquals(1, r.deletedFiles(), "the next oldest goes instead of the stuck one");
            assertEquals(100, r.deletedBytes());
            assertEquals(2, r.keptFiles());
            assertEquals(200, r.keptBytes());
            assertEquals(List.of("cannot delete " + stuck + ": java.nio.file.FileSystemException: " + stuck
                    + ": Operation not permitted"), r.errors());
            assertEquals(Set.of(stuck.getFileName().toString(), newest.getFileName().toString()), names());
            assertEquals(false, Files.exists(next));
        } finally {
            chattr("-i", stuck);
        }
    }

    @Test
    void aMissingDirectoryIsAnErrorValue() {
        Path missing = dir.resolve("gone");
        LocalFileRetention.Result r = new LocalFileRetention(missing, Duration.ofDays(1), 0, CLOCK).enforce();
        assertEquals(new LocalFileRetention.Result(0, 0, 0, 0,
                List.of("cannot list " + missing + ": java.nio.file.NoSuchFileException: " + missing)), r);
    }

    @Test
    void anAgeLimitLongerThanTimeIsNone() throws IOException {
        profile("cpu", 60 * 24 * 365, 10);
        assertEquals(new LocalFileRetention.Result(0, 0, 1, 10, List.of()),
                new LocalFileRetention(dir, Duration.ofSeconds(Long.MAX_VALUE), Long.MAX_VALUE, CLOCK).enforce());
    }

    @Test
    void limitsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> new LocalFileRetention(dir, Duration.ZERO, 1, CLOCK));
        assertThrows(IllegalArgumentException.class, () -> new LocalFileRetention(dir, Duration.ofDays(1), -1, CLOCK));
    }

    private static void chattr(String flag, Path file) throws Exception {
        Process p = new ProcessBuilder("chattr", flag, file.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), "chattr " + flag + ": " + out);
    }
}
