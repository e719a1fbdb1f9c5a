package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.runtime.CodeTable;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.RescanSchedule;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import dev.loupe.unwinder.runtime.RuntimeProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * HotSpot behind the runtime seam, on a real JDK 25 JVM: detected by its libjvm.so mapping, opened once, one read of
 * the code cache serving both the names (checked against HotSpotJvm's own reading) and the walker's table.
 */
class HotSpotProcessTest {
    @TempDir
    Path dir;

    @Test
    void oneReaderNamesCompiledAndInterpretedFramesAndGivesTheTable() throws Exception {
        try (TargetJvm target = TargetJvm.start(TargetJvm.JDK25, dir, 300_000);
             HotSpotJvm reference = HotSpotJvm.open(HotSpotJvmTest.PROC, target.pid()).orElseThrow()) {
            List<MapEntry> maps = ProcMaps.read(HotSpotJvmTest.PROC, target.pid());
            AtomicLong now = new AtomicLong(1_000_000_000L);
            HotSpotRuntime runtime = HotSpotRuntime.reading(HotSpotJvmTest.PROC, now::get);
            assertTrue(runtime.detect(maps.stream().filter(MapEntry::executable).toList()));
            assertFalse(runtime.detect(maps.stream().filter(m -> !m.path().endsWith("/libjvm.so")).toList()));
            assertEquals(java.util.Set.of(FrameType.HOTSPOT_METHOD), runtime.frameTypes());

            try (RuntimeProcess p = runtime.open(target.pid(), "java").orElseThrow()) {
                CodeTable table = p.codeTable(now.get());
                assertNotNull(table, "a table for the code cache");
                assertEquals(1, table.generation());
                assertEquals(1, runtime.counters().get("tables_built"));
                assertFalse(p.refreshCode(now.get()), "nothing is due a moment after the first read");

                CodeBlob spinA = null;
                for (CodeBlob b : reference.codeCache().blobs()) {
                    if (b.kind() == CodeBlob.Kind.NMETHOD && reference.methodName(b.method()).orElse("").equals("HotSpotTarget.spinA")) {
                        spinA = b;
                    }
                }
                assertNotNull(spinA, "no compiled spinA");
                assertTrue(table.covers(spinA.start(), spinA.end()), "spinA's code is in the table's ranges");

                RuntimeFrame compiled = p.code(spinA.start(), false, now.get());
                assertNotNull(compiled);
                assertEquals("HotSpotTarget.spinA", compiled.function());
                assertEquals(List.of(), compiled.inlined(), "spinA calls nothing, so nothing is inlined");
                assertEquals("[jit] java", compiled.mapping());
                assertSame(compiled, p.code(spinA.start(), false, now.get()), "a known pc is named from the cache");

                RuntimeFrame interpreted = p.taggedFrame(FrameType.HOTSPOT_METHOD, InterpreterFrameStep.value(spinA.method(), -1));
                assertEquals("HotSpotTarget.spinA", interpreted.function());
                assertEquals("[interpreted] java", interpreted.mapping());
                assertNull(p.taggedFrame(FrameType.HOTSPOT_METHOD, 0x10).function(), "a pointer to nothing names nothing");

                // A generated stub is named by its StubCodeDesc, not by the StubRoutines blob that holds many of them
                HotSpotJvm.Stub copy = reference.stubs().stream().filter(st -> st.name().equals("StubRoutines::jlong_disjoint_arraycopy"))
                        .findFirst().orElseThrow(() -> new AssertionError("no jlong_disjoint_arraycopy stub"));
                assertEquals("[StubRoutines::jlong_disjoint_arraycopy]", p.code(copy.begin(), false, now.get()).function());
                assertEquals("[StubRoutines::jlong_disjoint_arraycopy]", p.code(copy.end() - 1, false, now.get()).function());

                // The interpreter's code, where no interpreted frame names it by its method, is named by its codelet
                List<HotSpotJvm.Codelet> codelets = reference.codelets();
                HotSpotJvm.Codelet invoke = codelets.stream().filter(c -> c.description().equals("invokevirtual"))
                        .findFirst().orElseThrow(() -> new AssertionError("no invokevirtual codelet: " + codelets));
                assertEquals("[Interpreter: invokevirtual]", p.code(invoke.end() - 1, false, now.get()).function());
                assertEquals("[jit] java", p.code(invoke.end() - 1, false, now.get()).mapping());

                assertNull(p.code(0x10, false, now.get()), "an address no blob holds");
                // Past the longest wait, a miss reads the whole code cache again (a full read: counted).
                long scans = runtime.counters().get("scans");
                now.addAndGet(RescanSchedule.MAX_RESCAN_NANOS);
                assertNull(p.code(0x10, false, now.get()));
                assertEquals(scans + 1, runtime.counters().get("scans"));
                assertFalse(p.refreshCode(now.get()), "the same blobs: no new table");
                assertSame(table, p.codeTable(now.get()));
            }
        }
    }
}
