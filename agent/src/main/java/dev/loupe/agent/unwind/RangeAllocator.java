package dev.loupe.agent.unwind;

import java.util.Map;
import java.util.TreeMap;

/** First-fit allocation of contiguous index ranges in [0, capacity), with coalescing frees. Not thread-safe. */
final class RangeAllocator {
    private final int capacity;
    private final TreeMap<Integer, Integer> free = new TreeMap<>(); // start -> length
    private long used;

    RangeAllocator(int capacity) {
        this.capacity = capacity;
        free.put(0, capacity);
    }

    /** The start of a free range of {@code n} slots, now taken; -1 if none is large enough. */
    int allocate(int n) {
        if (n == 0) {
            return 0;
        }
        for (Map.Entry<Integer, Integer> e : free.entrySet()) {
            // Key and length read before the removal: removing an inner node of the tree moves its successor's key
            // and value into that same entry object, so e would then name the next hole.
            int start = e.getKey();
            int length = e.getValue();
            if (length >= n) {
                free.remove(start);
                if (length > n) {
                    free.put(start + n, length - n);
                }
                used += n;
                return start;
            }
        }
        return -1;
    }

    void release(int start, int n) {
        if (n == 0) {
            return;
        }
        used -= n;
        int s = start;
        int len = n;
        Map.Entry<Integer, Integer> before = free.floorEntry(s);
        if (before != null && before.getKey() + before.getValue() == s) {
            s = before.getKey();
            len += before.getValue();
            free.remove(before.getKey());
        }
        Integer after = free.get(start + n);
        if (after != null) {
            free.remove(start + n);
            len += after;
        }
        free.put(s, len);
    }

    long used() {
        return used;
    }

    int capacity() {
        return capacity;
    }
}
