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
