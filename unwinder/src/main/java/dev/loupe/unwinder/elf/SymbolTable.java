package dev.loupe.unwinder.elf;

import java.util.Arrays;

/**
 * Function symbols sorted by address in primitive arrays: a lookup is one binary search, no boxing.
 * A symbol of size 0 covers up to the next symbol.
 */
public final class SymbolTable {
    public static final SymbolTable EMPTY = new SymbolTable(new long[0], new long[0], new String[0]);

    private final long[] starts;
    private final long[] sizes;
    private final String[] names;

    /** Arrays must be sorted by start and free of duplicate starts (see {@link Builder}). */
    SymbolTable(long[] starts, long[] sizes, String[] names) {
        this.starts = starts;
        this.sizes = sizes;
        this.names = names;
    }

    /** The function containing {@code vaddr}, or null. */
    public String lookup(long vaddr) {
        int i = Arrays.binarySearch(starts, vaddr);
        if (i < 0) {
            i = -i - 2; // greatest start below vaddr
        }
        if (i < 0) {
            return null;
        }
        long size = sizes[i];
        if (size > 0 ? vaddr - starts[i] < size : (i + 1 == starts.length || vaddr < starts[i + 1])) {
            return names[i];
        }
        return null;
    }

    public int size() {
        return starts.length;
    }

    /** Start address of the i-th symbol (sorted), for tests and tools. */
    public long start(int i) {
        return starts[i];
    }

    public String name(int i) {
        return names[i];
    }

    /** Rough heap bytes, for the cache weigher. */
    public long memoryFootprintBytes() {
        long b = 64 + 16L * starts.length + 8L * names.length;
        for (String n : names) {
            b += 40 + n.length();
        }
        return b;
    }

    /** Collects symbols in any order, then sorts and deduplicates (first added wins at an address). */
    public static final class Builder {
        private long[] starts = new long[1024];
        private long[] sizes = new long[1024];
        private String[] names = new String[1024];
        private int n;

        public void add(long start, long size, String name) {
            if (n == starts.length) {
                starts = Arrays.copyOf(starts, n * 2);
                sizes = Arrays.copyOf(sizes, n * 2);
                names = Arrays.copyOf(names, n * 2);
            }
            starts[n] = start;
            sizes[n] = size;
            names[n] = name;
            n++;
        }

        public int count() {
            return n;
        }

        public SymbolTable build() {
            Integer[] order = new Integer[n];
            for (int i = 0; i < n; i++) {
                order[i] = i;
            }
            // Stable sort: at equal addresses the first added (e.g. .symtab before .dynsym) stays first.
            Arrays.sort(order, (a, b) -> Long.compare(starts[a], starts[b]));
            long[] s = new long[n];
            long[] z = new long[n];
            String[] m = new String[n];
            int k = 0;
            for (int idx = 0; idx < n; idx++) {
                int i = order[idx];
                if (k > 0 && s[k - 1] == starts[i]) {
                    if (z[k - 1] == 0 && sizes[i] > 0) {
                        z[k - 1] = sizes[i];
                    }
                    continue;
                }
                s[k] = starts[i];
                z[k] = sizes[i];
                m[k] = names[i];
                k++;
            }
            return new SymbolTable(Arrays.copyOf(s, k), Arrays.copyOf(z, k), Arrays.copyOf(m, k));
        }
    }
}
