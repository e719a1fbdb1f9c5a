package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Walks the code heaps as HotSpot lays them out (memory/heap.hpp): each heap's committed memory is a sequence of
 * HeapBlocks whose header gives the block's length in segments and whether it is in use; a used block holds a
 * CodeBlob right after the header. The segment map (one byte per segment, 0 at a block's first segment,
 * 0xFF past the last allocated one) says where allocation ends.
 */
final class CodeCacheReader {
    static final int MAX_HEAPS = 64;
    static final int MAX_BLOBS = 1_000_000;
    /**
     * HotSpot reserves all code heaps in one range of at most 2 GiB (ReservedCodeCacheSize's limit on x86-64): heaps
     * spanning more are not a JVM's, and reading their segment maps would cost more than any real one.
     */
    static final long MAX_CODE_CACHE_BYTES = 2L << 30;
    private static final int FREE_SENTINEL = 0xFF;

    private final ProcessMemory mem;
    private final Layout l;
    private final Map<Long, String> vtableClasses; // runtime vtable address -> CodeBlob subclass (no _kind field)
    private final BlobNames names;
    /** Used blocks whose blob did not hold together (being built or freed while read), in the last snapshot. */
    int skipped;
    /** Why, for the first few. */
    final List<String> skipReasons = new ArrayList<>();
    long preads;

    interface BlobNames {
        String name(long address) throws IOException;
    }

    CodeCacheReader(ProcessMemory mem, Layout layout, Map<Long, String> vtableClasses, BlobNames names) {
        this.mem = mem;
        this.l = layout;
        this.vtableClasses = vtableClasses;
        this.names = names;
    }

    CodeCache read() throws IOException, HotSpotException {
        skipped = 0;
        skipReasons.clear();
        preads = 0;
        long[] heapPointers = heaps();
        Heap[] hs = new Heap[heapPointers.length];
        for (int h = 0; h < heapPointers.length; h++) {
            hs[h] = heap(heapPointers[h], h);
        }
        checkTogether(hs);
        List<CodeCache.Range> heaps = new ArrayList<>();
        List<SegmentMapStep.Heap> segmaps = new ArrayList<>();
        List<CodeBlob> blobs = new ArrayList<>();
        for (Heap h : hs) {
            heaps.add(new CodeCache.Range(h.low, h.high));
            segmaps.add(new SegmentMapStep.Heap(h.low, (int) h.log2, h.segLow));
            walk(h, blobs);
        }
        // JDK 8 (its one code heap) has no mirror slot in its interpreter frames, so its bcp is a word nearer RBP
        long interpreter = InterpreterFrameStep.rule(l.singleHeap ? InterpreterFrameStep.BCP_SLOT_JDK8 : InterpreterFrameStep.BCP_SLOT,
                l.methodConstMethod.offset(), l.constMethodSize, l.constMethodCodeSize != null && l.constMethodCodeSize.width() == 2 ? l.constMethodCodeSize.offset() : -1);
        return new CodeCache(heaps, blobs, SegmentMapStep.rules(l, segmaps), interpreter);
    }

    /** A CodeHeap's committed range, segment size and segment map, each checked on its own. */
    private record Heap(String where, long low, long high, long log2, long segLow, long segHigh) {
        long segments() {
            return (high - low) >>> log2;
        }
    }

    private Heap heap(long heap, int index) throws IOException, HotSpotException {
        if (heap == 0) {
            throw new HotSpotException("CodeCache::_heaps[" + index + "] is null");
        }
        ByteBuffer hb = mem.read(heap, (int) l.heapSize);
        long low = l.vsLow.get(hb, (int) l.heapMemory);
        long high = l.vsHigh.get(hb, (int) l.heapMemory);
        long segLow = l.vsLow.get(hb, (int) l.heapSegmap);
        long segHigh = l.vsHigh.get(hb, (int) l.heapSegmap);
        long log2 = l.heapLog2SegmentSize.get(hb, 0);
        String where = "CodeHeap " + index + " at 0x" + Long.toHexString(heap);
        if (log2 < 4 || log2 > 20) {
            throw new HotSpotException(where + ": _log2_segment_size is " + log2);
        }
        if (low <= 0 || high < low || high - low > MAX_CODE_CACHE_BYTES || ((high - low) & ((1L << log2) - 1)) != 0) {
            throw new HotSpotException(where + ": _memory [0x" + Long.toHexString(low) + ", 0x" + Long.toHexString(high)
                    + ") is not a sane committed range");
        }
        long segments = (high - low) >>> log2;
        if (segLow <= 0 || segHigh - segLow < segments) {
            throw new HotSpotException(where + ": _segmap [0x" + Long.toHexString(segLow) + ", 0x" + Long.toHexString(segHigh)
                    + ") does not cover its " + segments + " segments");
        }
        if (l.heapBlockSize > (1L << log2)) {
            throw new HotSpotException(where + ": sizeof(HeapBlock) " + l.heapBlockSize + " is larger than a segment");
        }
        return new Heap(where, low, high, log2, segLow, segHigh);
    }

    /** The heaps are disjoint and lie within one code cache's reservation (HotSpot reserves them together). */
    private static void checkTogether(Heap[] hs) throws HotSpotException {
        long low = Long.MAX_VALUE;
        long high = Long.MIN_VALUE;
        for (int i = 0; i < hs.length; i++) {
            for (int j = 0; j < i; j++) {
                if (hs[i].low < hs[j].high && hs[j].low < hs[i].high) {
                    throw new HotSpotException(hs[i].where + " overlaps " + hs[j].where);
                }
            }
            low = Math.min(low, hs[i].low);
            high = Math.max(high, hs[i].high);
        }
        if (hs.length > 0 && high - low > MAX_CODE_CACHE_BYTES) {
            throw new HotSpotException("the code heaps span [0x" + Long.toHexString(low) + ", 0x" + Long.toHexString(high)
                    + "), more than a code cache's " + MAX_CODE_CACHE_BYTES + " bytes");
        }
    }

    /** The CodeHeap pointers of {@code CodeCache::_heaps} (a GrowableArray), or JDK 8's one {@code CodeCache::_heap}. */
    private long[] heaps() throws IOException, HotSpotException {
        if (l.singleHeap) {
            return new long[] {mem.readLong(l.heapsAddress)};
        }
        long array = mem.readLong(l.heapsAddress);
        if (array == 0) {
            throw new HotSpotException("CodeCache::_heaps is null");
        }
        ByteBuffer a = mem.read(array, (int) Math.max(l.arrayLen.end(), l.arrayData.end()));
        long len = l.arrayLen.get(a, 0);
        long data = l.arrayData.get(a, 0);
        if (len < 1 || len > MAX_HEAPS || data == 0) {
            throw new HotSpotException("CodeCache::_heaps has _len " + len + " and _data 0x" + Long.toHexString(data));
        }
        ByteBuffer ptrs = mem.read(data, (int) len * 8);
        long[] heaps = new long[(int) len];
        for (int i = 0; i < len; i++) {
            heaps[i] = ptrs.getLong(i * 8);
        }
        return heaps;
    }

    /** Segment map hops a lookup of one blob takes at most (254 segments each: a 1 MiB blob of 64-byte segments is 65). */
    static final int MAX_LOOKUP_HOPS = 256;
    /** Segment map bytes read at a time by a lookup. */
    private static final int LOOKUP_SEGMAP_BYTES = 4096;

    /**
     * The blob holding {@code pc}, found as HotSpot finds it ({@code CodeHeap::find_blob}): the heap holding the pc,
     * back through its segment map to the block's first segment, the block in use, its blob's code holding the pc; a
     * few small reads, for code made after the last {@link #read}. Null where any of it does not hold together
     * (a free block, a block being built or freed, a pc in no heap).
     */
    CodeBlob blobAt(long pc) throws IOException, HotSpotException {
        long[] heapPointers = heaps();
        for (int h = 0; h < heapPointers.length; h++) {
            Heap heap = heap(heapPointers[h], h);
            if (pc < heap.low || pc >= heap.high) {
                continue;
            }
            long idx = (pc - heap.low) >>> heap.log2;
            byte[] segmap = new byte[LOOKUP_SEGMAP_BYTES];
            long from = -1;
            boolean found = false;
            for (int k = 0; k < MAX_LOOKUP_HOPS; k++) {
                if (from < 0 || idx < from) {
                    from = Math.max(0, idx - (LOOKUP_SEGMAP_BYTES - 1));
                    mem.read(heap.segLow + from, ByteBuffer.wrap(segmap, 0, (int) (idx - from + 1)));
                }
                int hop = segmap[(int) (idx - from)] & 0xFF;
                if (hop == 0) {
                    found = true;
                    break;
                }
                if (hop == FREE_SENTINEL || hop > idx) {
                    return null;
                }
                idx -= hop;
            }
            if (!found) {
                return null;
            }
            long block = heap.low + (idx << heap.log2);
            Window w = new Window(mem, heap.high, (int) Math.min(Window.SIZE, Math.max(l.heapBlockSize + l.blobReadBytes, 1024)));
            int at = w.at(block, (int) l.heapBlockSize);
            long length = l.blockLength.get(w.buffer(), at + (int) l.blockHeader);
            boolean used = l.blockUsed.get(w.buffer(), at + (int) l.blockHeader) != 0;
            if (!used || length <= 0 || length > heap.segments() - idx) {
                return null;
            }
            CodeBlob cb = blob(w, block + l.heapBlockSize, block + (length << heap.log2));
            return cb != null && pc >= cb.start() && pc < cb.end() ? cb : null;
        }
        return null;
    }

    /**
     * A hash of every code heap's committed range and segment map: a blob allocated anywhere rewrites its segments'
     * entries, so a changed code cache almost always changes it, at the cost of reading one byte per segment (a
     * 128th of the heap) instead of the blobs. Not a proof: a block freed and reused by a blob of the same size
     * leaves it as it was; callers scan fully from time to time anyway.
     */
    long fingerprint() throws IOException, HotSpotException {
        long[] heapPointers = heaps();
        Heap[] hs = new Heap[heapPointers.length];
        for (int i = 0; i < heapPointers.length; i++) {
            hs[i] = heap(heapPointers[i], i);
        }
        checkTogether(hs);
        long h = 1125899906842597L;
        for (Heap heap : hs) {
            h = 31 * h + heap.low;
            h = 31 * h + heap.high;
            long segments = heap.segments();
            byte[] segmap = new byte[(int) Math.min(segments, Window.SIZE)];
            for (long off = 0; off < segments; off += segmap.length) {
                int n = (int) Math.min(segmap.length, segments - off);
                mem.read(heap.segLow + off, ByteBuffer.wrap(segmap, 0, n));
                h = 31 * h + java.util.Arrays.hashCode(n == segmap.length ? segmap : java.util.Arrays.copyOf(segmap, n));
            }
        }
        return h;
    }

    /**
     * The heap's blocks in address order: the segment map read in chunks of at most {@link Window#SIZE} as the walk
     * moves on (a heap of 2 GiB has a segment map of up to 128 MiB: never held whole), the blocks through a window.
     */
    private void walk(Heap heap, List<CodeBlob> blobs) throws IOException, HotSpotException {
        String where = heap.where;
        long low = heap.low;
        long log2 = heap.log2;
        long segments = heap.segments();
        byte[] segmap = new byte[(int) Math.min(segments, Window.SIZE)];
        long segmapFrom = 0;
        int segmapLength = 0;
        Window w = new Window(mem, heap.high);
        ByteBuffer b = w.buffer();
        int headerBytes = (int) l.heapBlockSize;
        long i = 0;
        while (i < segments) {
            if (i >= segmapFrom + segmapLength) {
                segmapFrom = i;
                segmapLength = (int) Math.min(segmap.length, segments - i);
                mem.read(heap.segLow + i, ByteBuffer.wrap(segmap, 0, segmapLength));
                preads++;
            }
            int tag = segmap[(int) (i - segmapFrom)] & 0xFF;
            if (tag == FREE_SENTINEL) {
                break; // nothing allocated from here on
            }
            long block = low + (i << log2);
            if (tag != 0) {
                throw new HotSpotException(where + ": _segmap holds " + tag + ", not 0, at the block at 0x" + Long.toHexString(block));
            }
            int at = w.at(block, headerBytes);
            long length = l.blockLength.get(b, at + (int) l.blockHeader);
            boolean used = l.blockUsed.get(b, at + (int) l.blockHeader) != 0;
            if (length <= 0 || length > segments - i) {
                throw new HotSpotException(where + ": the HeapBlock at 0x" + Long.toHexString(block) + " has _length " + length
                        + " segments, " + (length <= 0 ? "none" : "beyond the heap's " + (segments - i) + " left"));
            }
            long blockEnd = block + (length << log2);
            if (used) {
                if (blobs.size() >= MAX_BLOBS) {
                    throw new HotSpotException("more than " + MAX_BLOBS + " code blobs");
                }
                CodeBlob cb = blob(w, block + headerBytes, blockEnd);
                if (cb != null) {
                    blobs.add(cb);
                } else {
                    skipped++;
                }
            }
            i += length;
        }
        preads += w.reads;
    }

    /** The blob at {@code blob}, or null if its fields do not describe code inside its block. */
    private CodeBlob blob(Window w, long blob, long blockEnd) throws IOException {
        int need = (int) Math.min(l.blobReadBytes, blockEnd - blob);
        if (need < 16) { // 1
            return skip("blob at 0x" + Long.toHexString(blob) + ": block of " + (blockEnd - blob) + " bytes");
        }
        int at = w.at(blob, need);
        ByteBuffer b = w.buffer();
        long start;
        long end;
        if (l.codeBegin != null) {
            if (l.codeBegin.end() > need || l.codeEnd.end() > need) {
                return skip("blob at 0x" + Long.toHexString(blob) + ": header cut short (2)");
            }
            start = l.codeBegin.get(b, at);
            end = l.codeEnd.get(b, at);
        } else {
            if (l.codeOffset.end() > need || l.dataOffset.end() > need) {
                return skip("blob at 0x" + Long.toHexString(blob) + ": header cut short (3)");
            }
            start = blob + l.codeOffset.get(b, at);
            end = blob + l.dataOffset.get(b, at);
        }
        if (start < blob || end < start || end > blockEnd) {
            return skip("blob at 0x" + Long.toHexString(blob) + ": code [0x" + Long.toHexString(start) + ", 0x"
                    + Long.toHexString(end) + ") outside its block ending 0x" + Long.toHexString(blockEnd));
        }
        if (l.frameSize.end() > need || l.frameCompleteOffset.end() > need || l.blobName.end() > need) {
            return skip("blob at 0x" + Long.toHexString(blob) + ": header cut short (4)");
        }
        long frameWords = l.frameSize.get(b, at);
        if (frameWords < -1 || frameWords > (1 << 20)) {
            return skip("blob at 0x" + Long.toHexString(blob) + ": _frame_size " + frameWords + " words");
        }
        long fco = l.frameCompleteOffset.get(b, at);
        long frameComplete = fco < 0 || start + fco > end ? -1 : start + fco;
        String className;
        if (l.kind != null) {
            if (l.kind.end() > need) {
                return skip("blob at 0x" + Long.toHexString(blob) + ": header cut short (6)");
            }
            className = l.kindClasses.get(l.kind.get(b, at));
        } else {
            className = vtableClasses.isEmpty() ? null : vtableClasses.getOrDefault(b.getLong(at), "?");
        }
        long namePtr = l.blobName.get(b, at);
        String name = namePtr == 0 ? "" : names.name(namePtr);
        CodeBlob.Kind kind = kindOf(className, name);
        long method = 0;
        if (kind == CodeBlob.Kind.NMETHOD) {
            if (l.nmethodMethod.end() > need) {
                return skip("blob at 0x" + Long.toHexString(blob) + ": header cut short (7)");
            }
            method = l.nmethodMethod.get(b, at);
        }
        return new CodeBlob(kind, blob, start, end, frameComplete, frameWords < 0 ? -1 : (int) frameWords * 8, name, method);
    }

    private CodeBlob skip(String why) {
        if (skipReasons.size() < 16) {
            skipReasons.add(why);
        }
        return null;
    }

    /** From the blob's class when known; by HotSpot's names for it when neither a kind field nor vtables are there. */
    static CodeBlob.Kind kindOf(String className, String name) {
        if (className == null) {
            if (name.equals("nmethod")) {
                return CodeBlob.Kind.NMETHOD;
            }
            if (name.equals("Interpreter")) {
                return CodeBlob.Kind.INTERPRETER;
            }
            return CodeBlob.Kind.OTHER;
        }
        return switch (className) {
            case "nmethod" -> CodeBlob.Kind.NMETHOD;
            case "BufferBlob" -> name.equals("Interpreter") ? CodeBlob.Kind.INTERPRETER : CodeBlob.Kind.BUFFER_BLOB;
            case "AdapterBlob", "MethodHandlesAdapterBlob" -> CodeBlob.Kind.ADAPTER;
            case "RuntimeStub" -> CodeBlob.Kind.RUNTIME_STUB;
            default -> CodeBlob.Kind.OTHER;
        };
    }
}
