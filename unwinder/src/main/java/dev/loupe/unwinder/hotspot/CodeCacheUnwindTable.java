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
 *   <li>the interpreter: {@link UnwindRule#KIND_JAVA_INTERP};</li>
 *   <li>anything else (adapters, buffer blobs, gaps): no unwind info, so the walker's checked frame-pointer step
 *       applies (the call stub keeps RBP).</li>
 * </ul>
 * Not exact: in an epilogue (after {@code add rsp; pop rbp}) and in the prologue's one instruction between
 * {@code push rbp} and {@code sub rsp} the frame-size rule is wrong; a sample lands there rarely, and the walk then
 * stops or skips a frame rather than crashing anything. PCs are runtime addresses (the table's bias is 0).
 */
public final class CodeCacheUnwindTable {
    private static final long FRAME_RSP_AT_ENTRY = UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 8, UnwindRule.RBP_UNCHANGED, 0);
    private static final long INTERPRETER = UnwindRule.KIND_JAVA_INTERP;
    private static final long NO_INFO = UnwindRule.stop(StopReason.NO_UNWIND_INFO);
    /** Frames larger than this are not believed (HotSpot's own limit on compiled frames is far below). */
    static final int MAX_FRAME_BYTES = 1 << 20;

    private CodeCacheUnwindTable() {}

    /** Counts of what the table describes, for logs and tests. */
    public record Built(UnwindTable table, int compiledBlobs, int interpreterBlobs, int undescribedBlobs) {}

    public static Built build(String name, CodeCache cache) throws EhFrameException {
        List<CodeBlob> blobs = new ArrayList<>(cache.blobs());
        blobs.sort(Comparator.comparingLong(CodeBlob::start));
        long[] pcs = new long[blobs.size() * 3 + 2 * cache.heaps().size() + 2];
        long[] rules = new long[pcs.length];
        int n = 0;
        int compiled = 0;
        int interpreter = 0;
        int undescribed = 0;
        long covered = Long.MIN_VALUE; // end of the last blob's rows
        for (CodeBlob b : blobs) {
            if (b.end() <= b.start() || b.start() < covered) {
                undescribed++;
                continue; // empty, or overlapping the one before (a stale read): left to the frame-pointer step
            }
            if (covered != b.start() && n > 0) {
                pcs[n] = covered;
                rules[n++] = NO_INFO;
            }
            if (b.kind() == CodeBlob.Kind.INTERPRETER) {
                pcs[n] = b.start();
                rules[n++] = INTERPRETER;
                interpreter++;
            } else if (b.frameSizeBytes() > 0 && b.frameSizeBytes() <= MAX_FRAME_BYTES && b.frameSizeBytes() % 8 == 0) {
                long complete = b.frameCompleteAddress();
                boolean split = complete > b.start() && complete < b.end();
                pcs[n] = b.start();
                rules[n++] = split ? FRAME_RSP_AT_ENTRY : framed(b.frameSizeBytes());
                if (split) {
                    pcs[n] = complete;
                    rules[n++] = framed(b.frameSizeBytes());
                }
                compiled++;
            } else {
                pcs[n] = b.start();
                rules[n++] = NO_INFO;
                undescribed++;
            }
            covered = b.end();
        }
        if (n > 0) {
            pcs[n] = covered;
            rules[n++] = NO_INFO;
        }
        UnwindTable table = UnwindTableBuilder.fromRows(name, Arrays.copyOf(pcs, n), Arrays.copyOf(rules, n), n);
        return new Built(table, compiled, interpreter, undescribed);
    }

    /** CFA = RSP + frame size, the caller's RBP at CFA-16 and the return address at CFA-8. */
    static long framed(int frameSizeBytes) {
        return UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, frameSizeBytes, UnwindRule.RBP_SAVED, -16);
    }
}
