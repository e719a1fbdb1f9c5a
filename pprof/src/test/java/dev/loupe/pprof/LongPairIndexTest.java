package dev.loupe.pprof;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class LongPairIndexTest {
    @Test
    void agreesWithAHashMapThroughGrowth() {
        LongPairIndex index = new LongPairIndex(16);
        Map<String, List<Integer>> ref = new HashMap<>();
        Random r = new Random(1);
        int next = 1;
        for (int i = 0; i < 20_000; i++) {
            long mapping = r.nextInt(5);
            long address = r.nextBoolean() ? 0x401000 + r.nextInt(3000) : r.nextLong();
            String key = mapping + ":" + address;
            List<Integer> want = ref.getOrDefault(key, List.of());
            assertEquals(want, filed(index, mapping, address), key);
            if (want.size() < 3 && r.nextInt(4) > 0) { // a few pairs get a second and third id
                index.add(mapping, address, next);
                ref.computeIfAbsent(key, k -> new ArrayList<>()).add(next++);
            }
        }
        assertEquals(ref.size(), index.pairs());
        assertEquals(3, ref.values().stream().mapToInt(List::size).max().orElseThrow());
        // The same address under two mappings is two pairs.
        LongPairIndex small = new LongPairIndex(2);
        small.add(0, 0x401000, 1);
        assertEquals(0, small.first(1, 0x401000));
        assertEquals(1, small.first(0, 0x401000));
    }

    /** The ids under a pair, the first first and the rest in filing order (sorted: the chain's order is free). */
    private static List<Integer> filed(LongPairIndex index, long first, long second) {
        List<Integer> ids = new ArrayList<>();
        for (int id = index.first(first, second); id != 0; id = index.next(id)) {
            ids.add(id);
        }
        if (ids.size() > 1) {
            ids.subList(1, ids.size()).sort(null);
        }
        return ids;
    }

    @Test
    void firstIdStaysFirst() {
        LongPairIndex index = new LongPairIndex(4);
        index.add(7, 8, 5);
        index.add(7, 8, 2);
        index.add(7, 8, 9);
        assertEquals(5, index.first(7, 8));
        assertEquals(List.of(5, 2, 9), filed(index, 7, 8));
        assertEquals(1, index.pairs());
        assertThrows(IllegalArgumentException.class, () -> new LongPairIndex(12));
    }
}
