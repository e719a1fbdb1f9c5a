package dev.loupe.agent.sampling;

/**
 * Open-addressing map from (mapping id, address) to location id, without boxing: the per-frame lookup
 * on the sampling thread. Within one profile window an address in a mapping always names the same
 * location, so this short-circuits the builder's own deduplication.
 */
final class LocationIds {
    private long[] mappings = new long[1024];
    private long[] addresses = new long[1024];
    private long[] ids = new long[1024]; // 0 = empty slot
    private int size;

    long get(long mappingId, long address) {
        int mask = ids.length - 1;
        for (int i = slot(mappingId, address, mask); ; i = (i + 1) & mask) {
            long id = ids[i];
            if (id == 0) {
                return 0;
            }
            if (addresses[i] == address && mappings[i] == mappingId) {
                return id;
            }
        }
    }

    void put(long mappingId, long address, long id) {
        if (2 * (size + 1) > ids.length) {
            grow();
        }
        int mask = ids.length - 1;
        int i = slot(mappingId, address, mask);
        while (ids[i] != 0) {
            i = (i + 1) & mask;
        }
        mappings[i] = mappingId;
        addresses[i] = address;
        ids[i] = id;
        size++;
    }

    int size() {
        return size;
    }

    private static int slot(long mappingId, long address, int mask) {
        long h = address * 0x9E3779B97F4A7C15L + mappingId;
        return (int) (h ^ (h >>> 29)) & mask;
    }

    private void grow() {
        long[] m = mappings;
        long[] a = addresses;
        long[] d = ids;
        mappings = new long[d.length * 2];
        addresses = new long[d.length * 2];
        ids = new long[d.length * 2];
        size = 0;
        for (int i = 0; i < d.length; i++) {
            if (d[i] != 0) {
                put(m[i], a[i], d[i]);
            }
        }
    }
}
