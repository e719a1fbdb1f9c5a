package dev.loupe.agent.unwind;

import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.hotspot.CodeBlob;
import dev.loupe.unwinder.hotspot.CodeCache;
import dev.loupe.unwinder.hotspot.CodeCacheUnwindTable;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcessRegistry;
import dev.loupe.unwinder.runtime.CodeTable;
import dev.loupe.unwinder.runtime.ManagedRuntime;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import dev.loupe.unwinder.runtime.RuntimeProcess;
import dev.loupe.unwinder.runtime.RuntimeRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The uploader loads what a process's runtime gives through the seam, naming no runtime: its code table covers the
 * runtime's anonymous code (bias 0), a newer table replaces it and the old one leaves the kernel, hints reach the
 * runtime; and a process with more executable mappings than the kernel's search covers is refused and counted.
 */
class RuntimeTablesUploadTest {
    private static final long HEAP = 0x10000000L;

    @TempDir
    Path proc;

    /** A runtime in every process, whose code is one blob of {@code frameBytes} at {@code blobStart}. */
    static final class OneBlobRuntime implements ManagedRuntime {
        long blobStart = HEAP + 0x100;
        int frameBytes = 32;
        int generation = 1;
        int handedOut;
        final List<Long> hints = new ArrayList<>();

        @Override
        public String name() {
            return "one-blob";
        }

        @Override
        public boolean detect(List<MapEntry> executable) {
            return true;
        }

        @Override
        public Optional<RuntimeProcess> open(int pid, String exe) {
            return Optional.of(new RuntimeProcess() {
                @Override
                public RuntimeFrame code(long address, boolean callSite, long now) {
                    return null;
                }

                @Override
                public CodeTable codeTable(long now) {
                    handedOut = generation;
                    CodeCache cache = new CodeCache(List.of(new CodeCache.Range(HEAP, HEAP + 0x100000)), List.of(
                            new CodeBlob(CodeBlob.Kind.NMETHOD, blobStart - 0x80, blobStart, blobStart + 0x100, blobStart + 0x10,
                                    frameBytes, "nmethod", 0x1234)));
                    try {
                        UnwindTable t = CodeCacheUnwindTable.build("[jit] pid " + pid + " gen " + generation, cache).table();
                        return new CodeTable(t, List.of(new CodeTable.Range(HEAP, HEAP + 0x100000)), generation);
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                }

                @Override
                public boolean refreshCode(long now) {
                    return generation != handedOut;
                }

                @Override
                public void unknownCode(long now) {
                    hints.add(now);
                }

                @Override
                public void close() {}
            });
        }
    }

    private void fakeProcess(int pid, long startTicks, int fileMappings) throws Exception {
        Path dir = Files.createDirectories(proc.resolve(Integer.toString(pid)));
        Files.writeString(dir.resolve("stat"), pid + " (fake) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " + startTicks + " 1000 100 0\n");
        StringBuilder maps = new StringBuilder();
        for (int i = 0; i < fileMappings; i++) { // files that cannot be opened: stop mappings, no table to build
            long start = 0x7f0000000000L + i * 0x2000L;
            maps.append(String.format("%x-%x r-xp 00000000 08:01 %d /nonexistent/lib%d.so%n", start, start + 0x1000, 5000 + i, i));
        }
        maps.append(String.format("%x-%x rwxp 00000000 00:00 0 %n", HEAP, HEAP + 0x100000));
        Files.writeString(dir.resolve("maps"), maps.toString());
    }

    private static UnwindTarget.Mapping heapMapping(UnwindTableUploaderTest.RecordingTarget target, int pid) {
        long[] p = target.procs.get(pid);
        for (int i = 0; i < p[2]; i++) {
            UnwindTarget.Mapping m = target.mappings.get((int) p[1] + i);
            if (m.start() == HEAP) {
                return m;
            }
        }
        throw new AssertionError("no mapping of the code heap");
    }

    @Test
    void aRuntimesCodeTableIsLoadedReplacedAndDropped() throws Exception {
        UnwindTableUploaderTest.RecordingTarget target = new UnwindTableUploaderTest.RecordingTarget(
                new UnwindTarget.Capacity(64, 4096, 1 << 16, 1 << 16, 1 << 14, 64, 256));
        AtomicLong now = new AtomicLong(1_000_000_000L);
        ProcessRegistry registry = new ProcessRegistry(proc, 1024);
        OneBlobRuntime runtime = new OneBlobRuntime();
        UnwindTableUploader u = new UnwindTableUploader(target, UnwindTableUploader.TableBuilder.ehFrame(), registry,
                new RuntimeRegistry(List.of(runtime), registry, now::get), 1_000_000_000L, now::get, pid -> true);
        fakeProcess(301, 500, 1);
        u.observe(301, 500 * ProcessRegistry.NANOS_PER_TICK, true, false);
        u.scanNow();
        assertTrue(u.registered(301));
        UnwindTarget.Mapping heap = heapMapping(target, 301);
        assertEquals(UnwindTarget.KIND_TABLE, heap.kind());
        assertEquals(0, heap.bias(), "a runtime's table has runtime addresses");
        int first = heap.tableOrReason();
        assertEquals(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 32, UnwindRule.RBP_SAVED, -16), target.lookup(first, HEAP + 0x150));

        // A sample showed unknown code: the hint reaches the runtime on the uploader's thread.
        u.unknownCode(301);
        u.refreshRuntimeTables();
        assertEquals(List.of(now.get()), runtime.hints);
        assertEquals(first, heapMapping(target, 301).tableOrReason(), "nothing changed: the same table");

        // The runtime's code changed: the process registers again with the new table, the old one leaves the kernel.
        runtime.blobStart = HEAP + 0x800;
        runtime.frameBytes = 48;
        runtime.generation = 2;
        int cleared = target.cleared;
        u.refreshRuntimeTables();
        u.scanNow();
        int second = heapMapping(target, 301).tableOrReason();
        assertEquals(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 48, UnwindRule.RBP_SAVED, -16), target.lookup(second, HEAP + 0x850));
        assertEquals(cleared + 1, target.cleared, "the replaced table was cleared from the kernel");
        assertEquals(1, u.stats().processes());
    }

    @Test
    void aProcessWithMoreMappingsThanTheSearchCoversIsRefusedAndCounted() throws Exception {
        UnwindTableUploaderTest.RecordingTarget target = new UnwindTableUploaderTest.RecordingTarget(
                new UnwindTarget.Capacity(64, 4096, 1 << 16, 1 << 16, 1 << 14, 64, 256));
        AtomicLong now = new AtomicLong(1_000_000_000L);
        UnwindTableUploader u = new UnwindTableUploader(target, UnwindTableUploader.TableBuilder.ehFrame(),
                new ProcessRegistry(proc, 1024), 1_000_000_000L, now::get, pid -> true);
        fakeProcess(401, 500, UnwindTarget.MAX_MAPPINGS_PER_PROCESS); // and the heap: one more than covered
        fakeProcess(402, 500, UnwindTarget.MAX_MAPPINGS_PER_PROCESS - 1); // exactly covered
        for (int round = 0; round < 3; round++) {
            now.addAndGet(10_000_000_000L); // past the retry back-off
            u.observe(401, 500 * ProcessRegistry.NANOS_PER_TICK, true, false);
            u.observe(402, 500 * ProcessRegistry.NANOS_PER_TICK, true, false);
            u.scanNow();
        }
        assertFalse(u.registered(401));
        assertFalse(target.procs.containsKey(401), "walked with frame pointers, not with a search that misses mappings");
        assertTrue(u.registered(402));
        assertEquals(UnwindTarget.MAX_MAPPINGS_PER_PROCESS, target.procs.get(402)[2]);
        assertEquals(1, u.stats().refusedTooManyMappings(), "one process refused, however often it samples");
        assertEquals(0, u.stats().registrationFailures());
        assertEquals(4096, UnwindTarget.MAX_MAPPINGS_PER_PROCESS, "2^MAPPING_SEARCH_STEPS");
    }
}
