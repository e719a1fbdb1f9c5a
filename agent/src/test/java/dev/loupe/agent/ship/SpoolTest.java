package dev.loupe.agent.ship;

import dev.loupe.agent.logging.LogCapture;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SpoolTest {
    /** Encoded size of a batch without attributes: magic, count, length, payload, CRC. */
    private static final int OVERHEAD = 8 + 4 + 4 + 4;
    private static final long WALL_START = 1_763_000_000_000L;

    @TempDir
    Path root;
    final AtomicLong nanos = new AtomicLong(1_000_000_000L);
    final AtomicLong wallMillis = new AtomicLong(WALL_START);

    private Spool open(long maxBytes, long quarantineMax) throws IOException {
        return Spool.open(root, "parca", maxBytes, quarantineMax, nanos::get, wallMillis::get);
    }

    private Spool open() throws IOException {
        return open(1 << 20, 1 << 20);
    }

    private static byte[] payload(int size, int fill) {
        byte[] b = new byte[size];
        java.util.Arrays.fill(b, (byte) fill);
        return b;
    }

    private List<String> names(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith(".") && !n.equals("quarantine"))
                    .sorted().toList();
        }
    }

    @Test
    void appendsDurablyAndHandsOutTheOldestUntilRemoved() throws Exception {
        try (Spool spool = open()) {
            assertEquals(1, spool.append(Map.of("key", "node-a/42/cpu", "start", "123"), new byte[] {1, 2, 3}));
            assertEquals(2, spool.append(Map.of(), new byte[] {4}));
            assertEquals(3, spool.append(Map.of(), new byte[0]));
            assertEquals(List.of("00000000000000000001.batch", "00000000000000000002.batch",
                    "00000000000000000003.batch"), names(root.resolve("parca")));

            SpooledBatch first = spool.oldest().orElseThrow();
            assertEquals(1, first.sequence());
            assertEquals(Map.of("key", "node-a/42/cpu", "start", "123"), first.attributes());
            assertArrayEquals(new byte[] {1, 2, 3}, first.payload());
            assertEquals(1, spool.oldest().orElseThrow().sequence(), "oldest() does not consume");

            spool.remove(1);
            assertFalse(Files.exists(root.resolve("parca/00000000000000000001.batch")));
            assertEquals(2, spool.oldest().orElseThrow().sequence());
            spool.remove(2);
            SpooledBatch empty = spool.oldest().orElseThrow();
            assertEquals(0, empty.payload().length);
            spool.remove(3);
            spool.remove(3);
            assertTrue(spool.oldest().isEmpty());
            assertEquals(new SpoolStats(0, 0, 0, 0, 0, 0, 0), spool.stats());
        }
    }

    @Test
    void restartReplaysInOrderAndContinuesTheSequence() throws Exception {
        try (Spool spool = open()) {
            for (int i = 1; i <= 5; i++) {
                spool.append(Map.of("i", Integer.toString(i)), payload(10, i));
            }
            spool.remove(1);
            spool.remove(2);
        }
        try (Spool spool = open()) {
            assertEquals(List.of(3L, 4L, 5L), spool.sequences());
            assertEquals(3, spool.stats().batches());
            assertEquals(3L * (OVERHEAD + 10 + 2 + 1 + 4 + 1), spool.stats().bytes());
            assertEquals(6, spool.append(Map.of(), payload(1, 6)));
            for (long expected = 3; expected <= 6; expected++) {
                SpooledBatch b = spool.oldest().orElseThrow();
                assertEquals(expected, b.sequence());
                assertEquals(expected == 6 ? 6 : expected, b.payload()[0]);
                spool.remove(expected);
            }
        }
        try (Spool spool = open()) {
            // Nothing left on disk to order against: numbering may start again.
            assertEquals(1, spool.append(Map.of(), payload(1, 7)));
        }
    }

    @Test
    void sequenceAlsoContinuesAfterQuarantinedBatches() throws Exception {
        try (Spool spool = open()) {
            spool.append(Map.of(), payload(4, 1));
            spool.append(Map.of(), payload(4, 2));
            spool.quarantine(2, "rejected");
            spool.remove(1);
        }
        try (Spool spool = open()) {
            assertEquals(3, spool.append(Map.of(), payload(4, 3)), "never reuses a quarantined batch's name");
        }
    }

    @Test
    void tempFilesLeftByACrashAreRemovedAtOpen() throws Exception {
        Path dir = Files.createDirectories(root.resolve("parca"));
        Path temp = dir.resolve("00000000000000000009.batch.tmp");
        Files.write(temp, payload(100, 9));
        try (LogCapture log = new LogCapture("dev.loupe.agent.ship");
             Spool spool = open()) {
            assertFalse(Files.exists(temp));
            assertTrue(spool.oldest().isEmpty());
            assertEquals(1, spool.append(Map.of(), payload(1, 1)), "a temp file never became a batch");
            assertTrue(log.text().contains("removed 1 unfinished temp file(s)"), log.text());
        }
    }

    @Test
    void aDamagedBatchIsQuarantinedWithTheReasonAndTheNextOneServed() throws Exception {
        try (Spool spool = open()) {
            spool.append(Map.of(), payload(50, 1));
            spool.append(Map.of(), payload(50, 2));
            Path first = root.resolve("parca/00000000000000000001.batch");
            byte[] content = Files.readAllBytes(first);
            content[30] ^= 0x40;
            Files.write(first, content);

            SpooledBatch next = spool.oldest().orElseThrow();
            assertEquals(2, next.sequence());
            Path quarantined = root.resolve("parca/quarantine/00000000000000000001.batch");
            assertArrayEquals(content, Files.readAllBytes(quarantined));
            String reason = Files.readString(root.resolve("parca/quarantine/00000000000000000001.reason"));
            assertTrue(reason.startsWith("unreadable: checksum mismatch"), reason);
            SpoolStats s = spool.stats();
            assertEquals(1, s.batches());
            assertEquals(1, s.quarantinedBatches());
            assertEquals(content.length + reason.length(), s.quarantineBytes());
        }
    }

    @Test
    void aTruncatedBatchFoundAtOpenIsQuarantined() throws Exception {
        Path dir = Files.createDirectories(root.resolve("parca"));
        Files.write(dir.resolve("00000000000000000004.batch"), new byte[] {'L', 'O', 'U'});
        try (Spool spool = open()) {
            assertTrue(spool.oldest().isEmpty());
            String reason = Files.readString(dir.resolve("quarantine/00000000000000000004.reason"));
            assertTrue(reason.contains("truncated at start: 3 bytes"), reason);
            assertEquals(5, spool.append(Map.of(), payload(1, 1)));
        }
    }

    @Test
    void whenFullTheOldestBatchesAreDroppedCountedAndLogged() throws Exception {
        int size = OVERHEAD + 100;
        try (LogCapture log = new LogCapture("dev.loupe.agent.ship");
             Spool spool = open(3L * size + 10, 1000)) {
            for (int i = 1; i <= 5; i++) {
                spool.append(Map.of(), payload(100, i));
                assertTrue(spool.stats().bytes() <= 3L * size + 10);
            }
            assertEquals(List.of(3L, 4L, 5L), spool.sequences());
            assertEquals(List.of("00000000000000000003.batch", "00000000000000000004.batch",
                    "00000000000000000005.batch"), names(root.resolve("parca")));
            SpoolStats s = spool.stats();
            assertEquals(3, s.batches());
            assertEquals(3L * size, s.bytes());
            assertEquals(2, s.droppedBatches());
            assertEquals(2L * size, s.droppedBytes());
            List<String> drops = log.lines().stream().filter(l -> l.contains("dropped the")).toList();
            assertEquals(2, drops.size(), log.text());
            assertTrue(drops.get(1).contains("dropped the 1 oldest unsent batch(es), " + size + " bytes"), drops.get(1));
            assertTrue(drops.get(1).contains("dropped since start: 2 batch(es), " + 2 * size + " bytes"), drops.get(1));

            // A big batch evicts as many old ones as it needs.
            spool.append(Map.of(), payload(2 * 100 + OVERHEAD, 9));
            assertEquals(List.of(5L, 6L), spool.sequences());
            assertEquals(4, spool.stats().droppedBatches());
        }
    }

    @Test
    void aBatchLargerThanTheWholeSpoolIsDroppedAtOnce() throws Exception {
        try (LogCapture log = new LogCapture("dev.loupe.agent.ship");
             Spool spool = open(200, 100)) {
            spool.append(Map.of(), payload(10, 1));
            long seq = spool.append(Map.of(), payload(500, 2));
            assertEquals(2, seq);
            assertEquals(List.of(1L), spool.sequences(), "the older batch stays");
            assertEquals(1, spool.stats().droppedBatches());
            assertEquals(500 + OVERHEAD, spool.stats().droppedBytes());
            assertFalse(Files.exists(root.resolve("parca/00000000000000000002.batch")));
            assertTrue(log.text().contains("dropped a new batch of " + (500 + OVERHEAD) + " bytes"), log.text());
        }
    }

    @Test
    void theQuarantineIsBoundedToo() throws Exception {
        int size = OVERHEAD + 100;
        try (Spool spool = open(1 << 20, 2L * size + 40)) {
            for (int i = 1; i <= 4; i++) {
                spool.append(Map.of(), payload(100, i));
            }
            for (long i = 1; i <= 4; i++) {
                spool.quarantine(i, "bad");
            }
            assertEquals(List.of("00000000000000000003.batch", "00000000000000000003.reason",
                    "00000000000000000004.batch", "00000000000000000004.reason"), names(root.resolve("parca/quarantine")));
            assertEquals(2L * (size + 4), spool.stats().quarantineBytes());
            assertEquals(4, spool.stats().quarantinedBatches());
        }
    }

    @Test
    void oldestAgeUsesTheMonotonicClockWithinARunAndMtimeAcrossRestarts() throws Exception {
        try (Spool spool = open()) {
            assertEquals(0, spool.stats().oldestAgeNanos());
            spool.append(Map.of(), payload(1, 1));
            nanos.addAndGet(TimeUnit.SECONDS.toNanos(5));
            spool.append(Map.of(), payload(1, 2));
            wallMillis.addAndGet(-3_600_000); // a wall-clock step must not matter within a run
            nanos.addAndGet(TimeUnit.SECONDS.toNanos(2));
            assertEquals(TimeUnit.SECONDS.toNanos(7), spool.stats().oldestAgeNanos());
            spool.remove(1);
            assertEquals(TimeUnit.SECONDS.toNanos(2), spool.stats().oldestAgeNanos());
        }
        wallMillis.set(WALL_START);
        Files.setLastModifiedTime(root.resolve("parca/00000000000000000002.batch"),
                FileTime.fromMillis(WALL_START - 30_000));
        nanos.set(42); // a new run: a new monotonic origin
        try (Spool spool = open()) {
            assertEquals(TimeUnit.SECONDS.toNanos(30), spool.stats().oldestAgeNanos());
            nanos.addAndGet(TimeUnit.SECONDS.toNanos(1));
            assertEquals(TimeUnit.SECONDS.toNanos(31), spool.stats().oldestAgeNanos());
        }
    }

    @Test
    void oneSpoolPerDirectoryAndPerSink() throws Exception {
        try (Spool parca = open();
             Spool kafka = Spool.open(root, "kafka", 1000, 100, nanos::get, wallMillis::get)) {
            IOException e = assertThrows(IOException.class, this::open);
            assertTrue(e.getMessage().contains("in use"), e.getMessage());
            parca.append(Map.of(), payload(1, 1));
            assertTrue(kafka.oldest().isEmpty());
            assertEquals(root.resolve("kafka"), kafka.directory());
        }
        assertThrows(IllegalArgumentException.class, () -> Spool.open(root, "../x", 1000));
        assertThrows(IllegalArgumentException.class, () -> Spool.open(root, "", 1000));
        assertThrows(IllegalArgumentException.class, () -> Spool.open(root, "ok", 0));
    }

    @Test
    void awaitBatchWakesWhenABatchIsAppended() throws Exception {
        try (Spool spool = open()) {
            assertFalse(spool.awaitBatch(TimeUnit.MILLISECONDS.toNanos(20)));
            CompletableFuture<Boolean> woken = new CompletableFuture<>();
            Thread waiter = Thread.ofPlatform().start(() -> {
                try {
                    woken.complete(spool.awaitBatch(TimeUnit.SECONDS.toNanos(30)));
                } catch (Throwable e) {
                    woken.completeExceptionally(e);
                }
            });
            // Append only once the waiter waits inside awaitBatch (before, it would find the batch without waiting).
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (waiter.getState() != Thread.State.TIMED_WAITING) {
                assertTrue(System.nanoTime() < end && waiter.isAlive(), "the waiter never waited: " + waiter.getState());
                Thread.sleep(1);
            }
            spool.append(Map.of(), payload(1, 1));
            assertTrue(woken.get(10, TimeUnit.SECONDS));
        }
    }

    @Test
    void damagedFilesOfEveryKindAreReportedNotThrown() throws Exception {
        byte[] good = java.nio.ByteBuffer.allocate(OVERHEAD).array();
        assertThrows(BatchFile.CorruptBatchException.class, () -> BatchFile.decode(1, good), "zero magic");
        var encoded = BatchFile.encode(Map.of("k", "v"), payload(10, 1));
        byte[] whole = new byte[(int) encoded.size()];
        var buf = java.nio.ByteBuffer.wrap(whole);
        buf.put(encoded.header().duplicate()).put(encoded.payload()).put(encoded.trailer().duplicate());
        assertEquals(Map.of("k", "v"), BatchFile.decode(1, whole).attributes());
        for (int cut = 0; cut < whole.length; cut++) {
            byte[] part = java.util.Arrays.copyOf(whole, cut);
            assertThrows(BatchFile.CorruptBatchException.class, () -> BatchFile.decode(1, part), "cut at " + cut);
        }
    }
}
