package dev.loupe.agent.unwind;

import dev.loupe.unwinder.elf.ElfLoadSegments;
import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.ehframe.UnwindTableBuilder;
import dev.loupe.unwinder.proc.ProcessRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The uploader over a fake /proc whose processes map real Debian libraries, into a recording fake of the
 * kernel maps: tables are shared, a small budget evicts least recently used tables, processes that lose a
 * table re-register and re-upload it, and what the kernel would read is always a complete, correct table.
 */
class UnwindTableUploaderTest {
    private static final Path LIBS = Path.of("/usr/lib/x86_64-linux-gnu");
    private static final List<String> LIBRARIES = List.of("libm.so.6", "libexpat.so.1", "libssl.so.3", "libsqlite3.so.0",
            "libstdc++.so.6", "libz.so.1");

    @TempDir
    Path proc;

    /** Records what the uploader writes, as the kernel's arrays would hold it. */
    static final class RecordingTarget implements UnwindTarget {
        final Capacity capacity;
        final Map<Integer, long[]> headers = new HashMap<>(); // id -> pcBase, pageStart, pages, rowStart, ruleStart
        final Map<Integer, Integer> pages = new HashMap<>(); // page slot -> first_row | row_count packed as 2 ints
        final int[] pageWords;
        final int[] rows;
        final long[] rules;
        final Map<Integer, Mapping> mappings = new HashMap<>();
        final Map<Integer, long[]> procs = new HashMap<>(); // tgid -> startTicks, first, count
        int cleared;

        RecordingTarget(Capacity c) {
            this.capacity = c;
            this.pageWords = new int[2 * c.pages()];
            this.rows = new int[c.rows()];
            this.rules = new long[c.rules()];
        }

        @Override
        public Capacity capacity() {
            return capacity;
        }

        @Override
        public void writeTable(int id, long pcBase, int pageStart, int[] pw, int rowStart, int[] rw, int ruleStart, long[] ru) {
            System.arraycopy(pw, 0, pageWords, 2 * pageStart, pw.length);
            System.arraycopy(rw, 0, rows, rowStart, rw.length);
            System.arraycopy(ru, 0, rules, ruleStart, ru.length);
            headers.put(id, new long[] {pcBase, pageStart, pw.length / 2, rowStart, ruleStart});
        }

        @Override
        public void clearTable(int id) {
            headers.put(id, new long[] {0, 0, 0, 0, 0});
            cleared++;
        }

        @Override
        public void writeMappings(int first, List<Mapping> sorted) {
            for (int i = 0; i < sorted.size(); i++) {
                mappings.put(first + i, sorted.get(i));
            }
        }

        @Override
        public void setProcess(int tgid, long startTicks, int first, int count) {
            procs.put(tgid, new long[] {startTicks, first, count});
        }

        @Override
        public void removeProcess(int tgid) {
            procs.remove(tgid);
        }

        /** The kernel's file tables: (device, inode) to {size, mtime, kind, table or reason, flags, vaddr delta}. */
        final Map<List<Long>, long[]> files = new HashMap<>();

        @Override
        public void setFile(long device, long inode, long size, long mtimeNanos, int kind, int tableOrReason, int flags,
                            long vaddrDelta) {
            files.put(List.of(device, inode), new long[] {size, mtimeNanos, kind, tableOrReason, flags, vaddrDelta});
        }

        @Override
        public void removeFile(long device, long inode) {
            files.remove(List.of(device, inode));
        }

        /** The kernel's lookup (the same steps as profiler.bpf.c's table_rule) over what was written. */
        long lookup(int tableId, long vaddr) {
            long[] h = headers.get(tableId);
            if (h == null || h[2] == 0 || Long.compareUnsigned(vaddr, h[0]) < 0) {
                return UnwindRule.NOT_COVERED;
            }
            long p = (vaddr - h[0]) >>> 16;
            if (p >= h[2]) {
                return UnwindRule.NOT_COVERED;
            }
            int slot = (int) (h[1] + p);
            int first = pageWords[2 * slot];
            int count = pageWords[2 * slot + 1];
            if (count == 0) {
                return 4L | (1L << 8); // stop(no unwind info)
            }
            int lo = (int) h[3] + first;
            int hi = lo + count;
            while (hi - lo > 1) {
                int mid = (lo + hi) >>> 1;
                if ((rows[mid] & 0xffff) <= (vaddr & 0xffff)) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            return rules[(int) h[4] + (rows[lo] >>> 16)];
        }
    }

    private static final UnwindTableUploader.TableBuilder REAL = UnwindTableUploader.TableBuilder.ehFrame();

    /** A fake process mapping {@code libs} (executable segments, at made-up addresses) plus an anonymous JIT area. */
    private void fakeProcess(int pid, long startTicks, List<String> libs) throws Exception {
        Path dir = Files.createDirectories(proc.resolve(Integer.toString(pid)));
        Files.writeString(dir.resolve("stat"), pid + " (fake " + pid + ") R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 "
                + startTicks + " 1000 100 0\n");
        StringBuilder maps = new StringBuilder();
        long base = 0x7f0000000000L;
        int inode = 1000;
        for (String lib : libs) {
            Path file = LIBS.resolve(lib).toRealPath();
            LoadSegment text = ElfLoadSegments.read(file).stream().filter(LoadSegment::executable).findFirst().orElseThrow();
            long start = base + text.vaddr() - (text.vaddr() & 0xfff);
            maps.append(String.format("%x-%x r-xp %08x 08:01 %d %s%n", start, start + ((text.memSize() + 0x1fff) & ~0xfffL),
                    text.offset() & ~0xfffL, inode + LIBRARIES.indexOf(lib), file));
            base += 0x1000000;
        }
        maps.append(String.format("%x-%x rwxp 00000000 00:00 0 %n", 0x10000000L, 0x10100000L)); // JIT: frame pointers
        Files.writeString(dir.resolve("maps"), maps.toString());
        Path root = dir.resolve("root");
        if (!Files.exists(root)) {
            Files.createSymbolicLink(root, Path.of("/"));
        }
    }

    @Test
    void sharedTablesEvictionUnderASmallBudgetAndReupload() throws Exception {
        // Room for two of these libraries' rows at a time, no more.
        Map<String, Integer> rowsOf = new HashMap<>();
        for (String lib : LIBRARIES) {
            rowsOf.put(lib, UnwindTableBuilder.build(LIBS.resolve(lib)).rowCount());
        }
        int biggestTwo = rowsOf.values().stream().sorted((a, b) -> b - a).limit(2).mapToInt(Integer::intValue).sum();
        RecordingTarget target = new RecordingTarget(new UnwindTarget.Capacity(64, 4096, biggestTwo + 16, 1 << 16, 1024, 64, 256));
        AtomicLong now = new AtomicLong(1_000_000_000L);
        UnwindTableUploader u = new UnwindTableUploader(target, REAL, new ProcessRegistry(proc, 1024), 1_000_000_000L, now::get,
                pid -> true);

        fakeProcess(101, 500, List.of("libm.so.6", "libexpat.so.1"));
        fakeProcess(102, 600, List.of("libm.so.6", "libexpat.so.1"));
        u.scanNow();
        assertEquals(0, u.stats().processes(), "idle processes are not registered: only those that run");
        u.observe(101, 500 * ProcessRegistry.NANOS_PER_TICK, true, false); // their first samples
        u.observe(102, 600 * ProcessRegistry.NANOS_PER_TICK, true, false);
        u.scanNow();
        UnwindTableUploader.Stats st = u.stats();
        assertEquals(2, st.processes());
        assertEquals(2, st.tablesLoaded(), "both processes share libm's and libexpat's tables");
        assertEquals(2, st.tablesBuilt());
        assertEquals(rowsOf.get("libm.so.6") + rowsOf.get("libexpat.so.1"), st.rowsLoaded());
        assertEquals(target.procs.get(101)[1] != target.procs.get(102)[1], true, "each process has its own mappings slice");
        assertCorrect(target, 101, List.of("libm.so.6", "libexpat.so.1"));
        assertCorrect(target, 102, List.of("libm.so.6", "libexpat.so.1"));

        // More binaries than fit: each registration evicts the least recently used tables.
        int pid = 200;
        for (String lib : List.of("libssl.so.3", "libsqlite3.so.0", "libstdc++.so.6", "libz.so.1")) {
            now.addAndGet(1_000_000_000L);
            fakeProcess(pid, 700 + pid, List.of(lib));
            u.register(pid);
            assertCorrect(target, pid, List.of(lib));
            pid++;
        }
        st = u.stats();
        assertTrue(st.evictions() >= 2, "evictions: " + st.evictions());
        assertEquals(st.evictions(), target.cleared, "every eviction unpublished its table first");
        assertTrue(st.rowsLoaded() <= target.capacity.rows(), "within the budget: " + st.rowsLoaded());
        assertTrue(st.bytesLoaded() > 0);

        // Process 101 lost its tables: its next sample re-registers it, re-uploading them.
        assertFalse(u.registered(101), "a process whose table was evicted is stale");
        assertFalse(target.procs.containsKey(101), "and out of the kernel (frame pointers, marked) until registered again:"
                + " its mappings name table ids that now serve other binaries");
        u.observe(101, 500 * ProcessRegistry.NANOS_PER_TICK, true, false);
        u.scanNow(); // the uploader thread's work, synchronously
        assertTrue(u.registered(101));
        assertCorrect(target, 101, List.of("libm.so.6", "libexpat.so.1"));

        // Exit: the scan forgets a process whose /proc entry is gone, and its kernel entry.
        deleteRecursively(proc.resolve("102"));
        u.scanNow();
        assertFalse(target.procs.containsKey(102));
        assertEquals(u.stats().processes(), target.procs.size());
    }

    @Test
    void registrationDelayIsMeasuredFromProcessStartForProcessesStartedAfterTheAgent() throws Exception {
        RecordingTarget target = new RecordingTarget(new UnwindTarget.Capacity(64, 4096, 1 << 20, 1 << 16, 1024, 64, 256));
        Files.writeString(proc.resolve("uptime"), "10.00 17.50\n"); // the agent starts 1,000 ticks after boot
        AtomicLong now = new AtomicLong(); // the monotonic clock, which the boot clock follows from uptime's offset
        UnwindTableUploader u = new UnwindTableUploader(target, REAL, new ProcessRegistry(proc, 1024),
                1_000_000_000L, now::get, pid -> true);
        fakeProcess(501, 900, List.of("libm.so.6"));  // already running when the agent started: not counted
        fakeProcess(502, 1005, List.of("libm.so.6")); // started 50 ms after the agent
        fakeProcess(503, 1010, List.of("libz.so.1"));
        now.set(120_000_000L);
        u.register(501);
        u.register(502); // 70 ms after its start
        now.set(400_000_000L);
        u.register(503); // 300 ms after its start
        UnwindTableUploader.DelayHistogram d = u.stats().registrationDelay();
        assertEquals(2, d.count());
        assertEquals(0.37, d.sumSeconds(), 1e-9);
        assertEquals(0.3, d.maxSeconds(), 1e-9);
        int le100ms = java.util.Arrays.binarySearch(d.bounds(), 0.1);
        int le500ms = java.util.Arrays.binarySearch(d.bounds(), 0.5);
        assertEquals(1, d.counts()[le100ms], "70 ms is in (0.05, 0.1]");
        assertEquals(1, d.counts()[le500ms], "300 ms is in (0.25, 0.5]");
        assertEquals(2, java.util.Arrays.stream(d.counts()).sum());
    }

    @Test
    void pidReuseReplacesTheEntryAndTheStartTimeGuardsIt() throws Exception {
        RecordingTarget target = new RecordingTarget(new UnwindTarget.Capacity(64, 4096, 1 << 20, 1 << 16, 1024, 64, 256));
        UnwindTableUploader u = new UnwindTableUploader(target, REAL, new ProcessRegistry(proc, 1024), 1_000_000_000L, () -> 0L,
                pid -> true);
        fakeProcess(300, 1234, List.of("libm.so.6"));
        u.observe(300, 1234 * ProcessRegistry.NANOS_PER_TICK, true, false);
        u.scanNow();
        assertEquals(1234, target.procs.get(300)[0], "the kernel entry carries the start time it is valid for");
        assertTrue(u.registered(300));
        fakeProcess(300, 5678, List.of("libz.so.1")); // a new process got the pid
        u.observe(300, 5678 * ProcessRegistry.NANOS_PER_TICK, true, false);
        u.scanNow();
        assertEquals(5678, target.procs.get(300)[0]);
        assertCorrect(target, 300, List.of("libz.so.1"));
    }

    /**
     * The file vanished between stat and open (the process exited meanwhile): frame pointers this time,
     * nothing cached, and the next process mapping the binary gets its table.
     */
    @Test
    void aFileThatVanishesIsNotCachedAsABinaryWithoutTable() throws Exception {
        RecordingTarget target = new RecordingTarget(new UnwindTarget.Capacity(64, 4096, 1 << 20, 1 << 16, 1024, 64, 256));
        java.util.concurrent.atomic.AtomicInteger opens = new java.util.concurrent.atomic.AtomicInteger();
        UnwindTableUploader.TableBuilder racy = new UnwindTableUploader.TableBuilder() {
            @Override
            public UnwindTable build(Path file) throws Exception {
                if (opens.getAndIncrement() == 0) {
                    throw new java.nio.file.NoSuchFileException(file.toString());
                }
                return REAL.build(file);
            }

            @Override
            public UnwindTable build(String name, ByteBuffer image) throws Exception {
                return REAL.build(name, image);
            }
        };
        UnwindTableUploader u = new UnwindTableUploader(target, racy, new ProcessRegistry(proc, 1024),
                1_000_000_000L, () -> 0L, pid -> true);
        fakeProcess(400, 77, List.of("libm.so.6"));
        u.observe(400, 77 * ProcessRegistry.NANOS_PER_TICK, true, false);
        u.scanNow();
        long[] p = target.procs.get(400);
        assertTrue(p != null, "registered");
        assertEquals(UnwindTarget.KIND_FRAME_POINTERS, target.mappings.get((int) p[1] + 1).kind(), "frame pointers this time");
        assertEquals(0, u.stats().tableFailures(), "not counted as a binary without a table");
        fakeProcess(401, 78, List.of("libm.so.6"));
        u.observe(401, 78 * ProcessRegistry.NANOS_PER_TICK, true, false);
        u.scanNow();
        assertCorrect(target, 401, List.of("libm.so.6"));
    }

    /**
     * For every mapping of the process as registered: table mappings resolve, through the written arrays and
     * the kernel's lookup, to exactly the rules of a freshly built table, at every row boundary.
     */
    private static void assertCorrect(RecordingTarget target, int pid, List<String> libs) throws Exception {
        long[] p = target.procs.get(pid);
        assertTrue(p != null, "pid " + pid + " registered in the kernel");
        List<UnwindTarget.Mapping> ms = new ArrayList<>();
        for (int i = 0; i < p[2]; i++) {
            ms.add(target.mappings.get((int) p[1] + i));
        }
        assertEquals(libs.size() + 1, ms.size());
        assertEquals(UnwindTarget.KIND_FRAME_POINTERS, ms.get(0).kind(), "the anonymous JIT area (lowest address) uses frame pointers");
        for (int i = 0; i < libs.size(); i++) {
            UnwindTarget.Mapping m = ms.get(i + 1);
            assertEquals(UnwindTarget.KIND_TABLE, m.kind(), libs.get(i));
            UnwindTable fresh = UnwindTableBuilder.build(LIBS.resolve(libs.get(i)));
            int[] rows = fresh.rowWords();
            int[] pages = fresh.pageWords();
            int checked = 0;
            for (int pg = 0; pg < fresh.pageCount(); pg++) {
                for (int r = pages[2 * pg]; r < pages[2 * pg] + pages[2 * pg + 1]; r++) {
                    long vaddr = fresh.pcBase() + ((long) pg << 16) + (rows[r] & 0xffff);
                    assertEquals(fresh.lookup(vaddr), target.lookup(m.tableOrReason(), vaddr),
                            libs.get(i) + " at 0x" + Long.toHexString(vaddr));
                    checked++;
                }
            }
            assertTrue(checked > 100, libs.get(i) + " rows checked: " + checked);
        }
    }

    private static void deleteRecursively(Path p) throws Exception {
        if (Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            try (var s = Files.list(p)) {
                for (Path c : s.toList()) {
                    deleteRecursively(c);
                }
            }
        }
        Files.delete(p);
    }
}
