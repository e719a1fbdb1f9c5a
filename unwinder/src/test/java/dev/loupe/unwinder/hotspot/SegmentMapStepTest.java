package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.ehframe.ReferenceUnwinder;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.ehframe.UnwindTable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.OptionalLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The kernel's walk of code no scan has seen, as its spec steps it over a synthetic JVM's memory (JDK 17's and 25's
 * layouts): the layout words a read gives, the table rows that send a heap's other memory to the step, and the step
 * finding a blob from a pc inside it (through several segment map hops), or leaving a free block to frame pointers.
 */
class SegmentMapStepTest {
    private static final long STACK = 0x7ffd_0000_0000L;

    @ParameterizedTest
    @EnumSource(SyntheticJvm.Flavour.class)
    void aBlobIsFoundFromAnyPcInItAndSteppedByItsFrameSize(SyntheticJvm.Flavour f) throws Exception {
        FakeProcessMemory mem = SyntheticJvm.decode(SyntheticJvm.image(f));
        HotSpotJvm jvm = HotSpotJvm.read(1, mem, "/fake/libjvm.so", SyntheticJvm::symbol); // not closed: it closes mem
        CodeCache cache = jvm.codeCache();
        long[] rules = cache.segmentMapRules();
        assertNotNull(rules, "no layout words for " + f);
        assertEquals(SegmentMapStep.DATA_WORDS, rules.length);
        long[] words = new long[rules.length];
        for (int k = 0; k < rules.length; k++) {
            assertEquals(UnwindRule.KIND_HOTSPOT_DATA, UnwindRule.kind(rules[k]));
            words[k] = rules[k] >>> 8;
        }

        // The table: the layout words are its first rules; a blob's rows as before; the rest of a heap the step's.
        UnwindTable t = CodeCacheUnwindTable.build("[jit] pid 1", cache).table();
        for (int k = 0; k < rules.length; k++) {
            assertEquals(rules[k], t.ruleWords()[k], "rule " + k);
        }
        CodeBlob spinA = cache.blobs().get(3);
        assertEquals(CodeBlob.Kind.NMETHOD, spinA.kind());
        assertEquals(CodeCacheUnwindTable.framed(spinA.frameSizeBytes()), t.lookup(spinA.end() - 1));
        CodeCache.Range heap1 = cache.heaps().get(1);
        assertEquals(UnwindRule.KIND_HOTSPOT_CODE, t.lookup(heap1.high() - 1), "the heap's free end");
        assertEquals(UnwindRule.stop(StopReason.NO_UNWIND_INFO), t.lookup(heap1.high()), "past the heap");

        // The step from a pc at the blob's end (several segments into it), its frame complete: CFA = RSP + frame size.
        SegmentMapStep step = new SegmentMapStep(words);
        long sp = STACK + 0x100;
        long cfa = sp + spinA.frameSizeBytes();
        ReferenceUnwinder.Memory withStack = withStack(mem, cfa - 16, 0x7ffd_0000_0800L, 0x4242_4242L);
        ReferenceUnwinder.Step s = step.step(new ReferenceUnwinder.Frame(spinA.end() - 1, sp, 0, false, true), withStack);
        assertNull(s.stop(), "stopped: " + s.stop());
        assertEquals(new ReferenceUnwinder.Frame(0x4242_4242L, cfa, 0x7ffd_0000_0800L, true, false), s.caller());

        // A return address into the same blob looks one byte back: the same blob.
        ReferenceUnwinder.Step r = step.step(new ReferenceUnwinder.Frame(spinA.end(), sp, 0, false, false), withStack);
        assertEquals(cfa, r.caller().sp());

        // Memory of the heap no block holds (its segment map says unused): frame pointers, not a guess.
        assertEquals(StopReason.NO_UNWIND_INFO, step.step(new ReferenceUnwinder.Frame(heap1.high() - 1, sp, 0, false, true),
                withStack).stop());
        // The stack unreadable: frame pointers.
        assertEquals(StopReason.NO_UNWIND_INFO, step.step(new ReferenceUnwinder.Frame(spinA.end() - 1, sp, 0, false, true),
                mem(mem)).stop());
    }

    /** User space finds the same blob the same way, to name code made since its last read at once. */
    @ParameterizedTest
    @EnumSource(SyntheticJvm.Flavour.class)
    void userSpaceLooksUpOneBlobThroughTheSegmentMap(SyntheticJvm.Flavour f) throws Exception {
        FakeProcessMemory mem = SyntheticJvm.decode(SyntheticJvm.image(f));
        HotSpotJvm jvm = HotSpotJvm.read(1, mem, "/fake/libjvm.so", SyntheticJvm::symbol);
        CodeCache cache = jvm.codeCache();
        for (CodeBlob b : cache.blobs()) {
            for (long pc : new long[] {b.start(), (b.start() + b.end()) / 2, b.end() - 1}) {
                assertEquals(b, jvm.blobAt(pc).orElse(null), b.name() + " at 0x" + Long.toHexString(pc));
            }
        }
        CodeCache.Range heap1 = cache.heaps().get(1);
        assertEquals(java.util.Optional.empty(), jvm.blobAt(heap1.high() - 1)); // unused segments
        assertEquals(java.util.Optional.empty(), jvm.blobAt(heap1.high())); // in no heap
        CodeBlob outer = cache.blobs().get(2);
        long freeBefore = cache.blobs().get(1).end(); // the stub's block, then two free segments, then outer's
        assertEquals(java.util.Optional.empty(), jvm.blobAt(outer.address() - 64 - 1), "a free block");
        assertTrue(freeBefore < outer.start());
    }

    @ParameterizedTest
    @EnumSource(SyntheticJvm.Flavour.class)
    void aTornSegmentMapIsNotFollowed(SyntheticJvm.Flavour f) throws Exception {
        FakeProcessMemory mem = SyntheticJvm.decode(SyntheticJvm.image(f));
        CodeCache cache = HotSpotJvm.read(1, mem, "/fake/libjvm.so", SyntheticJvm::symbol).codeCache();
        long[] words = java.util.Arrays.stream(cache.segmentMapRules()).map(r -> r >>> 8).toArray();
        CodeBlob spinA = cache.blobs().get(3);
        // Every segment map entry reads as a hop of 1 past the start: the hops run out, or reach a non-block.
        long segmap = words[5] & ((1L << 47) - 1);
        long sp = STACK + 0x100;
        ReferenceUnwinder.Memory stack = withStack(mem, sp + spinA.frameSizeBytes() - 16, 1, 2);
        ReferenceUnwinder.Memory both = a -> a >= segmap && a < segmap + 4096 ? OptionalLong.of(1) : stack.read64(a);
        assertEquals(StopReason.NO_UNWIND_INFO, new SegmentMapStep(words)
                .step(new ReferenceUnwinder.Frame(spinA.end() - 1, sp, 0, false, true), both).stop());
    }

    private static ReferenceUnwinder.Memory mem(FakeProcessMemory mem) {
        return a -> {
            try {
                ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
                mem.read(a, b);
                return OptionalLong.of(b.getLong(0));
            } catch (Exception e) {
                return OptionalLong.empty();
            }
        };
    }

    /** The process's memory, and a stack holding {saved RBP, return address} at {@code at}. */
    private static ReferenceUnwinder.Memory withStack(FakeProcessMemory mem, long at, long savedBp, long ra) {
        ReferenceUnwinder.Memory m = mem(mem);
        return a -> a == at ? OptionalLong.of(savedBp) : a == at + 8 ? OptionalLong.of(ra) : m.read64(a);
    }
}
