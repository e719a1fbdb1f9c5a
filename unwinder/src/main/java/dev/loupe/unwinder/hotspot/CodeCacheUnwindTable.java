package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.ehframe.EhFrameException;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.ehframe.UnwindTableBuilder;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * An unwind table for a JVM's code cache, from the JVM's own description of each code blob: JIT code has no FDEs
 * and (without {@code -XX:+PreserveFramePointer}) no frame pointer, but HotSpot records each blob's frame size.
 * Rules, by blob (x86-64, as HotSpot's own {@code frame::sender} steps them):
 * <ul>
 *   <li>a blob with a frame size (nmethods, runtime stubs): from the frame-complete offset on, CFA = RSP + frame
 *       size, the caller's RBP saved at CFA-16 (every compiled prologue pushes RBP first); before it (the entry
 *       points and the stack bang, before {@code push rbp}) CFA = RSP + 8 with RBP unchanged;</li>
 *   <li>the interpreter: {@link UnwindRule#KIND_JAVA_INTERP}, with the offsets of its frames' bci;</li>
 *   <li>the vtable and itable stubs ("vtable chunks"): CFA = RSP + 8 throughout (each stub loads the method and jumps to
 *       it, pushing nothing);</li>
 *   <li>a generated stub that begins with {@code enter()} ({@code push rbp; mov rbp, rsp}; arraycopy, fill, CRC, crypto:
 *       most of the StubRoutines blobs', whose blobs record no frame size), or reaches it after moves between other
 *       registers ({@link HotSpotJvm#framedStubs}): CFA = RSP + 8 from its entry up to the push, RSP + 16 after the
 *       push, then RBP + 16 with the caller's RBP at CFA-16. The walker's checked frame-pointer step cannot take
 *       their frames: the caller (C2 code) keeps no frame pointer, so the RBP the stub saved is no frame's;</li>
 *   <li>anything else (adapters, buffer blobs, gaps): no unwind info, so the walker's checked frame-pointer step
 *       applies (the call stub keeps RBP).</li>
 * </ul>
 * Not exact: in an epilogue (after {@code add rsp; pop rbp}, or a stub's {@code leave}) and in the prologue's one
 * instruction between {@code push rbp} and {@code sub rsp} the frame-size rule is wrong; a sample lands there rarely, and the walk then
 * stops or skips a frame rather than crashing anything. PCs are runtime addresses (the table's bias is 0).
 */
public final class CodeCacheUnwindTable {
    private static final long FRAME_RSP_AT_ENTRY = UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 8, UnwindRule.RBP_UNCHANGED, 0);
    private static final long NO_INFO = UnwindRule.stop(StopReason.NO_UNWIND_INFO);
    /** After a stub's {@code push rbp}: the return address above the saved RBP. */
    private static final long STUB_PUSHED_RBP = UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 16, UnwindRule.RBP_SAVED, -16);
    /** After a stub's {@code mov rbp, rsp}: its frame is RBP's. */
    private static final long STUB_FRAMED = UnwindRule.cfa(UnwindRule.KIND_CFA_RBP, 16, UnwindRule.RBP_SAVED, -16);
    private static final long FRESH_CODE = UnwindRule.KIND_HOTSPOT_CODE;
    /** HotSpot's blob of vtable and itable stubs (VtableBlob, or a BufferBlob on JDK 8): none pushes anything. */
    static final String VTABLE_STUBS = "vtable chunks";
    /** Frames larger than this are not believed (HotSpot's own limit on compiled frames is far below). */
    static final int MAX_FRAME_BYTES = 1 << 20;

    private CodeCacheUnwindTable() {}

    /** Counts of what the table describes, for logs and tests. */
    public record Built(UnwindTable table, int compiledBlobs, int interpreterBlobs, int undescribedBlobs, int framedStubs) {}

    public static Built build(String name, CodeCache cache) throws EhFrameException {
        return build(name, cache, List.of());
    }

    /** As {@link #build(String, CodeCache)}, with the stubs that begin with {@code enter()} ({@link HotSpotJvm#framedStubs}). */
    public static Built build(String name, CodeCache cache, List<HotSpotJvm.Stub> framedStubs) throws EhFrameException {
        if (cache.segmentMapRules() != null && !cache.heaps().isEmpty()) {
            return withSegmentMaps(name, cache, framedStubs);
        }
        List<CodeBlob> blobs = new ArrayList<>(cache.blobs());
        blobs.sort(Comparator.comparingLong(CodeBlob::start));
        Rows r = new Rows(blobs.size() * 3 + 2 * cache.heaps().size() + 2, cache.interpreterRule(), framedStubs);
        long covered = Long.MIN_VALUE; // end of the last blob's rows
        for (CodeBlob b : blobs) {
            if (b.end() <= b.start() || b.start() < covered) {
                r.undescribed++;
                continue; // empty, or overlapping the one before (a stale read): left to the frame-pointer step
            }
            if (covered != b.start() && r.n > 0) {
                r.add(covered, NO_INFO);
            }
            r.blob(b);
            covered = b.end();
        }
        if (r.n > 0) {
            r.add(covered, NO_INFO);
        }
        return r.built(name);
    }

    /**
     * The table when the kernel can read the heaps' segment maps ({@link SegmentMapStep}): its layout words first, as
     * the rules of rows in the 64 KiB page below the lowest heap (no pc of the code cache lies there), then per heap
     * the blobs' rows as above, and everything else of the heap's committed memory (free blocks, code made after this
     * read) {@link UnwindRule#KIND_HOTSPOT_CODE}; no info between heaps and after the last.
     */
    private static Built withSegmentMaps(String name, CodeCache cache, List<HotSpotJvm.Stub> framedStubs) throws EhFrameException {
        List<CodeCache.Range> heaps = new ArrayList<>(cache.heaps());
        heaps.sort(Comparator.comparingLong(CodeCache.Range::low));
        List<CodeBlob> blobs = new ArrayList<>(cache.blobs());
        blobs.sort(Comparator.comparingLong(CodeBlob::start));
        long[] words = cache.segmentMapRules();
        long dataPage = (heaps.getFirst().low() & ~0xffffL) - 0x10000;
        if (dataPage <= 0) {
            throw new EhFrameException(EhFrameException.Problem.BAD_CFA_PROGRAM, name + ": no page below the code heap at 0x"
                    + Long.toHexString(heaps.getFirst().low()));
        }
        Rows r = new Rows(words.length + 1 + blobs.size() * 3 + heaps.size() * 2 + 2, cache.interpreterRule(), framedStubs);
        for (int k = 0; k < words.length; k++) {
            r.add(dataPage + 8L * k, words[k]);
        }
        r.add(dataPage + 8L * words.length, NO_INFO);
        int next = 0; // the first blob not yet placed
        for (int h = 0; h < heaps.size(); h++) {
            CodeCache.Range heap = heaps.get(h);
            if (heap.low() < r.pcs[r.n - 1] || heap.high() <= heap.low()) {
                continue; // overlapping the one before, or empty: a read that does not hold together is not walked by it
            }
            while (next < blobs.size() && blobs.get(next).start() < heap.low()) {
                next++;
                r.undescribed++; // outside every heap
            }
            long covered = heap.low();
            r.add(covered, FRESH_CODE);
            for (; next < blobs.size() && blobs.get(next).start() < heap.high(); next++) {
                CodeBlob b = blobs.get(next);
                if (b.end() <= b.start() || b.start() < covered || b.end() > heap.high()) {
                    r.undescribed++;
                    continue; // empty, overlapping the one before (a stale read) or past the heap: the segment map decides
                }
                if (b.start() != covered) {
                    r.add(covered, FRESH_CODE);
                }
                r.blob(b);
                covered = b.end();
            }
            if (covered < heap.high()) {
                r.add(covered, FRESH_CODE);
            }
            if (h + 1 == heaps.size() || heaps.get(h + 1).low() != heap.high()) {
                r.add(heap.high(), NO_INFO);
            }
        }
        r.undescribed += blobs.size() - next;
        return r.built(name);
    }

    /** The table's rows as they are placed, and counts of the blobs they describe. */
    private static final class Rows {
        final long[] pcs;
        final long[] rules;
        int n;
        int compiled;
        int interpreter;
        int undescribed;
        final long interpreterRule;

        final List<HotSpotJvm.Stub> framedStubs; // sorted by begin
        int framed; // stubs given rows

        Rows(int capacity, long interpreterRule, List<HotSpotJvm.Stub> framedStubs) {
            pcs = new long[capacity + 4 * framedStubs.size()];
            rules = new long[capacity + 4 * framedStubs.size()];
            this.interpreterRule = interpreterRule;
            this.framedStubs = framedStubs;
        }

        void add(long pc, long rule) {
            pcs[n] = pc;
            rules[n++] = rule;
        }

        /** A blob's rows: the interpreter's, a frame of its size (from its frame-complete point), or none. */
        void blob(CodeBlob b) {
            if (b.kind() == CodeBlob.Kind.INTERPRETER) {
                add(b.start(), interpreterRule);
                interpreter++;
            } else if (b.frameSizeBytes() > 0 && b.frameSizeBytes() <= MAX_FRAME_BYTES && b.frameSizeBytes() % 8 == 0) {
                long complete = b.frameCompleteAddress();
                boolean split = complete > b.start() && complete < b.end();
                add(b.start(), split ? FRAME_RSP_AT_ENTRY : framed(b.frameSizeBytes()));
                if (split) {
                    add(complete, framed(b.frameSizeBytes()));
                }
                compiled++;
            } else if (b.name().equals(VTABLE_STUBS)) {
                add(b.start(), FRAME_RSP_AT_ENTRY); // each stub jumps on to its method without a frame: the return address at RSP
                compiled++;
            } else if (!stubs(b)) {
                add(b.start(), NO_INFO);
                undescribed++;
            }
        }

        /** Rows for the framed stubs inside {@code b} (no info between them); false if it holds none. */
        private boolean stubs(CodeBlob b) {
            int i = 0;
            while (i < framedStubs.size() && framedStubs.get(i).begin() < b.start()) {
                i++;
            }
            long covered = b.start();
            boolean any = false;
            for (; i < framedStubs.size() && framedStubs.get(i).end() <= b.end(); i++) {
                HotSpotJvm.Stub st = framedStubs.get(i);
                if (st.begin() < covered || st.entry() < 0 || st.enter() < st.entry() || st.begin() + st.enter() + 4 >= st.end()) {
                    continue; // overlapping the one before: not believed
                }
                long entry = st.begin() + st.entry();
                long push = st.begin() + st.enter();
                if (entry > covered) {
                    add(covered, NO_INFO); // the blob's code before it, between two stubs, or the stub's jump before its entry
                }
                add(entry, FRAME_RSP_AT_ENTRY); // up to and on the push: moves between other registers, then push rbp
                add(push + 1, STUB_PUSHED_RBP);
                add(push + 4, STUB_FRAMED);
                covered = st.end();
                any = true;
                framed++;
            }
            if (any && covered < b.end()) {
                add(covered, NO_INFO);
            }
            if (any) {
                compiled++;
            }
            return any;
        }

        Built built(String name) throws EhFrameException {
            UnwindTable table = UnwindTableBuilder.fromRows(name, Arrays.copyOf(pcs, n), Arrays.copyOf(rules, n), n);
            return new Built(table, compiled, interpreter, undescribed, framed);
        }
    }

    /** CFA = RSP + frame size, the caller's RBP at CFA-16 and the return address at CFA-8. */
    static long framed(int frameSizeBytes) {
        return UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, frameSizeBytes, UnwindRule.RBP_SAVED, -16);
    }
}
