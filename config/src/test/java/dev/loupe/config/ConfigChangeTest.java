package dev.loupe.config;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ConfigChangeTest {
    @Test
    void splitsLiveChangesFromOnesThatNeedARestart() throws Exception {
        LoupeConfig running = ConfigLoader.parse("frequency: 19\nexternal-labels: {team: a}\n", "old.yaml");
        LoupeConfig loaded = ConfigLoader.parse("frequency: 49\ninterval: 20s\nexternal-labels: {team: b}\n"
                + "remote-store:\n  address: parca:7070\n", "new.yaml");
        ConfigChange c = ConfigChange.between(running, loaded);
        assertEquals(List.of(Options.REMOTE_STORE_ADDRESS, Options.EXTERNAL_LABELS), c.live());
        assertEquals(List.of(Options.FREQUENCY, Options.INTERVAL), c.needRestart());
        assertTrue(c.changedLive(Options.EXTERNAL_LABELS));
        assertFalse(c.changedLive(Options.PROBES));
        assertTrue(c.changedLiveUnder("remote-store."));
        assertFalse(c.changedLiveUnder("kafka."));
        assertEquals("applied: remote-store.address, external-labels; needs a restart (the running value stays): frequency, interval",
                c.describe());
    }

    @Test
    void theSameFileChangesNothing() throws Exception {
        String yaml = "frequency: 99\nprobes: [{binary: /bin/true, functions: [main]}]\n";
        ConfigChange c = ConfigChange.between(ConfigLoader.parse(yaml, "a"), ConfigLoader.parse(yaml, "b"));
        assertTrue(c.isEmpty());
        assertEquals("nothing changed", c.describe());
    }
}
