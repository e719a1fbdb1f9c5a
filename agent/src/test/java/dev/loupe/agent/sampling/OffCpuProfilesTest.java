package dev.loupe.agent.sampling;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What the kernel side is told: the probability and whether the agent's own waits are recorded, at start, reload and close. */
class OffCpuProfilesTest {
    private record Told(double p, boolean includeSelf) {}

    @Test
    void theKernelSideIsToldTheProbabilityAndWhetherTheAgentsOwnWaitsCount() throws Exception {
        List<Told> told = new ArrayList<>();
        OffCpuProfiles o = new OffCpuProfiles(new SampleProcessor(new AgentTest.FakeSymbolizer(), pid -> "0::/\n", System::nanoTime),
                Clocks.system(), new OffCpuProfiles.Control() {
                    @Override
                    public void probability(double p, boolean includeSelf) {
                        told.add(new Told(p, includeSelf));
                    }

                    @Override
                    public long[] counters() {
                        return new long[5];
                    }
                });
        o.configure(0.01, false);
        assertEquals(0.01, o.probability());
        assertFalse(o.includesSelf());
        o.configure(0.01, true); // a reload asking for the agent's own waits
        assertTrue(o.includesSelf());
        assertThrows(IllegalArgumentException.class, () -> o.configure(1.5, false));
        assertTrue(o.includesSelf(), "a refused value changes nothing");
        o.close();
        assertEquals(List.of(new Told(0.01, false), new Told(0.01, true), new Told(0, true)), told);
    }
}
