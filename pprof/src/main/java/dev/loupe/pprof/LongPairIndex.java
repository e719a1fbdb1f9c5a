package dev.loupe.pprof;

import java.util.Arrays;

/**
 * Ids (1, 2, 3...) filed under a pair of longs, without boxing: an open-addressing table from each pair to
 * the first id filed under it, and a chain from that id through the others filed under the same pair. The
 * builder files locations under (mapping id, address) and mappings under (start, limit), and compares their
 * remaining fields along the chain.
 */
final class LongPairIndex {
    private long[] firstKeys;
    private long[] secondKeys;
    private int[] heads; // per slot: the first id filed under the slot's pair; 0 = empty slot
    private int[] next = new int[16]; // per id: the next id under the same pair; 0 = last
    private int pairs;

    /** @param capacity initial slots, a power of two; the table doubles when half full */
    LongPairIndex(int capacity) {
        if (Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("capacity must be a power of two: " + capacity);
        }
        firstKeys = new long[capacity];
        secondKeys = new long[capacity];
        heads = new int[capacity];
    }

    /** The first id filed under (first, second), or 0 if none. */
    int first(long first, long second) {
        int mask = heads.length - 1;
        for (int i = slot(first, second, mask); ; i = (i + 1) & mask) {
            int id = heads[i];
            if (id == 0 || secondKeys[i] == second && firstKeys[i] == first) {
                return id;
            }
        }
    }

    /** The id filed after {@code id} under the same pair, or 0 if it is the last. */
    int next(int id) {
        return next[id];
    }

    /**
     * Files a new id (> 0, not filed before) under (first, second). The pair's first id stays first; the
     * others follow in no particular order.
     */
    void add(long first, long second, int id) {
        if (id >= next.length) {
            next = Arrays.copyOf(next, Math.max(id + 1, 2 * next.length));
        }
        int mask = heads.length - 1;
        int i = slot(first, second, mask);
        for (; heads[i] != 0; i = (i + 1) & mask) {
            if (secondKeys[i] == second && firstKeys[i] == first) {
                int head = heads[i];
                next[id] = next[head];
                next[head] = id;
                return;
            }
        }
        if (2 * (pairs + 1) > heads.length) {
            grow();
            add(first, second, id);
            return;
        }
        firstKeys[i] = first;
        secondKeys[i] = second;
        heads[i] = id;
        pairs++;
    }

    /** Distinct pairs filed. */
    int pairs() {
        return pairs;
    }

    private static int slot(long first, long second, int mask) {
        long h = second * 0x9E3779B97F4A7C15L + first;
        return (int) (h ^ (h >>> 29)) & mask;
    }

    private void grow() {
        long[] f = firstKeys;
        long[] s = secondKeys;
        int[] h = heads;
        firstKeys = new long[h.length * 2];
        secondKeys = new long[h.length * 2];
        heads = new int[h.length * 2];
        int mask = heads.length - 1;
        for (int i = 0; i < h.length; i++) {
            if (h[i] != 0) {
                int j = slot(f[i], s[i], mask);
                while (heads[j] != 0) {
                    j = (j + 1) & mask;
                }
                firstKeys[j] = f[i];
                secondKeys[j] = s[i];
                heads[j] = h[i];
            }
        }
    }
}
