package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.ehframe.ReferenceUnwinder;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindRule;

import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * The spec of {@code hotspot.bpf.h}'s step for code no user-space scan has seen yet ({@link UnwindRule#KIND_HOTSPOT_CODE}:
 * the code table gives it to a code heap's memory outside the blobs it knew): code compiled, or a stub made, since the
 * last read of the code cache is walked at once, from the JVM's own memory, the way HotSpot finds a blob from a pc
 * ({@code CodeHeap::find_blob}). The heap's segment map has one byte a segment: 0 at a block's first segment, else how
 * many segments to hop back towards it (at most 254), 0xFF unused; at most {@link #MAX_HOPS} hops are taken. The
 * {@code HeapBlock} found must be in use and hold the pc; its {@code CodeBlob} (right after the block's header) must
 * hold the pc in its code and have a frame size: then CFA = RSP + 8 before the frame-complete offset (the prologue has
 * not pushed RBP) and RSP + frame size after it (both fields signed, of their VMStructs width), the caller's RBP at CFA-16, as {@link CodeCacheUnwindTable}'s rows.
 * Anything else (a read that fails, a free block, a torn one) is {@code NO_UNWIND_INFO}: the walker's checked
 * frame-pointer step, what such code had before. The name comes later, from user space's next read of the same blob.
 *
 * <p>The layout travels as the table's first {@link #DATA_WORDS} rules ({@link UnwindRule#KIND_HOTSPOT_DATA}; encoding
 * in loupe_abi.h's {@code enum hotspot_code_heap}), from the running JVM's VMStructs; a layout that does not fit it
 * (an offset past 255, more than {@link #MAX_HEAPS} heaps) gives no words and the heaps' gaps keep
 * {@code NO_UNWIND_INFO}.
 */
public final class SegmentMapStep implements ReferenceUnwinder.RuntimeStep {
    public static final int DATA_WORDS = 10;
    public static final int MAX_HEAPS = 4;
    public static final int MAX_HOPS = 48;
    public static final int MAX_FRAME_BYTES = 1 << 20;
    private static final long ADDRESS_MASK = (1L << 47) - 1;

    private final long[] words;

    /** The step for a table whose layout words are {@code words} (payloads, as {@link #words} makes them). */
    public SegmentMapStep(long[] words) {
        this.words = words.clone();
    }

    /** A code heap: its committed memory's low address, log2 of its segment size, its segment map's address. */
    public record Heap(long low, int log2SegmentSize, long segmap) {}

    /** loupe_abi.h's {@code enum hotspot_code_heap}, for the ABI check. */
    public static Map<String, Long> kernelConstants() {
        return Map.of("HOTSPOT_DATA_WORDS", (long) DATA_WORDS, "HOTSPOT_MAX_HEAPS", (long) MAX_HEAPS,
                "HOTSPOT_SEGMAP_HOPS", (long) MAX_HOPS, "HOTSPOT_MAX_FRAME_BYTES", (long) MAX_FRAME_BYTES);
    }

    /** The layout words as rules (kind {@link UnwindRule#KIND_HOTSPOT_DATA}), or null if the layout does not fit them. */
    static long[] rules(Layout l, List<Heap> heaps) {
        if (l.singleHeap) {
            // JDK 8 (one code heap, CodeCache::_heap): in FreshJitCodeTest its stacks through fresh OSR code ended
            // after the leaf, for a reason not found yet; its code made after a read keeps the no-info rows (an error
            // frame) rather than risk a wrong or cut stack.
            return null;
        }
        long[] w = words(l, heaps);
        if (w == null) {
            return null;
        }
        long[] r = new long[w.length];
        for (int k = 0; k < w.length; k++) {
            r[k] = w[k] << 8 | UnwindRule.KIND_HOTSPOT_DATA;
        }
        return r;
    }

    /** The layout words' payloads, each with its index in bits 52..55; null if the layout does not fit them. */
    static long[] words(Layout l, List<Heap> heaps) {
        if (heaps.isEmpty() || heaps.size() > MAX_HEAPS || l.heapBlockSize > 0xff) {
            return null;
        }
        Layout.Scalar begin = l.codeBegin != null ? l.codeBegin : l.codeOffset;
        Layout.Scalar end = l.codeEnd != null ? l.codeEnd : l.dataOffset;
        long length = field(l.blockHeader + l.blockLength.offset(), l.blockLength.width());
        long used = field(l.blockHeader + l.blockUsed.offset(), l.blockUsed.width());
        long frameSize = field(l.frameSize.offset(), l.frameSize.width());
        long complete = field(l.frameCompleteOffset.offset(), l.frameCompleteOffset.width());
        long b = field(begin.offset(), begin.width());
        long e = field(end.offset(), end.width());
        if (length < 0 || used < 0 || frameSize < 0 || complete < 0 || b < 0 || e < 0 || l.frameSize.width() < 2
                || l.frameCompleteOffset.width() < 2 || (l.codeBegin == null && (begin.width() != 4 || end.width() != 4))) {
            return null;
        }
        long[] w = new long[DATA_WORDS];
        w[0] = length | used << 10 | frameSize << 20 | complete << 30 | b << 40;
        w[1] = e | (l.codeBegin != null ? 1L : 0L) << 10 | l.heapBlockSize << 11;
        for (int h = 0; h < heaps.size(); h++) {
            Heap heap = heaps.get(h);
            if (heap.low() <= 0 || heap.low() > ADDRESS_MASK || heap.segmap() <= 0 || heap.segmap() > ADDRESS_MASK
                    || heap.log2SegmentSize() < 4 || heap.log2SegmentSize() > 20) {
                return null;
            }
            w[2 + 2 * h] = heap.low() | (long) heap.log2SegmentSize() << 47;
            w[3 + 2 * h] = heap.segmap();
        }
        for (int k = 0; k < DATA_WORDS; k++) {
            w[k] |= (long) k << 52;
        }
        return w;
    }

    /** A 10-bit field descriptor: offset (8 bits), log2 of the width (2 bits); -1 if it does not fit. */
    private static long field(long offset, int width) {
        int log2 = Integer.numberOfTrailingZeros(width);
        if (offset < 0 || offset > 0xff || width != 1 << log2 || log2 > 3) {
            return -1;
        }
        return offset | (long) log2 << 8;
    }

    @Override
    public ReferenceUnwinder.Step step(ReferenceUnwinder.Frame f, ReferenceUnwinder.Memory mem) {
        ReferenceUnwinder.Step fallback = ReferenceUnwinder.Step.stop(StopReason.NO_UNWIND_INFO);
        long pc = f.exactPc() ? f.pc() : f.pc() - 1;
        long fields = words[0];
        long more = words[1];
        long low = 0;
        long segmap = 0;
        int log2 = 0;
        for (int h = 0; h < MAX_HEAPS; h++) {
            long l = words[2 + 2 * h] & ADDRESS_MASK;
            if (l != 0 && Long.compareUnsigned(l, pc) <= 0 && l > low) {
                low = l;
                log2 = (int) (words[2 + 2 * h] >>> 47) & 31;
                segmap = words[3 + 2 * h] & ADDRESS_MASK;
            }
        }
        if (low == 0 || segmap == 0 || log2 < 4 || log2 > 20) {
            return fallback;
        }
        long idx = (pc - low) >>> log2;
        boolean found = false;
        for (int k = 0; k < MAX_HOPS; k++) {
            long at = segmap + idx; // the byte, from its aligned word (the kernel reads the one byte: same page)
            OptionalLong v = mem.read64(at & ~7L);
            if (v.isEmpty()) {
                return fallback;
            }
            long hop = v.getAsLong() >>> (8 * (at & 7)) & 0xff;
            if (hop == 0) {
                found = true;
                break;
            }
            if (hop == 0xff || hop > idx) {
                return fallback;
            }
            idx -= hop;
        }
        if (!found) {
            return fallback;
        }
        long block = low + (idx << log2);
        OptionalLong length = read(mem, block, fields);
        OptionalLong used = read(mem, block, fields >>> 10);
        if (length.isEmpty() || used.isEmpty() || used.getAsLong() == 0 || length.getAsLong() == 0
                || Long.compareUnsigned(length.getAsLong(), 1L << 32) > 0) {
            return fallback;
        }
        long blockEnd = block + (length.getAsLong() << log2);
        if (Long.compareUnsigned(pc, blockEnd) >= 0) {
            return fallback;
        }
        long blob = block + ((more >>> 11) & 0xff);
        OptionalLong frameWords = read(mem, blob, fields >>> 20);
        OptionalLong complete = read(mem, blob, fields >>> 30);
        OptionalLong b = read(mem, blob, fields >>> 40);
        OptionalLong e = read(mem, blob, more);
        if (frameWords.isEmpty() || complete.isEmpty() || b.isEmpty() || e.isEmpty()) {
            return fallback;
        }
        long begin = b.getAsLong();
        long end = e.getAsLong();
        if (((more >>> 10) & 1) == 0) {
            begin = blob + (begin & 0xffffffffL);
            end = blob + (end & 0xffffffffL);
        }
        if (Long.compareUnsigned(begin, blob) < 0 || Long.compareUnsigned(end, begin) < 0 || Long.compareUnsigned(end, blockEnd) > 0
                || Long.compareUnsigned(pc, begin) < 0 || Long.compareUnsigned(pc, end) >= 0) {
            return fallback;
        }
        long fw = signed(frameWords.getAsLong(), fields >>> 20);
        if (fw <= 0 || fw > MAX_FRAME_BYTES / 8) {
            return fallback;
        }
        long fco = signed(complete.getAsLong(), fields >>> 30);
        boolean entry = fco > 0 && begin + fco < end && pc < begin + fco;
        long cfa = f.sp() + (entry ? 8 : 8L * fw);
        OptionalLong ra = mem.read64(cfa - 8);
        OptionalLong savedBp = entry ? OptionalLong.of(f.bp()) : mem.read64(cfa - 16);
        if (ra.isEmpty() || savedBp.isEmpty() || ra.getAsLong() == 0) {
            return fallback;
        }
        return new ReferenceUnwinder.Step(new ReferenceUnwinder.Frame(ra.getAsLong(), cfa, savedBp.getAsLong(),
                entry ? f.bpKnown() : true, false), null);
    }

    /** A field's value as a signed integer of its width (frame size and frame-complete offset are int or int16_t). */
    private static long signed(long v, long desc) {
        int shift = 64 - 8 * (1 << ((desc >>> 8) & 3));
        return v << shift >> shift;
    }

    /** The field a descriptor's low 10 bits name, at {@code base}. */
    private static OptionalLong read(ReferenceUnwinder.Memory mem, long base, long desc) {
        OptionalLong v = mem.read64(base + (desc & 0xff));
        if (v.isEmpty()) {
            return v;
        }
        int width = 1 << ((desc >>> 8) & 3);
        return OptionalLong.of(width == 8 ? v.getAsLong() : v.getAsLong() & ((1L << (8 * width)) - 1));
    }
}
