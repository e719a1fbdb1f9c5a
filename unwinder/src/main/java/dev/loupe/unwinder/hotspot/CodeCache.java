package dev.loupe.unwinder.hotspot;

import java.util.List;

/**
 * One snapshot of a JVM's code cache: its code heaps' committed ranges and the code blobs in them, in address
 * order within each heap. The JVM keeps running while it is read, so a blob may be gone by the time it is used.
 * {@code segmentMapRules}: the layout words the kernel's {@link SegmentMapStep} reads (as rules), or null when the
 * JVM's layout does not fit them; then code made after the snapshot keeps frame pointers until the next.
 * {@code interpreterRule}: the interpreter's rule, with the offsets its frames' bci needs ({@link InterpreterFrameStep#rule}).
 */
public record CodeCache(List<Range> heaps, List<CodeBlob> blobs, long[] segmentMapRules, long interpreterRule) {
    public CodeCache {
        heaps = List.copyOf(heaps);
        blobs = List.copyOf(blobs);
        segmentMapRules = segmentMapRules == null ? null : segmentMapRules.clone();
    }

    public CodeCache(List<Range> heaps, List<CodeBlob> blobs, long[] segmentMapRules) {
        this(heaps, blobs, segmentMapRules, dev.loupe.unwinder.ehframe.UnwindRule.KIND_JAVA_INTERP);
    }

    public CodeCache(List<Range> heaps, List<CodeBlob> blobs) {
        this(heaps, blobs, null);
    }

    /** A code heap's committed memory, [low, high). */
    public record Range(long low, long high) {}
}
