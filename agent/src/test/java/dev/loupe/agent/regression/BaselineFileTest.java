package dev.loupe.agent.regression;

import dev.loupe.pprof.Label;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

import static dev.loupe.agent.regression.RegressionTrackerTest.F;
import static dev.loupe.agent.regression.RegressionTrackerTest.MINUTE;
import static dev.loupe.agent.regression.RegressionTrackerTest.SETTINGS;
import static dev.loupe.agent.regression.RegressionTrackerTest.T0;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A function's baselines file: what goes in comes out, and anything damaged is refused, never half read. */
class BaselineFileTest {
    private static final SlotTiming TIMING = SlotTiming.of(SETTINGS);
    private static final SampleBudget ROOM = new SampleBudget();

    static {
        ROOM.refill(1_000, 0);
    }

    /** An hour of b1, then 15 minutes of b2, with profile samples in both, one of them unsymbolized. */
    static FunctionBaselines sample() {
        FunctionBaselines f = new FunctionBaselines(F);
        StackFrame leaf = new StackFrame("/srv/shop", "main.checkout", "", 0, 0);
        StackFrame caller = new StackFrame("/usr/lib/libserve.so", "main.handler", "serve.go", 42, 0);
        StackFrame unknown = new StackFrame("/usr/lib/libc.so.6", null, "", 0, 0x7f00_0000_1234L);
        for (int m = 0; m < 75; m++) {
            long now = T0 + m * MINUTE;
            String build = m < 60 ? "b1" : "b2";
            f.record(build, Samples.histogram(Samples.lognormal(m, 100, 2_000_000, 0.5, 1)), now, TIMING);
            ProfileSamples s = f.samplesOf(build, now, TIMING);
            s.add(new SampleKey(new StackFrame[] {leaf, caller}, List.of(Label.num("le_us", 2048, "microseconds"),
                    Label.num("le_ns", 2_097_152, "nanoseconds"))), 5, 10_000_000, ROOM);
            s.add(new SampleKey(new StackFrame[] {leaf, unknown}, List.of(Label.str("le_us", "+Inf"))), 1, 9, ROOM);
        }
        f.advance(T0 + 75 * MINUTE, TIMING);
        return f;
    }

    /** Everything a file holds, in a fixed order. */
    static String describe(FunctionBaselines f) {
        StringBuilder out = new StringBuilder(f.key + " current " + f.currentBuild() + " last call " + f.currentLastCall()
                + " previous " + f.previousBuild() + "\n");
        List<Slot> slots = new ArrayList<>();
        if (f.previous() != null) {
            slots.add(f.previous());
        }
        slots.addAll(f.history().windowSlots());
        slots.add(null);
        slots.addAll(f.history().trailingSlots());
        for (Slot s : slots) {
            if (s == null) {
                out.append("trailing:\n");
                continue;
            }
            FineHistogram h = s.histogram();
            TreeMap<Integer, Long> buckets = new TreeMap<>();
            for (int i = 0; i < FineHistogram.BUCKETS; i++) {
                if (h.count(i) != 0) {
                    buckets.put(i, h.count(i));
                }
            }
            TreeMap<String, String> samples = new TreeMap<>();
            s.samples.forEach((k, v) -> samples.put(List.of(k.stack) + " " + k.labels, v[0] + "/" + v[1]));
            out.append(s.start).append("..").append(s.end).append(' ').append(buckets).append(' ').append(samples).append('\n');
        }
        return out.toString();
    }

    @Test
    void whatIsWrittenIsReadBack() {
        FunctionBaselines f = sample();
        assertEquals("b2", f.currentBuild());
        assertEquals(6_000, f.previous().calls());
        // b2's 15 minutes, a minute after the last: 9 in the window, the first 6 in one trailing slot.
        assertEquals(9, f.history().windowSlots().size());
        assertEquals(List.of(600L), f.history().trailingSlots().stream().map(Slot::calls).toList());
        byte[] bytes = BaselineFile.encode(f);
        FunctionBaselines read = BaselineFile.decode(bytes, new Interner<>(1_000));
        assertEquals(describe(f), describe(read));
        assertEquals(f.history().windowSum(), read.history().windowSum());
        assertEquals(f.history().trailingSum(), read.history().trailingSum());
        // Strings, frames and label lists are written once: 11 slots of the same two samples stay small.
        assertTrue(bytes.length < 4_000, bytes.length + " bytes");
    }

    @Test
    void damagedBytesAreRefusedWhole() {
        byte[] bytes = BaselineFile.encode(sample());
        Interner<Object> interner = new Interner<>(1_000);
        for (int length = 0; length < bytes.length; length++) {
            byte[] cut = java.util.Arrays.copyOf(bytes, length);
            assertThrows(IllegalArgumentException.class, () -> BaselineFile.decode(cut, interner), "cut at " + length);
        }
        for (int i = 0; i < bytes.length; i += 7) {
            byte[] flipped = bytes.clone();
            flipped[i] ^= 1;
            assertThrows(IllegalArgumentException.class, () -> BaselineFile.decode(flipped, interner), "flipped at " + i);
        }
    }

    @Test
    void aBodyThatPassesTheChecksumButLiesIsStillRefused() {
        // Version 1, then a binary whose length claims more bytes than the file has.
        byte[] lying = RegressionTrackerTest.withChecksum(new byte[] {'L', 'O', 'U', 'P', 'E', 'B', 'L', '\n', 1, 127});
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> BaselineFile.decode(lying, new Interner<>(16)));
        assertEquals("count 127 with 0 bytes left", e.getMessage());
    }

    @Test
    void histogramsAreNamedByValueNotByBucketIndex() {
        FineHistogram h = Samples.histogram(Samples.lognormal(7, 5_000, 300_000, 1, 1));
        h.add(0, 2); // underflow
        h.add(Long.MAX_VALUE, 3); // overflow
        assertEquals(h, HistogramBytes.decode(HistogramBytes.encode(h)));
        // Every bucket's largest value is in that bucket, so a slot read back equals the running totals it fed.
        long[] each = new long[FineHistogram.BUCKETS];
        java.util.Arrays.fill(each, 1);
        FineHistogram all = FineHistogram.ofCounts(each);
        assertEquals(all, HistogramBytes.decode(HistogramBytes.encode(all)));
        // Two buckets given by values (1,499 ns and then 2,000,000 ns): each count lands in the bucket of its value,
        // whatever the layout's indices.
        BinaryOut out = new BinaryOut().varint(2).varint(1_499).varint(3).varint(2_000_000 - 1_499).varint(4);
        FineHistogram expected = new FineHistogram();
        expected.add(1_499, 3);
        expected.add(2_000_000, 4);
        assertEquals(expected, HistogramBytes.decode(out.toByteArray()));
    }
}
