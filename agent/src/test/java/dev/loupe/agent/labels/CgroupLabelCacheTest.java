package dev.loupe.agent.labels;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

class CgroupLabelCacheTest {
    private static final long S = TimeUnit.SECONDS.toNanos(1);

    /** /proc/PID/cgroup contents by pid, and every pid read, in order. */
    private final Map<Integer, String> files = new HashMap<>();
    private final List<Integer> reads = new ArrayList<>();
    private final AtomicLong now = new AtomicLong(100 * S);

    private CgroupLabelCache cache(int capacity) {
        return new CgroupLabelCache(pid -> {
            reads.add(pid);
            String text = files.get(pid);
            if (text == null) {
                throw new NoSuchFileException("/proc/" + pid + "/cgroup");
            }
            return text;
        }, capacity, Duration.ofSeconds(60), now::get);
    }

    @Test
    void readsEachProcessOnceUntilItsEntryIsOld() {
        CgroupLabelCache c = cache(10);
        files.put(7, "0::/system.slice/a.service\n");
        assertEquals("a.service", c.labels(7, 1000).systemdUnit());
        assertEquals("a.service", c.labels(7, 1000).systemdUnit());
        assertEquals(List.of(7), reads);
        files.put(7, "0::/system.slice/b.service\n"); // moved by its manager
        now.addAndGet(59 * S);
        assertEquals("a.service", c.labels(7, 1000).systemdUnit(), "59 s old: still cached");
        now.addAndGet(S);
        assertEquals("b.service", c.labels(7, 1000).systemdUnit(), "60 s old: read again");
        assertEquals(List.of(7, 7), reads);
    }

    @Test
    void processesOfOneCgroupShareItsParsedLabelsButEachIsRead() {
        CgroupLabelCache c = cache(10);
        files.put(7, "0::/system.slice/a.service\n");
        files.put(8, "0::/system.slice/a.service\n");
        files.put(9, "0::/system.slice/b.service\n");
        CgroupLabels seven = c.labels(7, 1000);
        assertSame(seven, c.labels(8, 1000), "the same content: parsed once");
        assertEquals("b.service", c.labels(9, 1000).systemdUnit());
        assertEquals(List.of(7, 8, 9), reads);
    }

    @Test
    void aReusedPidIsAnotherProcess() {
        CgroupLabelCache c = cache(10);
        files.put(7, "0::/system.slice/a.service\n");
        c.labels(7, 1000);
        files.put(7, "0::/system.slice/b.service\n");
        assertEquals("b.service", c.labels(7, 2000).systemdUnit());
        assertEquals(List.of(7, 7), reads);
    }

    @Test
    void aProcessThatIsGoneHasNoLabelsAndIsNotCached() {
        CgroupLabelCache c = cache(10);
        assertEquals(CgroupLabels.NONE, c.labels(9, 1));
        assertEquals(CgroupLabels.NONE, c.labels(9, 1));
        assertEquals(List.of(9, 9), reads);
        assertEquals(0, c.size());
    }

    @Test
    void holdsAtMostCapacityDroppingTheLeastRecentlyAsked() {
        CgroupLabelCache c = cache(2);
        for (int pid = 1; pid <= 3; pid++) {
            files.put(pid, "0::/system.slice/u" + pid + ".service\n");
        }
        c.labels(1, 1);
        c.labels(2, 1);
        c.labels(1, 1); // 2 is now the least recently asked
        c.labels(3, 1);
        assertEquals(2, c.size());
        reads.clear();
        c.labels(1, 1);
        c.labels(3, 1);
        assertEquals(List.of(), reads, "1 and 3 stayed");
        c.labels(2, 1);
        assertEquals(List.of(2), reads, "2 was dropped");
    }

    @Test
    void readsTheRealProcFiles(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
        Files.createDirectories(dir.resolve("42"));
        Files.writeString(dir.resolve("42/cgroup"), "0::/system.slice/sshd.service\n");
        CgroupLabelCache c = new CgroupLabelCache(CgroupLabelCache.procReader(dir), 4, Duration.ofMinutes(1), now::get);
        assertEquals(new CgroupLabels("sshd.service", "", ""), c.labels(42, 5));
        assertEquals(CgroupLabels.NONE, c.labels(43, 5));
        // This process, read through the real /proc, is whatever its own file says.
        long self = ProcessHandle.current().pid();
        CgroupLabelCache real = new CgroupLabelCache(CgroupLabelCache.procReader(Path.of("/proc")), 4,
                Duration.ofMinutes(1), now::get);
        assertEquals(CgroupLabels.parse(Files.readString(Path.of("/proc/" + self + "/cgroup"))), real.labels((int) self, 1));
    }

    @Test
    void limitsMustBePositive() {
        assertThrows(IllegalArgumentException.class, () -> new CgroupLabelCache(pid -> "", 0, Duration.ofSeconds(1), now::get));
        assertThrows(IllegalArgumentException.class, () -> new CgroupLabelCache(pid -> "", 1, Duration.ZERO, now::get));
    }
}
