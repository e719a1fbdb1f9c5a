package dev.loupe.unwinder.hotspot;

import java.util.List;

/**
 * One snapshot of a JVM's code cache: its code heaps' committed ranges and the code blobs in them, in address
 * order within each heap. The JVM keeps running while it is read, so a blob may be gone by the time it is used.
 */
public record CodeCache(List<Range> heaps, List<CodeBlob> blobs) {
    public CodeCache {
        heaps = List.copyOf(heaps);
        blobs = List.copyOf(blobs);
    }

    /** A code heap's committed memory, [low, high). */
    public record Range(long low, long high) {}
}
