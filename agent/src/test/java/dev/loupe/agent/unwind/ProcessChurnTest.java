package dev.loupe.agent.unwind;

import dev.loupe.agent.unwind.UnwindTableUploaderTest.RecordingTarget;
import dev.loupe.unwinder.elf.ElfLoadSegments;
import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.proc.ProcessRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Short-lived processes (issue 25) through the uploader over a fake /proc and a recording kernel: each process's
 * mapping slots, table holds and every other per-process entry are released when the registry reports its exit (the
 * kernel's exit event), with no /proc scan; a full mapping space is counted, and the refused process gets its tables
 * once an exit frees room; exits no event reported are found by a scan when the space runs out. Exact counts.
 */
class ProcessChurnTest {
    private static final Path LIBS = Path.of("/usr/lib/x86_64-linux-gnu");
    /** Every fake process maps these two libraries and an anonymous JIT area: three mappings. */
    private static final List<String> LIBRARIES = List.of("libm.so.6", "libz.so.1");
    private static final int MAPPINGS = 3;
    private static final long NEVER = Long.MAX_VALUE / 4; // the periodic scan: not in these tests unless asked

    @TempDir
    Path proc;

    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    private void fakeProcess(int pid, long startTicks) throws Exception {
        fakeProcess(pid, startTicks, true);
    }

    /** A process mapping the two libraries, and an anonymous JIT area if {@code jit}. */
    private void fakeProcess(int pid, long startTicks, boolean jit) throws Exception {
        Path dir = Files.createDirectories(proc.resolve(Integer.toString(pid)));
        Files.writeString(dir.resolve("stat"), pid + " (short " + pid + ") R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 "
                + startTicks + " 1000 100 0\n");
        StringBuilder maps = new StringBuilder();
        if (jit) {
            maps.append(String.format("%x-%x rwxp 00000000 00:00 0 %n", 0x10000000L, 0x10100000L));
        }
        long base = 0x7f0000000000L;
        for (String lib : LIBRARIES) {
            Path file = LIBS.resolve(lib).toRealPath();
            LoadSegment text = ElfLoadSegments.read(file).stream().filter(LoadSegment::executable).findFirst().orElseThrow();
            long start = base + text.vaddr() - (text.vaddr() & 0xfff);
            maps.append(String.format("%x-%x r-xp %08x 08:01 %d %s%n", start, start + ((text.memSize() + 0x1fff) & ~0xfffL),
                    text.offset() & ~0xfffL, 1000 + LIBRARIES.indexOf(lib), file));
            base += 0x1000000;
        }
        Files.writeString(dir.resolve("maps"), maps.toString());
        Path root = dir.resolve("root");
        if (!Files.exists(root)) {
            Files.createSymbolicLink(root, Path.of("/"));
        }
    }

    private void gone(int pid) throws Exception {
        Path dir = proc.resolve(Integer.toString(pid));
        Files.delete(dir.resolve("root"));
        Files.delete(dir.resolve("stat"));
        Files.delete(dir.resolve("maps"));
        Files.delete(dir);
    }

    /** A target with room for {@code processes} processes' mappings. */
    private static RecordingTarget target(int processes) {
        return new RecordingTarget(new UnwindTarget.Capacity(64, 4096, 1 << 20, 1 << 16, processes * MAPPINGS, 1024, 256));
    }

    private UnwindTableUploader uploader(RecordingTarget target, ProcessRegistry registry, long scanIntervalNanos) {
        UnwindTableUploader u = new UnwindTableUploader(target, UnwindTableUploader.TableBuilder.ehFrame(), registry,
                scanIntervalNanos, now::get, pid -> true);
        u.scanNow(); // the first scan, at start (an empty /proc)
        return u;
    }

    /**
     * A thousand processes, at most five alive at once, in a space for ten: each is registered when its first sample
     * asks for it, and everything it held is released at its exit event, with no scan. If nothing were given back the
     * space would have been full after the tenth.
     */
    @Test
    void aChurnOfShortProcessesIsReleasedByExitEventsAlone() throws Exception {
        RecordingTarget target = target(10);
        ProcessRegistry registry = new ProcessRegistry(proc, 1024);
        UnwindTableUploader u = uploader(target, registry, NEVER);
        ArrayDeque<int[]> alive = new ArrayDeque<>(); // {pid, start}
        for (int i = 0; i < 1000; i++) {
            int pid = 2000 + i % 300; // pids come round again, as on a host
            long start = 100 + i;
            fakeProcess(pid, start);
            registry.read(pid); // the symbolizer reads it for its first sample
            u.observe(pid, start * ProcessRegistry.NANOS_PER_TICK, true, false); // which met JIT code: it needs registering
            u.drainNow();
            alive.add(new int[] {pid, (int) start});
            assertTrue(u.registered(pid), "process " + i + " registered");
            assertEquals(start, target.procs.get(pid)[0]);
            if (alive.size() == 5) {
                int[] exited = alive.poll();
                gone(exited[0]);
                registry.processExited(exited[0], exited[1]); // the kernel's exit record, as the agent relays it
                u.drainNow();
                assertFalse(u.registered(exited[0]));
                assertNull(target.procs.get(exited[0]), "its kernel entry is gone");
            }
            UnwindTableUploader.Stats st = u.stats();
            assertEquals((long) MAPPINGS * alive.size(), st.mappingsInUse(), "after process " + i);
            assertEquals(alive.size(), st.registrationsHeld());
            assertEquals(alive.size(), st.runtimeTableProcesses(), "runtime state only for the living");
        }
        UnwindTableUploader.Stats st = u.stats();
        assertEquals(1000, st.registrations());
        assertEquals(996, st.exitsReleased());
        assertEquals(0, st.mappingSpaceFull());
        assertEquals(0, st.registrationFailures());
        assertEquals(0, st.retryPauses());
        assertEquals(2, st.tablesBuilt(), "libm's and libz's tables, built once for all thousand");
        assertEquals(4, registry.size(), "the registry forgot every exited process");
        for (int[] p : alive) {
            gone(p[0]);
            registry.processExited(p[0], p[1]);
        }
        u.drainNow();
        st = u.stats();
        assertEquals(0, st.mappingsInUse());
        assertEquals(0, st.registrationsHeld());
        assertEquals(0, st.runtimeTableProcesses());
        assertEquals(1000, st.exitsReleased());
        assertEquals(0, target.procs.size());
        assertEquals(0, registry.size());
    }

    /**
     * Room for three: the fourth is refused (counted once however often it samples meanwhile, frame pointers), and
     * registered on a sample after the retry pause once an exit freed room; the space never stays full.
     */
    @Test
    void aFullMappingSpaceIsCountedAndRecoversWhenAProcessExits() throws Exception {
        RecordingTarget target = target(3);
        ProcessRegistry registry = new ProcessRegistry(proc, 1024);
        UnwindTableUploader u = uploader(target, registry, NEVER);
        for (int pid = 1; pid <= 3; pid++) {
            fakeProcess(pid, 10 + pid);
            u.observe(pid, (10 + pid) * ProcessRegistry.NANOS_PER_TICK, true, false);
        }
        u.drainNow();
        assertEquals(3L * MAPPINGS, u.stats().mappingsInUse());
        fakeProcess(4, 14);
        u.observe(4, 14 * ProcessRegistry.NANOS_PER_TICK, true, false);
        u.drainNow();
        assertFalse(u.registered(4));
        assertNull(target.procs.get(4));
        assertEquals(1, u.stats().mappingSpaceFull());
        assertEquals(1, u.stats().retryPauses());
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(500));
        u.observe(4, 14 * ProcessRegistry.NANOS_PER_TICK, true, false); // it samples again within the pause: not tried
        u.drainNow();
        assertEquals(1, u.stats().mappingSpaceFull());

        gone(2);
        registry.processExited(2, 12);
        u.drainNow();
        assertEquals(2L * MAPPINGS, u.stats().mappingsInUse(), "the exit gave its slots back");
        now.addAndGet(TimeUnit.SECONDS.toNanos(2));
        u.observe(4, 14 * ProcessRegistry.NANOS_PER_TICK, true, false);
        u.drainNow();
        assertTrue(u.registered(4), "registered on its next sample after the pause");
        assertEquals(14, target.procs.get(4)[0]);
        UnwindTableUploader.Stats st = u.stats();
        assertEquals(1, st.mappingSpaceFull());
        assertEquals(3L * MAPPINGS, st.mappingsInUse());
        assertEquals(0, st.retryPauses(), "its pause ended with its registration");
        assertEquals(0, st.registrationFailures(), "a full space is not a failure of the process");
    }

    /** Exits no event reported (records lost): a full space scans /proc for them before it refuses anyone. */
    @Test
    void exitsNoEventReportedAreFoundByAScanWhenTheSpaceRunsOut() throws Exception {
        RecordingTarget target = target(3);
        ProcessRegistry registry = new ProcessRegistry(proc, 1024);
        UnwindTableUploader u = uploader(target, registry, NEVER);
        for (int pid = 1; pid <= 3; pid++) {
            fakeProcess(pid, 10 + pid);
            u.observe(pid, (10 + pid) * ProcessRegistry.NANOS_PER_TICK, true, false);
        }
        u.drainNow();
        assertEquals(3L * MAPPINGS, u.stats().mappingsInUse());
        gone(1);
        gone(3); // both exited; their records were lost
        now.addAndGet(UnwindTableUploader.RECLAIM_SCAN_NANOS);
        fakeProcess(5, 15);
        u.observe(5, 15 * ProcessRegistry.NANOS_PER_TICK, true, false);
        u.drainNow();
        assertTrue(u.registered(5));
        UnwindTableUploader.Stats st = u.stats();
        assertEquals(0, st.mappingSpaceFull(), "the scan found room");
        assertEquals(2L * MAPPINGS, st.mappingsInUse(), "2 and 5");
        assertEquals(2, st.exitsReleased());
        assertNull(target.procs.get(1));
        assertNull(target.procs.get(3));
    }

    /** The exit of an earlier process with a pid releases nothing of the process that has the pid now. */
    @Test
    void anExitNamesOneProcessNotItsPid() throws Exception {
        RecordingTarget target = target(3);
        ProcessRegistry registry = new ProcessRegistry(proc, 1024);
        UnwindTableUploader u = uploader(target, registry, NEVER);
        fakeProcess(7, 70);
        u.observe(7, 70 * ProcessRegistry.NANOS_PER_TICK, true, false);
        u.drainNow();
        fakeProcess(7, 90); // pid 7 exited (its record late) and a new process has it
        u.observe(7, 90 * ProcessRegistry.NANOS_PER_TICK, true, false);
        u.drainNow();
        registry.processExited(7, 70);
        u.drainNow();
        assertTrue(u.registered(7));
        assertEquals(90, target.procs.get(7)[0]);
        assertEquals(MAPPINGS, u.stats().mappingsInUse(), "the first process's slots came back at the re-registration");
        assertEquals(1, u.stats().registrationsHeld());
    }

    /**
     * Processes whose code is all in files need no registration: the first one's sample, which met files the kernel had
     * no tables for, loads them and publishes them by file identity (device in the kernel's encoding, inode, the file's
     * size and mtime, the executable segment's vaddr - offset); the next 999 cost nothing here, and nothing is held
     * per process. An evicted table's file entry leaves the kernel before its id can serve another table.
     */
    @Test
    void processesWithOnlyFileCodeAreWalkedByTheirFilesTablesWithoutRegistration() throws Exception {
        RecordingTarget target = target(3);
        ProcessRegistry registry = new ProcessRegistry(proc, 1024);
        UnwindTableUploader u = uploader(target, registry, NEVER);
        fakeProcess(3000, 100, false);
        u.observe(3000, 100 * ProcessRegistry.NANOS_PER_TICK, false, true); // its walk met libm and libz without tables
        u.drainNow();
        for (int i = 1; i < 1000; i++) {
            int pid = 3000 + i % 300;
            fakeProcess(pid, 100 + i, false);
            u.observe(pid, (100 + i) * ProcessRegistry.NANOS_PER_TICK, false, false); // the kernel had every table
            if (i % 5 == 0) {
                gone(pid);
                registry.processExited(pid, 100 + i);
            }
            u.drainNow();
        }
        UnwindTableUploader.Stats st = u.stats();
        assertEquals(0, st.registrations(), "no process needed one");
        assertEquals(0, st.mappingsInUse());
        assertEquals(0, st.mappingsAllocated());
        assertEquals(1, st.fileLoads(), "only the first process asked for its files");
        assertEquals(2, st.tablesBuilt());
        assertEquals(2, st.tablesLoaded());
        assertEquals(2, st.filesPublished());
        assertEquals(2, target.files.size());
        for (String lib : LIBRARIES) {
            Path file = LIBS.resolve(lib).toRealPath();
            long inode = 1000 + LIBRARIES.indexOf(lib);
            long[] entry = target.files.get(List.of((8L << 20) | 1, inode)); // maps' 08:01, as the kernel encodes it
            assertTrue(entry != null, lib + " published under 08:01 and its inode");
            assertEquals(Files.size(file), entry[0], "size");
            assertEquals(Files.getLastModifiedTime(file).to(TimeUnit.NANOSECONDS), entry[1], "mtime");
            assertEquals(UnwindTarget.KIND_TABLE, entry[2]);
            assertEquals(0, entry[4], "no runtime's file");
            LoadSegment text = ElfLoadSegments.read(file).stream().filter(LoadSegment::executable).findFirst().orElseThrow();
            assertEquals(text.vaddr() - text.offset(), entry[5], "vaddr - offset of its executable segment");
            long tableId = entry[3];
            long[] header = target.headers.get((int) tableId);
            assertTrue(header != null && header[2] > 0, "the entry names a loaded table");
        }
        assertEquals(0, st.registrationsHeld());
        assertEquals(0, target.procs.size(), "no process has a kernel entry of its own");
    }
}
