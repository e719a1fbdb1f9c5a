package dev.loupe.agent.unwind;

import dev.loupe.bpf.BpfException;
import dev.loupe.bpf.PerfEventSampler;
import dev.loupe.bpf.UnwindMaps;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The unwinder's values against the compiled profiler object, as Main passes them when it opens the sampler. */
class UnwinderAbiTest {
    private static final UnwindMaps.Capacity SMALL = UnwindMaps.Capacity.forBudget(1 << 20);
    private static final String MISMATCH = "kernel ABI mismatch between loupe_profiler and Java (dev.loupe.bpf.KernelAbi): ";

    /** The open loads the program; its unwind maps are the kernel's: a process registered there can be removed once. */
    @Test
    void theSamplerOpensWithTheUnwindersConstants() throws Exception {
        int tgid = Integer.MAX_VALUE - 1;
        try (PerfEventSampler s = PerfEventSampler.open(19, Set.of(tgid), SMALL, UnwinderAbi.constants())) {
            s.unwindMaps().setProcess(tgid, 1, 0, 0);
            assertTrue(s.unwindMaps().removeProcess(tgid), "registered in the kernel's procs map");
            assertFalse(s.unwindMaps().removeProcess(tgid), "and gone from it");
        }
    }

    /** A USER_HZ of 1000 on the Java side: the open fails before loading, naming the constant and both values. */
    @Test
    void aDriftedValueFailsTheOpenNamingIt() {
        Map<String, Long> drifted = new HashMap<>(UnwinderAbi.constants());
        drifted.put("NSEC_PER_TICK", 1_000_000L);
        BpfException e = assertThrows(BpfException.class, () -> PerfEventSampler.open(19, Set.of(), SMALL, drifted));
        assertEquals(MISMATCH + "enum proc_clock: NSEC_PER_TICK is 10000000 in C, 1000000 in Java", e.getMessage());
    }

    /**
     * Every value the unwinder supplies is compared with C's: each one off by one, or left out, fails the open
     * naming that constant alone.
     */
    /** The sampler decodes a sample's mappings into the layout the symbolizer reads (the two modules do not meet). */
    @Test
    void aSamplesMappingsAreDecodedInTheSymbolizersLayout() {
        assertEquals(dev.loupe.unwinder.symbolize.SampledMappings.WORDS, dev.loupe.bpf.RawSample.MAPPING_WORDS);
        assertEquals(dev.loupe.unwinder.symbolize.SampledMappings.FILE, dev.loupe.bpf.RawSample.MAPPING_FILE);
        assertEquals(dev.loupe.unwinder.symbolize.SampledMappings.VDSO, dev.loupe.bpf.RawSample.MAPPING_VDSO);
        assertEquals(dev.loupe.unwinder.symbolize.SampledMappings.ANONYMOUS, dev.loupe.bpf.RawSample.MAPPING_ANONYMOUS);
        // start, end, offset, device, inode, kind: RawSampleDecoder's order
        assertEquals(java.util.List.of(0, 1, 2, 3, 4, 5), java.util.List.of(dev.loupe.unwinder.symbolize.SampledMappings.START,
                dev.loupe.unwinder.symbolize.SampledMappings.END, dev.loupe.unwinder.symbolize.SampledMappings.OFFSET,
                dev.loupe.unwinder.symbolize.SampledMappings.DEVICE, dev.loupe.unwinder.symbolize.SampledMappings.INODE,
                dev.loupe.unwinder.symbolize.SampledMappings.KIND));
    }

    @Test
    void everyConstantIsCompared() {
        Map<String, Long> constants = new TreeMap<>(UnwinderAbi.constants());
        assertEquals(73, constants.size(), "the loop below covers every constant: " + constants.keySet());
        for (Map.Entry<String, Long> c : constants.entrySet()) {
            Map<String, Long> drifted = new HashMap<>(constants);
            drifted.put(c.getKey(), c.getValue() + 1);
            String off = assertThrows(BpfException.class, () -> PerfEventSampler.open(19, Set.of(), SMALL, drifted)).getMessage();
            assertTrue(off.startsWith(MISMATCH + "enum ") && off.endsWith(": " + c.getKey() + " is " + c.getValue() + " in C, "
                    + (c.getValue() + 1) + " in Java") && !off.contains(";"), off);

            Map<String, Long> without = new HashMap<>(constants);
            without.remove(c.getKey());
            String missing = assertThrows(BpfException.class, () -> PerfEventSampler.open(19, Set.of(), SMALL, without)).getMessage();
            assertTrue(missing.startsWith(MISMATCH + "enum ") && missing.endsWith(": " + c.getKey() + " is missing in Java")
                    && !missing.contains(";"), missing);
        }
    }
}
