package dev.loupe.bpf;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A second BPF object (test-only uprobe counter) built on the same pieces as the profiler: it loads beside
 * a running sampler, its uprobe/uretprobe links carry cookies, and its maps work through {@link BpfMap}.
 */
class SecondProgramTest {
    @TempDir
    static Path dir;
    static Path target;
    static BpfObject counter;

    @BeforeAll
    static void build() throws Exception {
        target = dir.resolve("uprobe_target");
        run(List.of("gcc", "-O2", "src/test/c/uprobe_target.c", "-o", target.toString()));
        counter = BpfObject.fromResource(SecondProgramTest.class, "/dev/loupe/bpf/uprobe_counter.bpf.o", "uprobe_counter");
        counter.load();
    }

    @AfterAll
    static void close() {
        if (counter != null) {
            counter.close();
        }
    }

    @Test
    void uprobeAtEntryAndAtRetAndUretprobeCountEveryCallWithTheirCookies() throws Exception {
        long retOffset = retOffsetOfWork();
        BpfProgram prog = counter.program("count_hit");
        clear(counter.map("hits"));
        Process spinner = new ProcessBuilder("/bin/sh", "-c", "while :; do :; done").start();
        try (PerfEventSampler sampler = PerfEventSampler.open(49, java.util.Set.of((int) spinner.pid()));
             BpfLink entry = prog.attachUprobe(-1, target, "work", 0, 11, false);
             BpfLink atRet = prog.attachUprobe(-1, target, "work", retOffset, 22, false);
             BpfLink ret = prog.attachUprobe(-1, target, "work", 0, 33, true)) {
            run(List.of(target.toString(), "1234"));
            Map<Long, Long> hits = read(counter.map("hits"));
            assertEquals(Map.of(11L, 1234L, 22L, 1234L, 33L, 1234L), hits);
            // The sampler ran beside it: once the only process it samples is gone, every sample the kernel
            // counted has reached Java, none lost.
            List<RawSample> got = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (got.size() < 5 && System.nanoTime() < deadline) {
                sampler.poll(Duration.ofMillis(100), got::add);
            }
            spinner.destroyForcibly();
            assertTrue(spinner.waitFor(10, TimeUnit.SECONDS), "spinner exited");
            sampler.poll(Duration.ZERO, got::add);
            SamplerStats st = sampler.stats();
            assertTrue(got.size() >= 5, "samples of the spinner: " + got.size());
            assertEquals(st.samples(), got.size(), "counted in the kernel = read in Java: " + st);
            assertEquals(0, st.dropped(), st.toString());
            assertTrue(got.stream().allMatch(r -> r.pid() == spinner.pid()), "only the spinner");
        } finally {
            spinner.destroyForcibly();
        }
        // Detached: more calls count nothing.
        run(List.of(target.toString(), "10"));
        assertEquals(Map.of(11L, 1234L, 22L, 1234L, 33L, 1234L), read(counter.map("hits")));
        assertEquals(3 * 1234L, counter.map("percpu").sumPerCpuLong(0), "per-CPU counter summed over CPUs");
    }

    @Test
    void mapOperationsOnRealKernelMaps() throws Exception {
        BpfMap plain = counter.map("plain");
        assertEquals(64, plain.maxEntries());
        assertEquals(4, plain.keySize());
        assertEquals(8, plain.valueSize());
        try (Arena a = Arena.ofConfined()) {
            int n = 64;
            MemorySegment keys = a.allocate(4L * n, 8);
            MemorySegment values = a.allocate(8L * n, 8);
            for (int i = 0; i < n; i++) {
                keys.setAtIndex(JAVA_INT, i, i);
                values.setAtIndex(JAVA_LONG, i, 1000L + i * i);
            }
            plain.updateBatch(keys, values, n, BpfMap.BPF_ANY);
            MemorySegment v = a.allocate(8);
            assertTrue(plain.lookup(a.allocateFrom(JAVA_INT, 7), v));
            assertEquals(1049L, v.get(JAVA_LONG, 0));
            Map<Integer, Long> seen = new TreeMap<>();
            // Batches of 10 over 64 elements: the last batch ends with ENOENT and elements together.
            int total = plain.forEachBatched(10, (k, val) -> seen.put(k.get(JAVA_INT, 0), val.get(JAVA_LONG, 0)));
            assertEquals(64, total);
            for (int i = 0; i < n; i++) {
                assertEquals(1000L + i * i, seen.get(i), "element " + i);
            }
        }
        BpfMap hits = counter.map("hits");
        clear(hits);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = a.allocate(8);
            MemorySegment v = a.allocate(8);
            for (long i = 1; i <= 300; i++) {
                k.set(JAVA_LONG, 0, i * 7);
                v.set(JAVA_LONG, 0, i);
                hits.update(k, v, BpfMap.BPF_NOEXIST);
            }
            BpfException dup = org.junit.jupiter.api.Assertions.assertThrows(BpfException.class,
                    () -> hits.update(k, v, BpfMap.BPF_NOEXIST));
            assertEquals(17, dup.errno(), "EEXIST: " + dup.getMessage());
            Map<Long, Long> byKeys = new HashMap<>();
            assertEquals(300, hits.forEachKey(key -> byKeys.put(key.get(JAVA_LONG, 0), 0L)));
            Map<Long, Long> byBatch = read(hits);
            assertEquals(byKeys.keySet(), byBatch.keySet());
            // Batch delete of the first 100 keys, single delete of one more, then an absent key.
            MemorySegment del = a.allocate(8L * 100, 8);
            for (int i = 0; i < 100; i++) {
                del.setAtIndex(JAVA_LONG, i, (i + 1) * 7L);
            }
            hits.deleteBatch(del, 100);
            k.set(JAVA_LONG, 0, 101 * 7L);
            assertTrue(hits.delete(k));
            assertFalse(hits.delete(k));
            assertFalse(hits.lookup(k, v));
            assertEquals(199, read(hits).size());
        }
        clear(hits);
    }

    private static long retOffsetOfWork() throws Exception {
        // objdump is the oracle for where work's ret is.
        String dis = run(List.of("objdump", "-d", "--no-show-raw-insn", target.toString()));
        Matcher fn = Pattern.compile("(?m)^([0-9a-f]+) <work>:\\n((?:\\s+[0-9a-f]+:.*\\n)+)").matcher(dis);
        assertTrue(fn.find(), dis);
        long start = Long.parseLong(fn.group(1), 16);
        Matcher ret = Pattern.compile("(?m)^\\s+([0-9a-f]+):\\s+ret").matcher(fn.group(2));
        assertTrue(ret.find(), fn.group(2));
        long off = Long.parseLong(ret.group(1), 16) - start;
        assertTrue(off > 0, "ret is not the first instruction");
        return off;
    }

    private static Map<Long, Long> read(BpfMap m) throws BpfException {
        Map<Long, Long> out = new HashMap<>();
        m.forEachBatched(64, (k, v) -> out.put(k.get(JAVA_LONG, 0), v.get(JAVA_LONG, 0)));
        return out;
    }

    private static void clear(BpfMap m) throws BpfException {
        java.util.List<Long> keys = new java.util.ArrayList<>();
        m.forEachKey(k -> keys.add(k.get(JAVA_LONG, 0)));
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = a.allocate(8);
            for (long key : keys) {
                k.set(JAVA_LONG, 0, key);
                m.delete(k);
            }
        }
    }

    private static String run(List<String> cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "timeout: " + cmd);
        assertEquals(0, p.exitValue(), cmd + ": " + out);
        return out;
    }
}
