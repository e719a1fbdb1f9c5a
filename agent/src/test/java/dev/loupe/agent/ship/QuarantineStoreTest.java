package dev.loupe.agent.ship;

import dev.loupe.agent.logging.LogCapture;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class QuarantineStoreTest {
    @TempDir
    Path root;

    private static List<String> names(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static byte[] bytes(int size, int fill) {
        byte[] b = new byte[size];
        java.util.Arrays.fill(b, (byte) fill);
        return b;
    }

    @Test
    void keepsTheBytesBesideTheReasonInAPrivateFolder() throws Exception {
        Path dir = root.resolve("q");
        QuarantineStore store = QuarantineStore.open(dir, 1000, ".writeraw", "test");
        store.write("loupe.profiles-3-17", new byte[] {1, 2, 3}, "bad series\nkey: k");
        assertEquals(List.of("loupe.profiles-3-17.reason", "loupe.profiles-3-17.writeraw"), names(dir));
        assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(dir.resolve("loupe.profiles-3-17.writeraw")));
        assertEquals("bad series\nkey: k\n", Files.readString(dir.resolve("loupe.profiles-3-17.reason")));
        assertEquals(new QuarantineStore.Stats(1, 3 + 18, 1, 0, 0), store.stats());
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
        assertThrows(IllegalArgumentException.class, () -> store.write("../escape", new byte[1], "x"));
        assertThrows(IllegalArgumentException.class, () -> store.write("a/b", new byte[1], "x"));
    }

    @Test
    void pastTheCapTheOldestGoNeverTheNewestCountedAndLogged() throws Exception {
        Path dir = root.resolve("q");
        // Each entry: 100 bytes and a reason of 2 ("r\n").
        QuarantineStore store = QuarantineStore.open(dir, 250, ".batch", "spool test");
        try (LogCapture log = new LogCapture("dev.loupe.agent.ship")) {
            store.write("a", bytes(100, 1), "r");
            store.write("b", bytes(100, 2), "r");
            assertEquals(new QuarantineStore.Stats(2, 204, 2, 0, 0), store.stats());
            store.write("c", bytes(100, 3), "r");
            assertEquals(List.of("b.batch", "b.reason", "c.batch", "c.reason"), names(dir));
            assertEquals(new QuarantineStore.Stats(2, 204, 3, 1, 102), store.stats());
            assertTrue(log.text().contains("spool test: quarantine full (max 250 bytes): deleted the 1 oldest rejected entry, "
                    + "102 bytes (deleted since start: 1, 102 bytes)"), log.text());
            // Larger than the whole cap: kept, everything older goes.
            store.write("d", bytes(400, 4), "r");
            assertEquals(List.of("d.batch", "d.reason"), names(dir));
            assertEquals(new QuarantineStore.Stats(1, 402, 4, 3, 306), store.stats());
            // The same name again replaces the entry and counts its new size once.
            store.write("d", bytes(10, 5), "r");
            assertEquals(new QuarantineStore.Stats(1, 12, 5, 3, 306), store.stats());
            assertArrayEquals(bytes(10, 5), Files.readAllBytes(dir.resolve("d.batch")));
        }
    }

    @Test
    void reopenedItFindsItsEntriesOldestFirstRemovesItsTempFilesAndLeavesOthersAlone() throws Exception {
        Path dir = root.resolve("q");
        QuarantineStore first = QuarantineStore.open(dir, 1 << 20, ".batch", "test");
        first.write("x", bytes(10, 1), "r");
        first.write("y", bytes(10, 2), "r");
        first.write("z", bytes(10, 3), "r");
        // Modification times say y is the oldest, then z, then x.
        long t = 1_763_000_000_000L;
        for (String f : List.of("y.batch", "y.reason")) {
            Files.setLastModifiedTime(dir.resolve(f), FileTime.fromMillis(t));
        }
        for (String f : List.of("z.batch", "z.reason")) {
            Files.setLastModifiedTime(dir.resolve(f), FileTime.fromMillis(t + 1000));
        }
        for (String f : List.of("x.batch", "x.reason")) {
            Files.setLastModifiedTime(dir.resolve(f), FileTime.fromMillis(t + 2000));
        }
        Files.write(dir.resolve("w.batch.tmp"), bytes(5, 9));
        Files.write(dir.resolve("w.reason.tmp"), bytes(5, 9));
        Files.write(dir.resolve("notes.txt"), bytes(500, 7));
        Files.write(dir.resolve("notes.txt.tmp"), bytes(500, 7));

        try (LogCapture log = new LogCapture("dev.loupe.agent.ship")) {
            QuarantineStore again = QuarantineStore.open(dir, 30, ".batch", "test");
            assertTrue(log.text().contains("test: removed 2 unfinished temp file(s)"), log.text());
            assertEquals(List.of("y", "z", "x"), again.names());
            assertEquals(new QuarantineStore.Stats(3, 36, 0, 0, 0), again.stats());
            again.write("v", bytes(10, 4), "r");
            assertEquals(List.of("notes.txt", "notes.txt.tmp", "v.batch", "v.reason", "x.batch", "x.reason"), names(dir));
            assertEquals(new QuarantineStore.Stats(2, 24, 1, 2, 24), again.stats());
        }
    }

    @Test
    void aCapOfZeroKeepsNothingButCounts() throws Exception {
        Path dir = root.resolve("q");
        Path spooled = Files.write(Files.createDirectories(root.resolve("spool")).resolve("1.batch"), bytes(10, 1));
        QuarantineStore store = QuarantineStore.open(dir, 0, ".batch", "test");
        try (LogCapture log = new LogCapture("dev.loupe.agent.ship")) {
            store.moveIn("1", spooled, 10, "refused");
            store.write("2", bytes(10, 2), "refused too");
            assertTrue(log.text().contains("test: deleted rejected 1 (quarantine disabled): refused"), log.text());
        }
        assertFalse(Files.exists(spooled), "the spooled file is deleted, not kept");
        assertEquals(List.of(), names(dir));
        assertEquals(new QuarantineStore.Stats(0, 0, 2, 0, 0), store.stats());
    }

    @Test
    void moveInTakesTheFileAndAFileGoneLeavesTheReason() throws Exception {
        Path dir = root.resolve("q");
        Path spool = Files.createDirectories(root.resolve("spool"));
        Path spooled = Files.write(spool.resolve("1.batch"), bytes(10, 1));
        QuarantineStore store = QuarantineStore.open(dir, 1000, ".batch", "test");
        store.moveIn("00000000000000000001", spooled, 10, "no");
        store.moveIn("00000000000000000002", spool.resolve("2.batch"), 10, "gone");
        assertEquals(List.of(), names(spool));
        assertEquals(List.of("00000000000000000001.batch", "00000000000000000001.reason", "00000000000000000002.reason"),
                names(dir));
        assertArrayEquals(bytes(10, 1), Files.readAllBytes(dir.resolve("00000000000000000001.batch")));
        assertEquals(new QuarantineStore.Stats(2, 10 + 3 + 5, 2, 0, 0), store.stats());
    }
}
