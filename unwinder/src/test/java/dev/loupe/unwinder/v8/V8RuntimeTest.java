package dev.loupe.unwinder.v8;

import dev.loupe.unwinder.ehframe.ReferenceUnwinder;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.ehframe.UnwindTableBuilder;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.runtime.FrameType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The V8 runtime's tables and step spec over fakes, and a node binary without metadata kept native. */
class V8RuntimeTest {
    @TempDir
    Path dir;

    static final long WORD = V8FrameStep.dataWord(Node20Layout.layout());

    @Test
    void theLayoutWordHoldsTheSlotsAndTheSharedOffset() {
        assertEquals(UnwindRule.KIND_V8_DATA | 8L << 8 | 16L << 16 | 40L << 24 | 24L << 32, WORD);
    }

    @Test
    void theJitTableCoversEachRangeWithTheWordAsRuleZero() throws Exception {
        long a = 0x7f0000200000L;
        UnwindTable t = V8Tables.jit("[js] test", List.of(new long[] {a, a + 0x3000}, new long[] {a + 0x3000, a + 0x8000},
                new long[] {a + 0x20000, a + 0x21000}), WORD);
        assertEquals(WORD, t.ruleWords()[0]);
        assertEquals(V8Tables.JIT_RULE, t.lookup(a));
        assertEquals(V8Tables.JIT_RULE, t.lookup(a + 0x3000), "adjacent ranges: one");
        assertEquals(V8Tables.JIT_RULE, t.lookup(a + 0x7fff));
        assertEquals(StopReason.NO_UNWIND_INFO, UnwindRule.stopReason(t.lookup(a + 0x8000)));
        assertEquals(V8Tables.JIT_RULE, t.lookup(a + 0x20800));
        assertEquals(StopReason.NO_UNWIND_INFO, UnwindRule.stopReason(t.lookup(a + 0x21000)));
    }

    @Test
    void theBinaryTableReplacesTheBuiltinsRowsOnly() throws Exception {
        long rsp8 = UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 8, UnwindRule.RBP_UNCHANGED, 0);
        long rsp16 = UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 16, UnwindRule.RBP_UNCHANGED, 0);
        long stop = UnwindRule.stop(StopReason.NO_UNWIND_INFO);
        UnwindTable own = UnwindTableBuilder.fromRows("own", new long[] {0x401000, 0x401100, 0x402000, 0x402040, 0x403000},
                new long[] {rsp8, rsp16, stop, rsp8, stop}, 5);
        UnwindTable t = V8Tables.binary("[js] node", own, 0x402000, 0x402040, WORD);
        assertEquals(WORD, t.ruleWords()[0]);
        assertEquals(rsp16, t.lookup(0x401100));
        assertEquals(V8Tables.BUILTINS_RULE, t.lookup(0x402000));
        assertEquals(V8Tables.BUILTINS_RULE, t.lookup(0x40203f));
        assertEquals(rsp8, t.lookup(0x402040));
        assertEquals(stop, t.lookup(0x403000));
    }

    /** A JavaScript frame at rbp, its JSFunction and SharedFunctionInfo; a typed frame (Smi marker) above it. */
    @Test
    void theStepReportsJavaScriptFramesAndKeepsTypedOnes() {
        long bp = 0x7ffd0000f000L;
        long function = 0x100000201L;
        long shared = 0x100000401L;
        Map<Long, Long> m = new HashMap<>();
        m.put(bp, bp + 0x100);              // caller's rbp
        m.put(bp + 8, 0x401234L);           // return address
        m.put(bp - 8, 0x100000301L);        // context: a heap object
        m.put(bp - 16, function);
        m.put(bp - 40, 74L << 32);          // bytecode offset 74, a Smi
        m.put(bp - 48, 0L);
        m.put(function - 1 + 24, shared);
        ReferenceUnwinder.Memory mem = a -> m.containsKey(a) ? OptionalLong.of(m.get(a)) : OptionalLong.empty();
        ReferenceUnwinder.Frame f = new ReferenceUnwinder.Frame(0x18d0000L, bp - 0x40, bp, true, false);

        OptionalLong inBuiltins = V8FrameStep.frame(f, mem, WORD, true);
        assertEquals(FrameType.V8, FrameType.of(inBuiltins.getAsLong()));
        long value = FrameType.V8.value(inBuiltins.getAsLong());
        assertEquals(shared - 1, V8FrameStep.sharedAddress(value));
        assertEquals(74, V8FrameStep.rawOffset(value));
        assertEquals(-1, V8FrameStep.rawOffset(FrameType.V8.value(V8FrameStep.frame(f, mem, WORD, false).getAsLong())),
                "JIT code: no bytecode offset");
        ReferenceUnwinder.Step s = V8FrameStep.step(f, mem);
        assertEquals(new ReferenceUnwinder.Frame(0x401234L, bp + 16, bp + 0x100, true, false), s.caller());

        m.put(bp - 8, 2L << 1);             // a typed frame's Smi marker
        assertTrue(V8FrameStep.frame(f, mem, WORD, true).isEmpty(), "its pc stays");
        m.put(bp - 8, 0x100000301L);
        m.put(bp - 16, 0x100000200L);       // not a heap object
        assertEquals(V8FrameStep.Error.BAD_FUNCTION,
                V8FrameStep.error(FrameType.V8.value(V8FrameStep.frame(f, mem, WORD, true).getAsLong())));
        m.put(bp, bp - 8);                  // a caller's rbp below this one
        assertEquals(StopReason.NO_PROGRESS, V8FrameStep.step(f, mem).stop());
    }

    @Test
    void aNodeWithoutMetadataIsDetectedButNotOpened() throws Exception {
        Path fake = Files.copy(Path.of("/bin/sleep"), dir.resolve("node"));
        assertTrue(fake.toFile().setExecutable(true));
        Process p = new ProcessBuilder(fake.toString(), "30").start();
        try {
            V8Runtime runtime = V8Runtime.reading(Path.of("/proc"), System::nanoTime);
            var exec = ProcMaps.read(Path.of("/proc"), (int) p.pid()).stream().filter(m -> m.executable()).toList();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!runtime.detect(exec) && System.nanoTime() < deadline) { // until the exec is done
                exec = ProcMaps.read(Path.of("/proc"), (int) p.pid()).stream().filter(m -> m.executable()).toList();
            }
            assertTrue(runtime.detect(exec));
            assertTrue(runtime.open((int) p.pid(), "node", exec).isEmpty());
            assertTrue(runtime.open((int) p.pid(), "node", exec).isEmpty(), "asked again");
            assertEquals(1L, runtime.counters().get("unknown_layouts"), "found unreadable once, said once");
            assertEquals(0L, runtime.counters().get("opened"));
        } finally {
            p.destroyForcibly();
        }
        assertFalse(V8Runtime.isNode("/usr/bin/nodejs-helper"));
        assertTrue(V8Runtime.isNode("/usr/lib/x86_64-linux-gnu/libnode.so.108"));
        assertTrue(V8Runtime.isNode("/usr/bin/node"));
        assertTrue(V8Runtime.isNode("/opt/node22/bin/node22"));
        assertFalse(V8Runtime.isNode("/usr/bin/node2x"));
        assertFalse(V8Runtime.isNode("/usr/bin/nodejs"));
    }

    @Test
    void errorFramesSayWhy() {
        assertNull(V8FrameStep.error(V8FrameStep.value(0x100000400L, 3)));
        assertEquals(V8FrameStep.Error.READ, V8FrameStep.error(V8FrameStep.value(0, 2)));
    }
}
