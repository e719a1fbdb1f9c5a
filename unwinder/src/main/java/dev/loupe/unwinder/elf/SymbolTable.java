package dev.loupe.unwinder.elf;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Function symbols sorted by address in primitive arrays: a lookup is one binary search, no boxing.
 * Names live in one byte array and become Strings only when looked up (then memoized), so a table of
 * 100k symbols costs ~20 bytes a symbol plus its name's bytes instead of a String object each.
 *
 * <p>A symbol of size 0 covers up to the next symbol. An address past the end of the symbol before it
 * falls back to an earlier, larger symbol that still contains it (nested or overlapping symbols, as in
 * hand-written assembly), else it has no symbol.
 */
public final class SymbolTable {
    public static final SymbolTable EMPTY = new Builder().build();

    private final long[] starts;
    private final int[] sizes; // clamped to int: no function is 2 GiB long
    private final int[] nameOffsets; // n + 1 entries into names; name i is [nameOffsets[i], nameOffsets[i+1])
    private final byte[] names;
    /** cover[i]: index j <= i whose symbol reaches farthest; null when no symbol overlaps a later one. */
    private final int[] cover;
    private final String[] memo; // Strings made on lookup; racy writes of immutable Strings are benign

    private SymbolTable(long[] starts, int[] sizes, int[] nameOffsets, byte[] names, int[] cover) {
        this.starts = starts;
        this.sizes = sizes;
        this.nameOffsets = nameOffsets;
        this.names = names;
        this.cover = cover;
        this.memo = new String[starts.length];
    }

    /** The function containing {@code vaddr}, or null. */
    public String lookup(long vaddr) {
        int i = index(vaddr);
        return i < 0 ? null : name(i);
    }

    /** Index (in address order) of the symbol containing vaddr, or -1. Addresses compare unsigned. */
    int index(long vaddr) {
        long[] s = starts;
        int lo = 0;
        int hi = s.length - 1;
        // Unsigned binary search for the greatest start <= vaddr (kernel addresses are "negative").
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(s[mid], vaddr) <= 0) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        int i = hi;
        if (i < 0) {
            return -1;
        }
        if (sizes[i] == 0 || Long.compareUnsigned(vaddr - s[i], sizes[i]) < 0) {
            return i;
        }
        if (cover != null) {
            int j = cover[i];
            if (j != i && Long.compareUnsigned(vaddr - s[j], sizes[j]) < 0) {
                return j;
            }
        }
        return -1;
    }

    public int size() {
        return starts.length;
    }

    /** Start address of the i-th symbol in address order. */
    public long start(int i) {
        return starts[i];
    }

    /** Size of the i-th symbol in address order (0: unknown, up to the next symbol). */
    public long symbolSize(int i) {
        return sizes[i];
    }

    /** Name of the i-th symbol in address order. */
    public String name(int i) {
        String n = memo[i];
        if (n == null) {
            n = new String(names, nameOffsets[i], nameOffsets[i + 1] - nameOffsets[i], StandardCharsets.UTF_8);
            memo[i] = n;
        }
        return n;
    }

    /** Estimated heap bytes (arrays, names; not the Strings made by lookups), for the cache weigher. */
    public long memoryFootprintBytes() {
        long n = starts.length;
        return 128 + 8 * n + 4 * n + 4 * (n + 1) + names.length + 4 * n + (cover == null ? 0 : 4 * n);
    }

    /**
     * Collects symbols in any order; {@link #build()} sorts them and keeps one symbol per address. Among
     * aliases at one address it prefers a known size, then any name over glibc's internal {@code __GI_} aliases,
     * then fewer leading underscores ({@code getpid} over {@code __getpid}), then global over weak over local
     * binding, then the first added.
     */
    public static final class Builder {
        /** Binding ranks for {@link #add(long, long, int, byte[], int, int)}: lower is preferred. */
        public static final int GLOBAL = 0;
        public static final int WEAK = 1;
        public static final int LOCAL = 2;

        /*
         * Collected in fixed-size chunks rather than arrays that double: /proc/kallsyms has ~120k text
         * symbols and ~3 MB of names, and doubling kept the old and new copies alive together and made
         * arrays larger than the agent's young generation, which went straight to the old generation and
         * raised the agent's peak RSS at every start. Entry i is at chunk i >>> SHIFT, slot i & MASK.
         */
        private static final int SHIFT = 12;
        private static final int CHUNK = 1 << SHIFT;
        private static final int MASK = CHUNK - 1;
        /** Names are packed into blocks of this size; a name never spans two (a longer one gets its own). */
        private static final int BLOCK = 1 << 16;

        private long[][] starts = new long[4][];
        private long[][] sizes = new long[4][];
        private int[][] nameBlock = new int[4][];
        private int[][] nameOff = new int[4][];
        private int[][] nameLen = new int[4][];
        private byte[][] rank = new byte[4][];
        private byte[][] blocks = new byte[4][];
        private int blockCount;
        private int blockUsed;
        private long blobSize;
        private int n;

        /** Adds a symbol; a name's bytes are kept as UTF-8. */
        public void add(long start, long size, String name) {
            byte[] b = name.getBytes(StandardCharsets.UTF_8);
            add(start, size, GLOBAL, b, 0, b.length);
        }

        /** Adds a symbol whose name is {@code len} bytes of {@code src} at {@code off}. */
        public void add(long start, long size, int bindingRank, byte[] src, int off, int len) {
            if (blobSize + len > Integer.MAX_VALUE - 16) {
                throw new IllegalStateException("symbol names exceed 2 GiB"); // callers cap well below
            }
            int c = n >>> SHIFT;
            if ((n & MASK) == 0) {
                if (c == starts.length) {
                    int cap = c * 2;
                    starts = Arrays.copyOf(starts, cap);
                    sizes = Arrays.copyOf(sizes, cap);
                    nameBlock = Arrays.copyOf(nameBlock, cap);
                    nameOff = Arrays.copyOf(nameOff, cap);
                    nameLen = Arrays.copyOf(nameLen, cap);
                    rank = Arrays.copyOf(rank, cap);
                }
                starts[c] = new long[CHUNK];
                sizes[c] = new long[CHUNK];
                nameBlock[c] = new int[CHUNK];
                nameOff[c] = new int[CHUNK];
                nameLen[c] = new int[CHUNK];
                rank[c] = new byte[CHUNK];
            }
            int slot = n & MASK;
            if (blockCount == 0 || BLOCK - blockUsed < len) {
                if (blockCount == blocks.length) {
                    blocks = Arrays.copyOf(blocks, blockCount * 2);
                }
                blocks[blockCount++] = new byte[Math.max(BLOCK, len)];
                blockUsed = 0;
            }
            System.arraycopy(src, off, blocks[blockCount - 1], blockUsed, len);
            starts[c][slot] = start;
            sizes[c][slot] = size;
            nameBlock[c][slot] = blockCount - 1;
            nameOff[c][slot] = blockUsed;
            nameLen[c][slot] = len;
            rank[c][slot] = (byte) bindingRank;
            blockUsed += len;
            blobSize += len;
            n++;
        }

        private long start(int i) {
            return starts[i >>> SHIFT][i & MASK];
        }

        private long size(int i) {
            return sizes[i >>> SHIFT][i & MASK];
        }

        private int len(int i) {
            return nameLen[i >>> SHIFT][i & MASK];
        }

        private byte[] block(int i) {
            return blocks[nameBlock[i >>> SHIFT][i & MASK]];
        }

        private int off(int i) {
            return nameOff[i >>> SHIFT][i & MASK];
        }

        public int count() {
            return n;
        }

        /** Bytes held so far (names and per-symbol arrays), to enforce a memory budget while adding. */
        long bytesHeld() {
            return blobSize + 33L * n;
        }

        public SymbolTable build() {
            int[] order = sortedByStart();
            // Keep the preferred symbol of each run of equal starts.
            int[] keep = new int[n];
            int k = 0;
            for (int a = 0; a < n; ) {
                int b = a + 1;
                long start = start(order[a]);
                while (b < n && start(order[b]) == start) {
                    b++;
                }
                int best = order[a];
                long knownSize = size(best);
                for (int c = a + 1; c < b; c++) {
                    int cand = order[c];
                    knownSize = Math.max(knownSize, size(cand));
                    if (better(cand, best)) {
                        best = cand;
                    }
                }
                if (size(best) == 0 && knownSize > 0) {
                    sizes[best >>> SHIFT][best & MASK] = knownSize; // an alias without size borrows its twin's size
                }
                keep[k++] = best;
                a = b;
            }
            long[] s = new long[k];
            int[] z = new int[k];
            int[] offs = new int[k + 1];
            int total = 0;
            for (int i = 0; i < k; i++) {
                total += len(keep[i]);
            }
            byte[] nm = new byte[total];
            int pos = 0;
            for (int i = 0; i < k; i++) {
                int j = keep[i];
                s[i] = start(j);
                z[i] = (int) Math.min(Integer.MAX_VALUE, Math.max(0, size(j)));
                offs[i] = pos;
                System.arraycopy(block(j), off(j), nm, pos, len(j));
                pos += len(j);
            }
            offs[k] = pos;
            return new SymbolTable(s, z, offs, nm, covers(s, z));
        }

        /**
         * For nested/overlapping symbols: cover[i] is the index j <= i whose sized symbol ends farthest.
         * An address past symbol i's end may still lie in symbol cover[i]. Null when nothing overlaps.
         */
        private static int[] covers(long[] s, int[] z) {
            int k = s.length;
            int[] cover = new int[k];
            boolean useful = false;
            int best = -1;
            long bestEnd = 0;
            for (int i = 0; i < k; i++) {
                long end = s[i] + z[i];
                if (best < 0 || Long.compareUnsigned(end, bestEnd) > 0) {
                    best = i;
                    bestEnd = end;
                }
                cover[i] = best;
                useful |= best != i && z[i] > 0;
            }
            return useful ? cover : null;
        }

        private boolean better(int a, int b) {
            if ((size(a) > 0) != (size(b) > 0)) {
                return size(a) > 0;
            }
            boolean ia = internalAlias(a);
            if (ia != internalAlias(b)) {
                return !ia;
            }
            int ua = underscores(a);
            int ub = underscores(b);
            if (ua != ub) {
                return ua < ub;
            }
            byte ra = rank[a >>> SHIFT][a & MASK];
            byte rb = rank[b >>> SHIFT][b & MASK];
            if (ra != rb) {
                return ra < rb;
            }
            return a < b;
        }

        /** glibc's hidden internal aliases ({@code __GI___clone3} beside {@code __clone3}): never the name users know. */
        private boolean internalAlias(int i) {
            byte[] blk = block(i);
            int off = off(i);
            return len(i) > 5 && blk[off] == '_' && blk[off + 1] == '_' && blk[off + 2] == 'G' && blk[off + 3] == 'I'
                    && blk[off + 4] == '_';
        }

        private int underscores(int i) {
            byte[] blk = block(i);
            int off = off(i);
            int len = len(i);
            int u = 0;
            while (u < len && blk[off + u] == '_') {
                u++;
            }
            return u;
        }

        /** Indices sorted by unsigned start, stable. */
        private int[] sortedByStart() {
            return stableOrderUnsigned(n, this::start);
        }
    }

    /**
     * Indices 0..n-1 ordered by {@code key} compared as unsigned, ties in index order: a primitive merge sort (no
     * boxing for a million symbols), shared by the symbol tables and the symbolizer's perf-map tables.
     */
    public static int[] stableOrderUnsigned(int n, java.util.function.IntToLongFunction key) {
        int[] a = new int[n];
        boolean sorted = true;
        for (int i = 0; i < n; i++) {
            a[i] = i;
            if (i > 0 && Long.compareUnsigned(key.applyAsLong(i - 1), key.applyAsLong(i)) > 0) {
                sorted = false;
            }
        }
        if (sorted) {
            return a;
        }
        int[] tmp = new int[n];
        for (int width = 1; width < n; width *= 2) {
            for (int lo = 0; lo < n; lo += 2 * width) {
                int mid = Math.min(lo + width, n);
                int hi = Math.min(lo + 2 * width, n);
                int i = lo;
                int j = mid;
                int o = lo;
                while (i < mid && j < hi) {
                    tmp[o++] = Long.compareUnsigned(key.applyAsLong(a[j]), key.applyAsLong(a[i])) < 0 ? a[j++] : a[i++];
                }
                while (i < mid) {
                    tmp[o++] = a[i++];
                }
                while (j < hi) {
                    tmp[o++] = a[j++];
                }
            }
            int[] t = a;
            a = tmp;
            tmp = t;
        }
        return a;
    }
}
