package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.ehframe.ReferenceUnwinder;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.ehframe.UnwindTable;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The rules a code cache's table gives each kind of blob, and the interpreter step they lead to. */
class CodeCacheUnwindTableTest {
    static final long NO_INFO = UnwindRule.stop(StopReason.NO_UNWIND_INFO);

    static CodeBlob blob(CodeBlob.Kind kind, long start, long end, long complete, int frame) {
        return new CodeBlob(kind, start - 0x100, start, end, complete, frame, kind.name(), kind == CodeBlob.Kind.NMETHOD ? 0x9000 : 0);
    }

    @Test
    void eachBlobGetsTheRuleOfItsKind() throws Exception {
        CodeCache cache = new CodeCache(List.of(new CodeCache.Range(0x10000, 0x40000)), List.of(
                blob(CodeBlob.Kind.NMETHOD, 0x23000, 0x23400, 0x23020, 48), // listed out of order: sorted by start
                blob(CodeBlob.Kind.INTERPRETER, 0x21000, 0x23000, -1, 0),
                blob(CodeBlob.Kind.ADAPTER, 0x23400, 0x23500, -1, 0),
                blob(CodeBlob.Kind.RUNTIME_STUB, 0x23500, 0x23600, 0x23510, -1), // _frame_size -1: no frame size
                blob(CodeBlob.Kind.NMETHOD, 0x30000, 0x30100, -1, 32)));
        CodeCacheUnwindTable.Built built = CodeCacheUnwindTable.build("[jit] pid 1", cache);
        UnwindTable t = built.table();
        assertEquals(List.of(2, 1, 2), List.of(built.compiledBlobs(), built.interpreterBlobs(), built.undescribedBlobs()));
        long atEntry = UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 8, UnwindRule.RBP_UNCHANGED, 0);
        Map<Long, Long> expected = Map.of(
                0x21000L, (long) UnwindRule.KIND_JAVA_INTERP,
                0x22fffL, (long) UnwindRule.KIND_JAVA_INTERP,
                0x23000L, atEntry, // before the frame is complete: only the return address is pushed
                0x2301fL, atEntry,
                0x23020L, CodeCacheUnwindTable.framed(48),
                0x233ffL, CodeCacheUnwindTable.framed(48),
                0x23400L, NO_INFO, // an adapter: the walker's checked frame-pointer step
                0x23550L, NO_INFO,
                0x28000L, NO_INFO, // between blobs
                0x30080L, CodeCacheUnwindTable.framed(32)); // frame-complete point unknown: the frame rule throughout
        expected.forEach((pc, rule) -> assertEquals(UnwindRule.toString(rule), UnwindRule.toString(t.lookup(pc)),
                "at 0x" + Long.toHexString(pc)));
        assertEquals(NO_INFO, t.lookup(0x30100));
        assertEquals(UnwindRule.NOT_COVERED, t.lookup(0x1000));
        assertEquals("rsp+48 rbp=c-16", UnwindRule.toString(CodeCacheUnwindTable.framed(48)));
    }

    /** vtable and itable stubs push nothing before they jump on: the return address is at RSP throughout. */
    @Test
    void vtableStubsAreSteppedByTheReturnAddressAtRsp() throws Exception {
        CodeBlob vtables = new CodeBlob(CodeBlob.Kind.OTHER, 0x11000 - 0x100, 0x11000, 0x11800, -1, 0, "vtable chunks", 0);
        CodeBlob other = new CodeBlob(CodeBlob.Kind.BUFFER_BLOB, 0x12000 - 0x100, 0x12000, 0x12100, -1, 0, "StubRoutines (1)", 0);
        CodeCache cache = new CodeCache(List.of(new CodeCache.Range(0x10000, 0x20000)), List.of(vtables, other));
        UnwindTable t = CodeCacheUnwindTable.build("t", cache).table();
        long atEntry = UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 8, UnwindRule.RBP_UNCHANGED, 0);
        assertEquals(atEntry, t.lookup(0x11000));
        assertEquals(atEntry, t.lookup(0x117ff));
        assertEquals(NO_INFO, t.lookup(0x12010), "other stubs: the checked frame-pointer step");
    }

    /**
     * Stubs that begin with {@code enter()} (arraycopy, CRC...) inside a StubRoutines blob, which records no frame size:
     * the return address at RSP on their first byte, above the pushed RBP on the next, then RBP's frame; the blob's other
     * code (a stub that keeps no frame, the gaps) keeps no unwind info.
     */
    @Test
    void stubsThatBeginWithEnterAreSteppedByRbp() throws Exception {
        CodeBlob routines = new CodeBlob(CodeBlob.Kind.BUFFER_BLOB, 0x12000 - 0x100, 0x12000, 0x12400, -1, 0, "StubRoutines (2)", 0);
        CodeCache cache = new CodeCache(List.of(new CodeCache.Range(0x10000, 0x20000)), List.of(routines));
        List<HotSpotJvm.Stub> framed = List.of(
                new HotSpotJvm.Stub("StubRoutines::jbyte_arraycopy", 0x12000, 0x12100), // at the blob's start
                new HotSpotJvm.Stub("StubRoutines::jint_arraycopy", 0x12100, 0x12180), // right after it
                new HotSpotJvm.Stub("StubRoutines::updateBytesCRC32", 0x12200, 0x12300)); // after a frameless stub
        CodeCacheUnwindTable.Built built = CodeCacheUnwindTable.build("t", cache, framed);
        assertEquals(3, built.framedStubs());
        assertEquals(List.of(1, 0, 0), List.of(built.compiledBlobs(), built.interpreterBlobs(), built.undescribedBlobs()));
        UnwindTable t = built.table();
        String entry = "rsp+8", pushed = "rsp+16 rbp=c-16", framedRule = "rbp+16 rbp=c-16";
        Map<Long, String> expected = new java.util.TreeMap<>(Map.ofEntries(
                Map.entry(0x12000L, entry), Map.entry(0x12001L, pushed), Map.entry(0x12003L, pushed),
                Map.entry(0x12004L, framedRule), Map.entry(0x120ffL, framedRule),
                Map.entry(0x12100L, entry), Map.entry(0x12101L, pushed), Map.entry(0x12104L, framedRule),
                Map.entry(0x1217fL, framedRule),
                Map.entry(0x12180L, UnwindRule.toString(NO_INFO)), Map.entry(0x121ffL, UnwindRule.toString(NO_INFO)),
                Map.entry(0x12200L, entry), Map.entry(0x12204L, framedRule), Map.entry(0x122ffL, framedRule),
                Map.entry(0x12300L, UnwindRule.toString(NO_INFO)), Map.entry(0x123ffL, UnwindRule.toString(NO_INFO))));
        expected.forEach((pc, rule) -> assertEquals(rule, UnwindRule.toString(t.lookup(pc)), "at 0x" + Long.toHexString(pc)));
        assertEquals("rsp+8", UnwindRule.toString(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 8, UnwindRule.RBP_UNCHANGED, 0)));
    }

    /**
     * A stub that moves a register before its {@code enter()} (JDK 21's and 25's fill stubs: {@code mov r11, rdx}) and one that
     * begins with a jump its own code takes (the generic arraycopy): the return address at RSP from the entry up to the
     * push, then as above; the jump's bytes keep no unwind info.
     */
    @Test
    void stubsThatReachEnterAfterAMoveOrPastAJumpAreSteppedByRbp() throws Exception {
        CodeBlob routines = new CodeBlob(CodeBlob.Kind.BUFFER_BLOB, 0x12000 - 0x100, 0x12000, 0x12400, -1, 0, "StubRoutines (2)", 0);
        CodeCache cache = new CodeCache(List.of(new CodeCache.Range(0x10000, 0x20000)), List.of(routines));
        List<HotSpotJvm.Stub> framed = List.of(
                new HotSpotJvm.Stub("StubRoutines::jint_fill", 0x12000, 0x12100, 0, 3),
                new HotSpotJvm.Stub("StubRoutines::generic_arraycopy", 0x12100, 0x12180, 5, 5));
        CodeCacheUnwindTable.Built built = CodeCacheUnwindTable.build("t", cache, framed);
        assertEquals(2, built.framedStubs());
        UnwindTable t = built.table();
        String entry = "rsp+8", pushed = "rsp+16 rbp=c-16", framedRule = "rbp+16 rbp=c-16", none = UnwindRule.toString(NO_INFO);
        Map<Long, String> expected = new java.util.TreeMap<>(Map.ofEntries(
                Map.entry(0x12000L, entry), Map.entry(0x12003L, entry), Map.entry(0x12004L, pushed), Map.entry(0x12006L, pushed),
                Map.entry(0x12007L, framedRule), Map.entry(0x120ffL, framedRule),
                Map.entry(0x12100L, none), Map.entry(0x12104L, none), Map.entry(0x12105L, entry), Map.entry(0x12106L, pushed),
                Map.entry(0x12109L, framedRule), Map.entry(0x1217fL, framedRule), Map.entry(0x12180L, none)));
        expected.forEach((pc, rule) -> assertEquals(rule, UnwindRule.toString(t.lookup(pc)), "at 0x" + Long.toHexString(pc)));
    }

    /** What {@link HotSpotJvm#enterAt} accepts before an {@code enter()}: register moves off RSP and RBP, one leading jump. */
    @Test
    void enterIsFoundAfterRegisterMovesAndALeadingJump() {
        assertEquals(List.of(0, 0), enterAt("55 48 8b ec 48 83 ec 18"));
        assertEquals(List.of(0, 0), enterAt("55 48 89 e5 90"));
        assertEquals(List.of(0, 3), enterAt("4c 8b da 55 48 8b ec 49 81 fb")); // JDK 25's jint_fill: mov r11, rdx
        assertEquals(List.of(0, 6), enterAt("4c 8b da 49 89 c2 55 48 8b ec 90")); // two moves
        assertEquals(List.of(5, 5), enterAt("e9 86 02 00 00 55 48 8b ec 48 85 ff")); // generic_arraycopy
        assertEquals(null, enterAt("48 8b ec 55 48 8b ec 90")); // mov rbp, rsp first
        assertEquals(null, enterAt("48 8b c4 55 48 8b ec 90")); // mov rax, rsp first
        assertEquals(null, enterAt("4c 8b 1a 55 48 8b ec 90")); // a load, not a register move
        assertEquals(null, enterAt("50 51 52 56 57 41 50 41")); // f2l_fixup: pushes
        assertEquals(null, enterAt("ff ff ff ff ff ff ff ff")); // a data table
        assertEquals(null, enterAt("55 48 8b")); // too short
    }

    private static List<Integer> enterAt(String hex) {
        String[] b = hex.split(" ");
        java.nio.ByteBuffer code = java.nio.ByteBuffer.allocate(b.length);
        for (String x : b) {
            code.put((byte) Integer.parseInt(x, 16));
        }
        int[] at = HotSpotJvm.enterAt(code.flip());
        return at == null ? null : List.of(at[0], at[1]);
    }

    @Test
    void overlappingAndEmptyBlobsAreLeftUndescribed() throws Exception {
        CodeCache cache = new CodeCache(List.of(new CodeCache.Range(0x10000, 0x20000)), List.of(
                blob(CodeBlob.Kind.NMETHOD, 0x11000, 0x11100, -1, 32),
                blob(CodeBlob.Kind.NMETHOD, 0x11080, 0x11200, -1, 64), // starts inside the one before (a stale read)
                blob(CodeBlob.Kind.NMETHOD, 0x12000, 0x12000, -1, 16)));
        CodeCacheUnwindTable.Built built = CodeCacheUnwindTable.build("t", cache);
        assertEquals(List.of(1, 0, 2), List.of(built.compiledBlobs(), built.interpreterBlobs(), built.undescribedBlobs()));
        assertEquals(CodeCacheUnwindTable.framed(32), built.table().lookup(0x110f0));
        assertEquals(NO_INFO, built.table().lookup(0x11100));
    }

    /** An interpreter frame: return address at bp+8, caller's bp at bp, caller's sp the saved sender SP. */
    @Test
    void theInterpreterStepTakesTheSavedSenderSp() {
        Map<Long, Long> stack = Map.of(0x7000L - 24, 0x5555L, 0x7000L - 8, 0x7100L, 0x7000L, 0x7200L, 0x7008L, 0x4444L);
        ReferenceUnwinder.Memory mem = a -> stack.containsKey(a) ? OptionalLong.of(stack.get(a)) : OptionalLong.empty();
        ReferenceUnwinder.Frame f = new ReferenceUnwinder.Frame(0x21500, 0x6f00, 0x7000, true, true);
        ReferenceUnwinder.Step s = InterpreterFrameStep.INSTANCE.step(f, mem);
        assertNull(s.stop());
        assertEquals(new ReferenceUnwinder.Frame(0x4444, 0x7100, 0x7200, true, false), s.caller());
        assertEquals(OptionalLong.of(0x5555), InterpreterFrameStep.method(0x7000, mem));

        // A sender SP below bp+16 is no caller's SP (a call stub's own frame): bp+16 instead.
        Map<Long, Long> low = Map.of(0x7000L - 8, 0x6000L, 0x7000L, 0x7200L, 0x7008L, 0x4444L);
        ReferenceUnwinder.Step t = InterpreterFrameStep.INSTANCE.step(f,
                a -> low.containsKey(a) ? OptionalLong.of(low.get(a)) : OptionalLong.empty());
        assertEquals(0x7010, t.caller().sp());
        ReferenceUnwinder.Frame unknownBp = new ReferenceUnwinder.Frame(0x21500, 0x6f00, 0, false, true);
        assertEquals(StopReason.RBP_UNKNOWN, InterpreterFrameStep.INSTANCE.step(unknownBp, mem).stop());
    }

    @Test
    void interpreterFramesAreTaggedWithTheirTypeAndTheWalkDispatchesTheirKind() {
        long frame = FrameType.HOTSPOT_METHOD.frame(0x7f12_3456_7890L);
        assertEquals(0x4000_7f12_3456_7890L, frame); // bit 62, as JDK 8-25 profiles have had them
        assertEquals(FrameType.HOTSPOT_METHOD, FrameType.of(frame));
        assertEquals(0x7f12_3456_7890L, FrameType.HOTSPOT_METHOD.value(frame));
        assertNull(FrameType.of(0x7f12_3456_7890L)); // a plain address
        assertNull(FrameType.of(-1L << 16 | 33)); // a stop marker
        assertNull(FrameType.of(0xffff_ffff_8100_0000L)); // a kernel address
        assertNull(FrameType.of(1L << 61 | 0x1000)); // a type no runtime registered
        assertEquals(InterpreterFrameStep.INSTANCE, InterpreterFrameStep.steps().forKind(UnwindRule.KIND_JAVA_INTERP));
        assertNull(InterpreterFrameStep.steps().forKind(UnwindRule.KIND_JAVA_INTERP + 1));
    }

    @Test
    void anInterpreterFrameCarriesItsMethodAndTheBciOfItsBcp() {
        long method = 0x7f12_3456_7890L;
        long value = InterpreterFrameStep.value(method, 37);
        assertEquals(method, InterpreterFrameStep.methodOf(value));
        assertEquals(37, InterpreterFrameStep.bciOf(value));
        assertEquals(-1, InterpreterFrameStep.bciOf(InterpreterFrameStep.value(method, 4095)), "too large: unknown");
        assertEquals(-1, InterpreterFrameStep.bciOf(InterpreterFrameStep.value(method, -1)));
        assertTrue(FrameType.HOTSPOT_METHOD.frame(value) >>> FrameType.SHIFT == 0x40, "the value fits below the type");

        // Method at 0x5000 -> ConstMethod* at +8 = 0x6000; sizeof(ConstMethod) 56, _code_size (u2) at +40 = 100 bytes
        long rule = InterpreterFrameStep.rule(InterpreterFrameStep.BCP_SLOT, 8, 56, 40);
        long bp = 0x9000;
        java.util.Map<Long, Long> words = java.util.Map.of(0x5008L, 0x6000L, 0x6028L, 100L, bp - 64, 0x6000L + 56 + 42);
        ReferenceUnwinder.Memory m = a -> words.containsKey(a) ? java.util.OptionalLong.of(words.get(a)) : java.util.OptionalLong.empty();
        assertEquals(42, InterpreterFrameStep.bci(rule, bp, 0x5000, false, 0, m), "from the frame's bcp slot");
        assertEquals(7, InterpreterFrameStep.bci(rule, bp, 0x5000, true, 0x6000L + 56 + 7, m), "the leaf's bcp is in R13");
        assertEquals(InterpreterFrameStep.BCI_UNKNOWN, InterpreterFrameStep.bci(rule, bp, 0x5000, true, 0x6000L + 56 + 100, m),
                "past the method's bytecodes");
        assertEquals(InterpreterFrameStep.BCI_UNKNOWN, InterpreterFrameStep.bci(rule, bp, 0x5000, true, 0x1000, m), "below them");
        assertEquals(InterpreterFrameStep.BCI_UNKNOWN, InterpreterFrameStep.bci(UnwindRule.KIND_JAVA_INTERP, bp, 0x5000, false, 0, m),
                "a rule without offsets");
        assertEquals(UnwindRule.KIND_JAVA_INTERP, InterpreterFrameStep.rule(8, 300, 56, 40), "an offset past a byte: no bci");
    }
}
