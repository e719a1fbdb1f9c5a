package dev.loupe.agent.unwind;

import dev.loupe.bpf.BpfException;
import dev.loupe.bpf.PerfEventSampler;
import dev.loupe.bpf.UnwindMaps;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The unwinder's values against the compiled profiler object, as Main passes them when it opens the sampler. */
class UnwinderAbiTest {
    private static final UnwindMaps.Capacity SMALL = UnwindMaps.Capacity.forBudget(1 << 20);

    @Test
    void theSamplerOpensWithTheUnwindersConstants() throws Exception {
        try (PerfEventSampler s = PerfEventSampler.open(19, Set.of(Integer.MAX_VALUE - 1), SMALL, UnwinderAbi.constants())) {
            assertEquals(SMALL, s.unwindMaps().capacity());
        }
    }

    /** A USER_HZ of 1000 on the Java side: the open fails before loading, naming the constant and both values. */
    @Test
    void aDriftedValueFailsTheOpenNamingIt() {
        Map<String, Long> drifted = new HashMap<>(UnwinderAbi.constants());
        drifted.put("NSEC_PER_TICK", 1_000_000L);
        BpfException e = assertThrows(BpfException.class, () -> PerfEventSampler.open(19, Set.of(), SMALL, drifted));
        assertEquals("kernel ABI mismatch between loupe_profiler and Java (dev.loupe.bpf.KernelAbi): "
                + "enum proc_clock: NSEC_PER_TICK is 10000000 in C, 1000000 in Java", e.getMessage());
    }
}
