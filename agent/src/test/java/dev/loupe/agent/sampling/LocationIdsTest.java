package dev.loupe.agent.sampling;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

class LocationIdsTest {
    @Test
    void agreesWithAHashMapThroughGrowth() {
        LocationIds ids = new LocationIds();
        Map<String, Long> ref = new HashMap<>();
        Random r = new Random(1);
        long next = 1;
        for (int i = 0; i < 20_000; i++) {
            long mapping = r.nextInt(5);
            long address = r.nextBoolean() ? 0x401000 + r.nextInt(3000) : r.nextLong();
            String key = mapping + ":" + address;
            Long want = ref.get(key);
            assertEquals(want == null ? 0 : want, ids.get(mapping, address), key);
            if (want == null) {
                ids.put(mapping, address, next);
                ref.put(key, next++);
            }
        }
        assertEquals(ref.size(), ids.size());
        // The same address in two mappings is two locations.
        assertEquals(0, new LocationIds().get(1, 0x401000));
    }
}
