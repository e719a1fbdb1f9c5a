package dev.loupe.unwinder.ehframe;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The packed layout against a naive sorted map, and the reference step rule by rule on synthetic stacks. */
class UnwindTableTest {
    static final BuildStats NO_STATS = new BuildStats(List.of(), 0, 0, 0, 0, 0, 0, 0, 0, 0, Map.of(), List.of());
    static final long NO_INFO = UnwindRule.stop(StopReason.NO_UNWIND_INFO);

    static UnwindTable table(TreeMap<Long, Long> rows) throws EhFrameException {
        UnwindTableBuilder.Rows r = new UnwindTableBuilder.Rows();
        rows.forEach(r::add);
        UnwindTable t = UnwindTableBuilder.pack("synthetic", r, NO_STATS);
        t.verify();
        return t;
    }

    @Test
    void lookupEqualsFloorOfSortedRowsAcrossPagesAndGaps() throws Exception {
        Random rnd = new Random(42);
        for (int round = 0; round < 30; round++) {
            TreeMap<Long, Long> rows = new TreeMap<>();
            long pc = 0x400000L + rnd.nextInt(1 << 20);
            int n = 1 + rnd.nextInt(3000);
            for (int i = 0; i < n; i++) {
                pc += 1 + (rnd.nextInt(10) == 0 ? rnd.nextInt(300_000) : rnd.nextInt(64)); // sometimes skip pages
                long rule = rnd.nextInt(5) == 0 ? NO_INFO : UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 8 * (1 + rnd.nextInt(40)),
                        rnd.nextInt(3), -8 * rnd.nextInt(8));
                rows.put(pc, rule);
            }
            rows.put(pc + 1 + rnd.nextInt(100), NO_INFO); // tables end with a gap
            UnwindTable t = table(rows);
            long first = rows.firstKey();
            long last = rows.lastKey();
            for (int i = 0; i < 20_000; i++) {
                long q = first - 70_000 + (long) (rnd.nextDouble() * (last - first + 140_000));
                Map.Entry<Long, Long> e = rows.floorEntry(q);
                long got = t.lookup(q);
                if (q < t.pcBase() || q >= t.pcEnd()) {
                    assertEquals(UnwindRule.NOT_COVERED, got);
                } else {
                    assertEquals(e == null ? NO_INFO : e.getValue(), got, "round " + round + " pc " + Long.toHexString(q));
                }
            }
        }
    }

    @Test
    void bytesAreTheDocumentedLittleEndianWords() throws Exception {
        TreeMap<Long, Long> rows = new TreeMap<>(Map.of(
                0x12345L, UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 8, 0, 0),
                0x12346L, UnwindRule.cfa(UnwindRule.KIND_CFA_RBP, 16, UnwindRule.RBP_SAVED, -16),
                0x30000L, NO_INFO));
        UnwindTable t = table(rows);
        assertEquals(0x10000, t.pcBase());
        assertEquals(3, t.pageCount()); // 0x10000, 0x20000 (carried over), 0x30000
        ByteBuffer h = ByteBuffer.wrap(t.headerBytes()).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(0x10000, h.getLong(0));
        assertEquals(3, h.getInt(8));
        // page 0: carry row at 0 (no info), 0x2345, 0x2346; page 1: carry; page 2: row at 0
        assertArrayEquals(new int[] {0, 3, 3, 1, 4, 1}, t.pageWords());
        int[] rw = t.rowWords();
        assertEquals(5, rw.length);
        assertEquals(0x2345, rw[1] & 0xffff);
        long[] rules = t.ruleWords();
        assertEquals(rules[rw[2] >>> 16], UnwindRule.cfa(UnwindRule.KIND_CFA_RBP, 16, UnwindRule.RBP_SAVED, -16));
        ByteBuffer rb = ByteBuffer.wrap(t.ruleBytes()).order(ByteOrder.LITTLE_ENDIAN);
        int idx = rw[2] >>> 16;
        assertEquals(UnwindRule.KIND_CFA_RBP, rb.get(idx * 8));
        assertEquals(UnwindRule.RBP_SAVED, rb.get(idx * 8 + 1));
        assertEquals(-16, rb.getShort(idx * 8 + 2));
        assertEquals(16, rb.getInt(idx * 8 + 4));
        assertEquals(16 + 6 * 4 + 5 * 4 + rules.length * 8, t.byteSize());
        assertEquals(t.byteSize(), t.headerBytes().length + t.pageBytes().length + t.rowBytes().length + t.ruleBytes().length);
    }

    // ---- the step, rule by rule ----

    static final long TEXT = 0x1000;

    /** Memory as a map of 8-byte words. */
    static ReferenceUnwinder.Memory memory(Map<Long, Long> words) {
        return a -> words.containsKey(a) ? OptionalLong.of(words.get(a)) : OptionalLong.empty();
    }

    static ReferenceUnwinder.Step step(long rule, ReferenceUnwinder.Frame f, Map<Long, Long> words) throws Exception {
        TreeMap<Long, Long> rows = new TreeMap<>(Map.of(TEXT, rule, TEXT + 0x100, NO_INFO));
        return ReferenceUnwinder.step(table(rows), 0, f, memory(words));
    }

    @Test
    void stepEachRuleKind() throws Exception {
        long sp = 0x7000_0000L;
        Map<Long, Long> m = new HashMap<>();
        m.put(sp + 24 - 8, 0x5555L); // return address at CFA-8 for CFA = sp+24
        m.put(sp + 24 - 16, 0xbbbbL); // saved rbp at CFA-16
        ReferenceUnwinder.Frame leaf = ReferenceUnwinder.Frame.leaf(TEXT + 0x10, sp, 0x1234);

        ReferenceUnwinder.Step s = step(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 24, UnwindRule.RBP_SAVED, -16), leaf, m);
        assertEquals(new ReferenceUnwinder.Frame(0x5555, sp + 24, 0xbbbb, true, false), s.caller());

        s = step(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 24, UnwindRule.RBP_UNCHANGED, 0), leaf, m);
        assertEquals(new ReferenceUnwinder.Frame(0x5555, sp + 24, 0x1234, true, false), s.caller());

        s = step(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 24, UnwindRule.RBP_UNKNOWN, 0), leaf, m);
        assertEquals(new ReferenceUnwinder.Frame(0x5555, sp + 24, 0, false, false), s.caller());
        // ... and a CFA_RBP frame above it cannot be unwound
        assertEquals(StopReason.RBP_UNKNOWN, step(UnwindRule.cfa(UnwindRule.KIND_CFA_RBP, 16, 0, 0),
                new ReferenceUnwinder.Frame(TEXT + 0x11, sp, 0, false, false), m).stop());

        ReferenceUnwinder.Frame fp = ReferenceUnwinder.Frame.leaf(TEXT + 0x10, sp - 100, sp + 8); // CFA = rbp + 16
        s = step(UnwindRule.cfa(UnwindRule.KIND_CFA_RBP, 16, UnwindRule.RBP_SAVED, -16), fp, m);
        assertEquals(new ReferenceUnwinder.Frame(0x5555, sp + 24, 0xbbbb, true, false), s.caller());

        // PLT: before the entry's push (pc & 15 < 11) CFA = sp+8, after it sp+16
        Map<Long, Long> plt = Map.of(sp, 0x6666L, sp + 8, 0x7777L);
        long pltRule = UnwindRule.cfa(UnwindRule.KIND_PLT, 11, 0, 0);
        assertEquals(0x6666L, step(pltRule, ReferenceUnwinder.Frame.leaf(TEXT + 0x36, sp, 0), plt).caller().pc());
        assertEquals(0x7777L, step(pltRule, ReferenceUnwinder.Frame.leaf(TEXT + 0x3b, sp, 0), plt).caller().pc());
        assertEquals(0x7777L, step(UnwindRule.cfa(UnwindRule.KIND_PLT, 9, 0, 0), ReferenceUnwinder.Frame.leaf(TEXT + 0x39, sp, 0), plt)
                .caller().pc());

        // SIGNAL: registers from the ucontext at sp; the interrupted pc is exact
        Map<Long, Long> sig = Map.of(sp + 168, 0x4242L, sp + 160, sp + 4096, sp + 120, 0x9999L);
        s = step(UnwindRule.cfa(UnwindRule.KIND_SIGNAL, 0, 0, 0), new ReferenceUnwinder.Frame(TEXT + 0x11, sp, 0, false, false), sig);
        assertEquals(new ReferenceUnwinder.Frame(0x4242, sp + 4096, 0x9999, true, true), s.caller());

        // stops
        assertEquals(StopReason.END_OF_STACK, step(UnwindRule.stop(StopReason.END_OF_STACK), leaf, m).stop());
        assertEquals(StopReason.MEMORY_READ_FAILED, step(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 48, 0, 0), leaf, m).stop());
        assertEquals(StopReason.NO_PROGRESS, step(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 0, 0, 0), leaf, m).stop());
        assertEquals(StopReason.ZERO_RETURN_ADDRESS, step(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 24, 0, 0), leaf,
                Map.of(sp + 16, 0L)).stop());
        assertEquals(StopReason.NO_TABLE, step(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 24, 0, 0),
                ReferenceUnwinder.Frame.leaf(0x20000, sp, 0), m).stop());
        assertEquals(StopReason.NO_UNWIND_INFO, step(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 24, 0, 0),
                ReferenceUnwinder.Frame.leaf(0x10, sp, 0), m).stop());
        assertNull(step(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 24, 0, 0), leaf, m).stop());
    }

    /** The 8 bytes before a return address that follows {@code call rel32} to {@code target}. */
    static long directCall(long ret, long target) {
        return ((target - ret) & 0xffff_ffffL) << 32 | 0xe8L << 24 | 0x90_90_90L;
    }

    @Test
    void codeWithoutUnwindInfoTakesACheckedFramePointerStep() throws Exception {
        // a [0x1000, 0x1100) has an FDE, asm [0x1100, 0x1200) none, c [0x1200, 0x1300) an FDE; then a gap
        TreeMap<Long, Long> rows = new TreeMap<>(Map.of(
                0x1000L, UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 16, 0, 0),
                0x1100L, NO_INFO,
                0x1200L, UnwindRule.cfa(UnwindRule.KIND_CFA_RBP, 16, UnwindRule.RBP_SAVED, -16),
                0x1300L, NO_INFO));
        UnwindTable t = table(rows);
        ReferenceUnwinder.Mapped mapped = new ReferenceUnwinder.Mapped(t, 0);
        ReferenceUnwinder.Tables tables = pc -> pc >= 0x1000 && pc < 0x2000 ? mapped : null;
        long sp = 0x7000_0000L;
        long ret = 0x1050; // in a, after its call of asm
        Map<Long, Long> m = new HashMap<>(Map.of(sp, sp + 0x40, sp + 8, ret, ret - 8, directCall(ret, 0x1100)));
        // asm's frame: push %rbp; mov %rsp,%rbp; call c: at c's return address, bp == sp
        ReferenceUnwinder.Frame inAsm = new ReferenceUnwinder.Frame(0x1110, sp, sp, true, false);
        ReferenceUnwinder.Frame caller = new ReferenceUnwinder.Frame(ret, sp + 16, sp + 0x40, true, false);
        assertEquals(StopReason.NO_UNWIND_INFO, ReferenceUnwinder.step(t, 0, inAsm, memory(m)).stop(), "the rule alone");
        assertEquals(caller, ReferenceUnwinder.step(mapped, inAsm, tables, memory(m)).caller());
        // a frame further up than sp (locals), an indirect call, a saved rbp of 0: still taken
        ReferenceUnwinder.Frame deeper = new ReferenceUnwinder.Frame(0x1110, sp - 0x100, sp, true, false);
        assertEquals(caller, ReferenceUnwinder.step(mapped, deeper, tables, memory(m)).caller());
        Map<Long, Long> indirect = new HashMap<>(m);
        indirect.put(ret - 8, 0xd0ff_0000_0000_0000L); // call *%rax
        assertEquals(caller, ReferenceUnwinder.noFdeStep(inAsm, tables, memory(indirect)).caller());
        Map<Long, Long> outermost = new HashMap<>(m);
        outermost.put(sp, 0L);
        assertEquals(new ReferenceUnwinder.Frame(ret, sp + 16, 0, true, false),
                ReferenceUnwinder.noFdeStep(inAsm, tables, memory(outermost)).caller());

        // and refused, stopping as the rule says, when the frame does not look real
        Map<String, ReferenceUnwinder.Frame> badFrames = Map.of(
                "bp unknown", new ReferenceUnwinder.Frame(0x1110, sp, sp, false, false),
                "bp 0", new ReferenceUnwinder.Frame(0x1110, sp, 0, true, false),
                "bp below sp", new ReferenceUnwinder.Frame(0x1110, sp + 8, sp, true, false),
                "bp too far above sp", new ReferenceUnwinder.Frame(0x1110, sp - ReferenceUnwinder.NO_FDE_MAX_FRAME_BYTES, sp, true, false),
                "frame unreadable", new ReferenceUnwinder.Frame(0x1110, sp - 64, sp - 32, true, false));
        badFrames.forEach((why, f) -> assertEquals(StopReason.NO_UNWIND_INFO,
                ReferenceUnwinder.step(mapped, f, tables, memory(m)).stop(), why));
        Map<String, Map<Long, Long>> badMemory = new TreeMap<>();
        badMemory.put("saved rbp below bp", with(m, sp, sp - 16));
        badMemory.put("saved rbp equals bp", with(m, sp, sp));
        badMemory.put("return address 0", with(m, sp + 8, 0L));
        badMemory.put("return address in no executable mapping", with(m, sp + 8, 0x9_0000L));
        badMemory.put("caller's code unreadable", without(m, ret - 8));
        // bp is a's frame: a called c (an FDE) directly, so this code kept no frame pointer and bp is not its
        badMemory.put("caller's direct call targets a function with an FDE", with(m, ret - 8, directCall(ret, 0x1200)));
        badMemory.forEach((why, words) -> assertEquals(StopReason.NO_UNWIND_INFO,
                ReferenceUnwinder.step(mapped, inAsm, tables, memory(words)).stop(), why));
        // a direct call into the gap after c, or out of the mapping, is no evidence either way
        assertEquals(caller, ReferenceUnwinder.noFdeStep(inAsm, tables, memory(with(m, ret - 8, directCall(ret, 0x1380)))).caller());
        assertEquals(caller, ReferenceUnwinder.noFdeStep(inAsm, tables, memory(with(m, ret - 8, directCall(ret, 0x5000)))).caller());
        // other stops are not retried
        assertEquals(StopReason.END_OF_STACK, ReferenceUnwinder.step(new ReferenceUnwinder.Mapped(
                table(new TreeMap<>(Map.of(0x1100L, UnwindRule.stop(StopReason.END_OF_STACK), 0x1200L, NO_INFO))), 0),
                inAsm, tables, memory(m)).stop());
    }

    @Test
    void aWalkContinuesThroughCodeWithoutUnwindInfo() throws Exception {
        // main [0x1000, 0x1100) -> a [0x1100, 0x1200) (frameless, CFA = rsp + 32) -> asm [0x1200, 0x1300) (no FDE,
        // keeps rbp) -> c [0x1300, 0x1400) (CFA = rbp + 16), the leaf; main's return address is 0
        TreeMap<Long, Long> rows = new TreeMap<>(Map.of(
                0x1000L, UnwindRule.cfa(UnwindRule.KIND_CFA_RBP, 16, UnwindRule.RBP_SAVED, -16),
                0x1100L, UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 32, UnwindRule.RBP_UNCHANGED, 0),
                0x1200L, NO_INFO,
                0x1300L, UnwindRule.cfa(UnwindRule.KIND_CFA_RBP, 16, UnwindRule.RBP_SAVED, -16),
                0x1400L, NO_INFO));
        ReferenceUnwinder.Mapped mapped = new ReferenceUnwinder.Mapped(table(rows), 0);
        long s = 0x7000_1000L; // main's frame: rbp = s, [s] = 0, [s+8] = 0
        Map<Long, Long> m = new HashMap<>();
        m.put(s, 0L);
        m.put(s + 8, 0L);
        long aSp = s - 8 - 24; // main called a (return address at s-8... a's CFA is aSp + 32)
        m.put(aSp + 24, 0x1050L); // a's return address into main
        long asmBp = aSp - 16; // a called asm: ra at aSp-8, asm pushed rbp (main's, s) at aSp-16
        m.put(asmBp + 8, 0x1150L);
        m.put(asmBp, s);
        m.put(0x1150L - 8, directCall(0x1150, 0x1200));
        long cBp = asmBp - 16; // asm called c: ra at asmBp-8, c pushed asm's rbp
        m.put(cBp + 8, 0x1210L);
        m.put(cBp, asmBp);
        ReferenceUnwinder.Walk w = ReferenceUnwinder.walk(ReferenceUnwinder.Frame.leaf(0x1320, cBp - 48, cBp),
                pc -> pc >= 0x1000 && pc < 0x1400 ? mapped : null, memory(m), 10);
        assertEquals(List.of(0x1320L, 0x1210L, 0x1150L, 0x1050L), w.frames().stream().map(ReferenceUnwinder.Frame::pc).toList());
        assertEquals(StopReason.ZERO_RETURN_ADDRESS, w.end());
    }

    static Map<Long, Long> with(Map<Long, Long> m, long address, long value) {
        Map<Long, Long> out = new HashMap<>(m);
        out.put(address, value);
        return out;
    }

    static Map<Long, Long> without(Map<Long, Long> m, long address) {
        Map<Long, Long> out = new HashMap<>(m);
        out.remove(address);
        return out;
    }

    @Test
    void returnAddressesAreLookedUpOneByteEarlier() throws Exception {
        // f ends with a call to a noreturn function: its return address is the first byte of g
        TreeMap<Long, Long> rows = new TreeMap<>(Map.of(
                0x1000L, UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 32, 0, 0), // f
                0x1020L, UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 8, 0, 0), // g
                0x1040L, NO_INFO));
        UnwindTable t = table(rows);
        long sp = 0x8000;
        Map<Long, Long> m = Map.of(sp + 24, 0x9000L, sp, 0x9100L);
        assertEquals(0x9000L, ReferenceUnwinder.step(t, 0, new ReferenceUnwinder.Frame(0x1020, sp, 0, true, false), memory(m)).caller().pc());
        assertEquals(0x9100L, ReferenceUnwinder.step(t, 0, ReferenceUnwinder.Frame.leaf(0x1020, sp, 0), memory(m)).caller().pc());
        // and the bias moves the table to where the mapping is
        assertEquals(0x9100L, ReferenceUnwinder.step(t, 0x7f00_0000_0000L, ReferenceUnwinder.Frame.leaf(0x7f00_0000_1020L, sp, 0),
                memory(m)).caller().pc());
    }
}
