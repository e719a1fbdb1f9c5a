package dev.loupe.unwinder.perfmap;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One process's perf-map symbols as a compact address table: disjoint ranges sorted by start in primitive
 * arrays (start, size, name reference: 16 bytes a range), the names in one byte arena, each distinct name
 * stored once (JITs log the same name for every recompilation).
 *
 * <p>Entries arrive in batches ({@link #add} then {@link #commit}). Later entries win where ranges overlap
 * (a JIT reuses freed code space: the newest line describes the code there now), within a batch and over
 * what the table already holds; an older range partly covered keeps its uncovered parts.
 *
 * <p>Bounds: {@link #add} refuses an entry once the table and its batch hold {@code maxEntries} ranges or
 * the arena would pass {@code maxNameBytes}; the caller stops there. A newer entry inside an older one
 * splits it (one range becomes three), so after a commit the table may hold up to twice
 * {@code maxEntries} ranges in that case; without overlaps it holds at most {@code maxEntries}. Names of
 * ranges that newer ones replaced stay in the arena until {@link #compact}.
 *
 * <p>Not thread-safe: used by the symbolizing thread.
 */
final class PerfMapTable {
    /** A name is stored with a 2-byte length: longer ones are refused (the reader skips such lines). */
    static final int MAX_NAME_BYTES = 0xFFFF;
    private static final int NAME_CACHE = 256;

    private final int maxEntries;
    private final int maxNameBytes;

    // The table: disjoint ranges sorted by start.
    private long[] starts = new long[0];
    private int[] sizes = new int[0];
    private int[] names = new int[0];
    private int count;

    // The batch being added, in arrival order.
    private long[] batchStarts = new long[16];
    private long[] batchEnds = new long[16];
    private int[] batchNames = new int[16];
    private int batchCount;

    // Names: [length: 2 bytes big-endian][UTF-8 bytes], referenced by offset; an open-addressing set of
    // offsets + 1 (0 = free) finds a name already stored.
    private byte[] arena = new byte[0];
    private int arenaUsed;
    private int[] nameSet = new int[0];
    private int distinctNames;
    /** A commit replaced or merged ranges since the last compaction: the arena may hold unused names. */
    private boolean mayHoldUnusedNames;

    // Lookups decode a name into a String; a small cache keeps the hot ones.
    private final int[] cachedRefs = new int[NAME_CACHE];
    private final String[] cachedNames = new String[NAME_CACHE];

    PerfMapTable(int maxEntries, int maxNameBytes) {
        if (maxEntries < 1 || maxNameBytes < 1) {
            throw new IllegalArgumentException("limits must be positive: " + maxEntries + " entries, " + maxNameBytes + " name bytes");
        }
        this.maxEntries = maxEntries;
        this.maxNameBytes = maxNameBytes;
        Arrays.fill(cachedRefs, -1);
    }

    /** Ranges in the table (not counting an uncommitted batch). */
    int size() {
        return count;
    }

    /** Bytes of the name arena in use (live and replaced names). */
    int nameBytes() {
        return arenaUsed;
    }

    /** Estimated heap held: the arrays as allocated. */
    long heapBytes() {
        return 64L + starts.length * 8L + sizes.length * 4L + names.length * 4L + batchStarts.length * 20L
                + arena.length + nameSet.length * 4L;
    }

    /**
     * Queues the range [start, end) named by {@code len} bytes of {@code buf} at {@code off}. False, and
     * nothing queued, when the entry or name limit is reached. {@code start < end}, both non-negative, the
     * size below 2^31 and {@code len} at most {@link #MAX_NAME_BYTES}: the reader checks.
     */
    boolean add(long start, long end, byte[] buf, int off, int len) {
        if (count + batchCount >= maxEntries) {
            return false;
        }
        int ref = intern(buf, off, len);
        if (ref < 0) {
            return false;
        }
        if (batchCount == batchStarts.length) {
            int n = batchCount * 2;
            batchStarts = Arrays.copyOf(batchStarts, n);
            batchEnds = Arrays.copyOf(batchEnds, n);
            batchNames = Arrays.copyOf(batchNames, n);
        }
        batchStarts[batchCount] = start;
        batchEnds[batchCount] = end;
        batchNames[batchCount] = ref;
        batchCount++;
        return true;
    }

    /** Overlays the queued batch on the table, newer entries winning. */
    void commit() {
        if (batchCount == 0) {
            return;
        }
        int b = batchCount;
        int[] order = sortedByStart(batchStarts, b);
        int e = count;
        int cap = e + 2 * b + 1;
        long[] outStarts = new long[cap];
        int[] outSizes = new int[cap];
        int[] outNames = new int[cap];
        int out = 0;
        // Sweep over both sorted streams. Ids: the table's ranges 0..e-1 (disjoint, so their order among
        // themselves never matters), the batch's e..e+b-1 in arrival order: the highest id covering a point wins.
        IntMaxHeap active = new IntMaxHeap(Math.min(e + b, 1 << 16));
        int i = 0;
        int j = 0;
        long x = Long.MIN_VALUE;
        while (i < e || j < b || !active.isEmpty()) {
            if (active.isEmpty()) {
                x = Math.min(i < e ? starts[i] : Long.MAX_VALUE, j < b ? batchStarts[order[j]] : Long.MAX_VALUE);
            }
            while (i < e && starts[i] <= x) {
                active.push(i++);
            }
            while (j < b && batchStarts[order[j]] <= x) {
                active.push(e + order[j++]);
            }
            while (!active.isEmpty() && endOf(active.top(), e) <= x) {
                active.pop();
            }
            if (active.isEmpty()) {
                continue;
            }
            int top = active.top();
            long next = Math.min(i < e ? starts[i] : Long.MAX_VALUE, j < b ? batchStarts[order[j]] : Long.MAX_VALUE);
            long until = Math.min(endOf(top, e), next);
            int name = top < e ? names[top] : batchNames[top - e];
            if (out > 0 && outNames[out - 1] == name && outStarts[out - 1] + outSizes[out - 1] == x
                    && until - outStarts[out - 1] <= Integer.MAX_VALUE) {
                outSizes[out - 1] = (int) (until - outStarts[out - 1]); // the same name continues: one range
            } else {
                outStarts[out] = x;
                outSizes[out] = (int) (until - x);
                outNames[out] = name;
                out++;
            }
            x = until;
        }
        boolean trim = out < cap / 2 + 8;
        starts = trim ? Arrays.copyOf(outStarts, out) : outStarts;
        sizes = trim ? Arrays.copyOf(outSizes, out) : outSizes;
        names = trim ? Arrays.copyOf(outNames, out) : outNames;
        if (out < e + b) {
            mayHoldUnusedNames = true;
        }
        count = out;
        batchCount = 0;
        if (batchStarts.length > 1024) {
            batchStarts = new long[16];
            batchEnds = new long[16];
            batchNames = new int[16];
        }
    }

    private long endOf(int id, int e) {
        return id < e ? starts[id] + sizes[id] : batchEnds[id - e];
    }

    /** The name of the range holding {@code addr}, or null. */
    String lookup(long addr) {
        int lo = 0;
        int hi = count - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (starts[mid] <= addr) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        if (hi < 0 || addr - starts[hi] >= sizes[hi]) {
            return null;
        }
        int ref = names[hi];
        int slot = (ref * 0x9E3779B1 >>> 24) & (NAME_CACHE - 1);
        if (cachedRefs[slot] == ref) {
            return cachedNames[slot];
        }
        String s = new String(arena, ref + 2, nameLength(ref), StandardCharsets.UTF_8);
        cachedRefs[slot] = ref;
        cachedNames[slot] = s;
        return s;
    }

    /** Whether {@link #compact} may free anything: ranges were replaced or merged since it last ran. */
    boolean mayHoldUnusedNames() {
        return mayHoldUnusedNames;
    }

    /**
     * Rebuilds the arena from the names the table's ranges still use, dropping those of replaced ranges.
     * Call between batches.
     */
    void compact() {
        if (batchCount != 0) {
            throw new IllegalStateException("compact with a batch pending");
        }
        mayHoldUnusedNames = false;
        byte[] old = arena;
        int[] oldNames = names;
        arena = new byte[0];
        arenaUsed = 0;
        nameSet = new int[0];
        distinctNames = 0;
        Arrays.fill(cachedRefs, -1);
        Arrays.fill(cachedNames, null);
        int[] remapped = new int[count];
        for (int k = 0; k < count; k++) {
            int ref = oldNames[k];
            remapped[k] = intern(old, ref + 2, ((old[ref] & 0xFF) << 8) | (old[ref + 1] & 0xFF));
        }
        names = remapped;
        if (arena.length > arenaUsed + arenaUsed / 4 + 64) {
            arena = Arrays.copyOf(arena, arenaUsed);
        }
    }

    private int nameLength(int ref) {
        return ((arena[ref] & 0xFF) << 8) | (arena[ref + 1] & 0xFF);
    }

    /** The arena offset of this name, stored now if new; -1 if it does not fit under the limit. */
    private int intern(byte[] buf, int off, int len) {
        int h = hash(buf, off, len);
        if (nameSet.length > 0) {
            int mask = nameSet.length - 1;
            for (int slot = h & mask; ; slot = (slot + 1) & mask) {
                int v = nameSet[slot];
                if (v == 0) {
                    break;
                }
                int ref = v - 1;
                if (nameLength(ref) == len && Arrays.equals(arena, ref + 2, ref + 2 + len, buf, off, off + len)) {
                    return ref;
                }
            }
        }
        long need = (long) arenaUsed + 2 + len;
        if (need > maxNameBytes) {
            return -1;
        }
        if (need > arena.length) {
            arena = Arrays.copyOf(arena, (int) Math.min(maxNameBytes, Math.max(need, Math.max(256L, arena.length * 2L))));
        }
        int ref = arenaUsed;
        arena[ref] = (byte) (len >>> 8);
        arena[ref + 1] = (byte) len;
        System.arraycopy(buf, off, arena, ref + 2, len);
        arenaUsed += 2 + len;
        if ((distinctNames + 1) * 2 > nameSet.length) {
            rehash(Math.max(64, nameSet.length * 2));
        }
        insert(ref, h);
        distinctNames++;
        return ref;
    }

    private void rehash(int capacity) {
        int[] old = nameSet;
        nameSet = new int[capacity];
        for (int v : old) {
            if (v != 0) {
                insert(v - 1, hash(arena, v + 1, nameLength(v - 1)));
            }
        }
    }

    private void insert(int ref, int h) {
        int mask = nameSet.length - 1;
        int slot = h & mask;
        while (nameSet[slot] != 0) {
            slot = (slot + 1) & mask;
        }
        nameSet[slot] = ref + 1;
    }

    private static int hash(byte[] b, int off, int len) {
        int h = 0x811C9DC5;
        for (int k = off; k < off + len; k++) {
            h = (h ^ b[k]) * 0x01000193;
        }
        return h ^ (h >>> 16);
    }

    /** Indices 0..n-1 sorted by {@code keys} (user-space addresses: unsigned and signed order agree), ties in index order. */
    static int[] sortedByStart(long[] keys, int n) {
        return dev.loupe.unwinder.elf.SymbolTable.stableOrderUnsigned(n, k -> keys[k]);
    }

    /** A max-heap of ints. */
    private static final class IntMaxHeap {
        private int[] heap;
        private int size;

        IntMaxHeap(int capacity) {
            heap = new int[Math.max(16, capacity)];
        }

        boolean isEmpty() {
            return size == 0;
        }

        int top() {
            return heap[0];
        }

        void push(int v) {
            if (size == heap.length) {
                heap = Arrays.copyOf(heap, size * 2);
            }
            int k = size++;
            while (k > 0) {
                int parent = (k - 1) >>> 1;
                if (heap[parent] >= v) {
                    break;
                }
                heap[k] = heap[parent];
                k = parent;
            }
            heap[k] = v;
        }

        void pop() {
            int last = heap[--size];
            int k = 0;
            int half = size >>> 1;
            while (k < half) {
                int c = 2 * k + 1;
                if (c + 1 < size && heap[c + 1] > heap[c]) {
                    c++;
                }
                if (last >= heap[c]) {
                    break;
                }
                heap[k] = heap[c];
                k = c;
            }
            heap[k] = last;
        }
    }
}
