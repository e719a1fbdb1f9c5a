package dev.loupe.bpf;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.BiConsumer;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A created BPF map, addressed by fd. Keys and values are memory segments of exactly {@link #keySize()}
 * and {@link #valueSlotSize()} bytes (per-CPU maps hold one 8-byte-aligned value per possible CPU).
 * The kernel makes element operations atomic, so a map may be used from several threads.
 */
public final class BpfMap {
    public static final long BPF_ANY = 0;
    public static final long BPF_NOEXIST = 1;
    public static final long BPF_EXIST = 2;
    static final int TYPE_HASH = 1;
    static final int TYPE_ARRAY = 2;
    static final int TYPE_PERCPU_HASH = 5;
    static final int TYPE_PERCPU_ARRAY = 6;
    static final int TYPE_LRU_PERCPU_HASH = 10;
    private static final int ENOENT = 2;
    /** struct bpf_map_batch_opts (libbpf 1.1): sz@0, elem_flags@8, flags@16. */
    private static final int BATCH_OPTS_SIZE = 24;

    private final String name;
    private final int fd;
    private final int type;
    private final int keySize;
    private final int valueSize;
    private final int maxEntries;
    private final int cpus;

    BpfMap(String name, int fd, int type, int keySize, int valueSize, int maxEntries) throws BpfException {
        this.name = name;
        this.fd = fd;
        this.type = type;
        this.keySize = keySize;
        this.valueSize = valueSize;
        this.maxEntries = maxEntries;
        this.cpus = isPerCpu(type) ? LibBpf.numPossibleCpus() : 1;
    }

    private static boolean isPerCpu(int type) {
        return type == TYPE_PERCPU_HASH || type == TYPE_PERCPU_ARRAY || type == TYPE_LRU_PERCPU_HASH;
    }

    public String name() {
        return name;
    }

    /** The map's fd (another object shares the map by it: {@link BpfObject#shareMapsOf}). */
    int fd() {
        return fd;
    }

    int fdForRingBuffer() {
        return fd;
    }

    public int keySize() {
        return keySize;
    }

    /** The size of one value as the program sees it. */
    public int valueSize() {
        return valueSize;
    }

    /** The bytes a lookup fills: valueSize, or for per-CPU maps one 8-byte-aligned value per possible CPU. */
    public int valueSlotSize() {
        return cpus == 1 ? valueSize : ((valueSize + 7) & ~7) * cpus;
    }

    /** Possible CPUs for per-CPU maps, else 1. */
    public int cpus() {
        return cpus;
    }

    public int maxEntries() {
        return maxEntries;
    }

    /** Copies the value of {@code key} into {@code value}; false if there is none. */
    public boolean lookup(MemorySegment key, MemorySegment value) throws BpfException {
        check(key, value, 1);
        int rc = (int) LibBpf.MAP_LOOKUP_ELEM.raw(fd, key, value);
        if (rc == -ENOENT) {
            return false;
        }
        if (rc < 0) {
            throw LibBpf.MAP_LOOKUP_ELEM.failure(name, -rc);
        }
        return true;
    }

    /** Sets {@code key} to {@code value}; {@code flags} is {@link #BPF_ANY}, {@link #BPF_NOEXIST} or {@link #BPF_EXIST}. */
    public void update(MemorySegment key, MemorySegment value, long flags) throws BpfException {
        check(key, value, 1);
        LibBpf.MAP_UPDATE_ELEM.status(name, fd, key, value, flags);
    }

    /** Removes {@code key}; false if it was not there. */
    public boolean delete(MemorySegment key) throws BpfException {
        check(key, null, 1);
        int rc = (int) LibBpf.MAP_DELETE_ELEM.raw(fd, key);
        if (rc == -ENOENT) {
            return false;
        }
        if (rc < 0) {
            throw LibBpf.MAP_DELETE_ELEM.failure(name, -rc);
        }
        return true;
    }

    /** Sets {@code count} keys to values in one syscall (arrays of keySize / valueSlotSize entries). */
    public void updateBatch(MemorySegment keys, MemorySegment values, int count, long elemFlags) throws BpfException {
        check(keys, values, count);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment n = a.allocateFrom(JAVA_INT, count);
            LibBpf.MAP_UPDATE_BATCH.status(name + ", " + count + " elements", fd, keys, values, n, batchOpts(a, elemFlags));
            if (n.get(JAVA_INT, 0) != count) {
                throw new BpfException("bpf_map_update_batch(" + name + ") updated " + n.get(JAVA_INT, 0) + " of " + count, 0);
            }
        }
    }

    /** Deletes {@code count} keys in one syscall; every key must exist. */
    public void deleteBatch(MemorySegment keys, int count) throws BpfException {
        check(keys, null, count);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment n = a.allocateFrom(JAVA_INT, count);
            LibBpf.MAP_DELETE_BATCH.status(name + ", " + count + " elements", fd, keys, n, batchOpts(a, 0));
        }
    }

    /**
     * Reads the whole map in batches of up to {@code batchSize} elements, handing each key and value to
     * {@code each} (segments valid only during the call). Returns the element count.
     */
    public int forEachBatched(int batchSize, BiConsumer<MemorySegment, MemorySegment> each) throws BpfException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment keys = a.allocate((long) keySize * batchSize, 8);
            MemorySegment values = a.allocate((long) valueSlotSize() * batchSize, 8);
            // The batch token is opaque, sized like a key (hash maps) or a u32 (arrays): a key's size suffices for both.
            MemorySegment in = a.allocate(Math.max(keySize, 8), 8);
            MemorySegment out = a.allocate(Math.max(keySize, 8), 8);
            MemorySegment n = a.allocate(JAVA_INT);
            MemorySegment opts = batchOpts(a, 0);
            int total = 0;
            boolean first = true;
            while (true) {
                n.set(JAVA_INT, 0, batchSize);
                int rc = (int) LibBpf.MAP_LOOKUP_BATCH.raw(fd, first ? MemorySegment.NULL : in, out, keys, values, n, opts);
                if (rc < 0 && rc != -ENOENT) {
                    throw LibBpf.MAP_LOOKUP_BATCH.failure(name, -rc);
                }
                int got = n.get(JAVA_INT, 0); // on the last batch, -ENOENT may come with elements
                for (int i = 0; i < got; i++) {
                    each.accept(keys.asSlice((long) i * keySize, keySize),
                            values.asSlice((long) i * valueSlotSize(), valueSlotSize()));
                }
                total += got;
                if (rc == -ENOENT) {
                    return total;
                }
                MemorySegment.copy(out, 0, in, 0, in.byteSize());
                first = false;
            }
        }
    }

    /** Visits every key with bpf_map_get_next_key (works on every map type, one syscall per key). */
    public int forEachKey(java.util.function.Consumer<MemorySegment> each) throws BpfException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cur = a.allocate(keySize, 8);
            MemorySegment next = a.allocate(keySize, 8);
            int n = 0;
            boolean first = true;
            while (true) {
                int rc = (int) LibBpf.MAP_GET_NEXT_KEY.raw(fd, first ? MemorySegment.NULL : cur, next);
                if (rc == -ENOENT) {
                    return n;
                }
                if (rc < 0) {
                    throw LibBpf.MAP_GET_NEXT_KEY.failure(name, -rc);
                }
                each.accept(next);
                n++;
                MemorySegment.copy(next, 0, cur, 0, keySize);
                first = false;
            }
        }
    }

    // ---- conveniences for the common u32-keyed maps ----

    /** Sets u32 {@code key} to {@code value}. */
    public void update(int key, MemorySegment value, long flags) throws BpfException {
        try (Arena a = Arena.ofConfined()) {
            update(a.allocateFrom(JAVA_INT, key), value, flags);
        }
    }

    /** For a per-CPU map of u64 values: the sum over CPUs at u32 {@code key} (0 if absent). */
    public long sumPerCpuLong(int key) throws BpfException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(valueSlotSize(), 8);
            if (!lookup(a.allocateFrom(JAVA_INT, key), v)) {
                return 0;
            }
            long sum = 0;
            int stride = (valueSize + 7) & ~7;
            for (int c = 0; c < cpus; c++) {
                sum += v.get(JAVA_LONG, (long) c * stride);
            }
            return sum;
        }
    }

    private static MemorySegment batchOpts(Arena a, long elemFlags) {
        MemorySegment opts = a.allocate(BATCH_OPTS_SIZE, 8);
        opts.set(JAVA_LONG, 0, BATCH_OPTS_SIZE);
        opts.set(JAVA_LONG, 8, elemFlags);
        return opts;
    }

    private void check(MemorySegment keys, MemorySegment values, int count) {
        if (keys.byteSize() < (long) keySize * count) {
            throw new IllegalArgumentException(name + ": key buffer of " + keys.byteSize() + " bytes, need "
                    + (long) keySize * count);
        }
        if (values != null && values.byteSize() < (long) valueSlotSize() * count) {
            throw new IllegalArgumentException(name + ": value buffer of " + values.byteSize() + " bytes, need "
                    + (long) valueSlotSize() * count);
        }
    }

    @Override
    public String toString() {
        return "BpfMap[" + name + ", type " + type + ", key " + keySize + " B, value " + valueSize + " B, max " + maxEntries + "]";
    }
}
