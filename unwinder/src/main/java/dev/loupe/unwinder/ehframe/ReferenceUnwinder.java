package dev.loupe.unwinder.ehframe;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * The executable specification of one table-driven unwind step on x86-64, which the BPF program
 * mirrors: given a frame's registers, find the rule for its PC in the compiled {@link UnwindTable} and
 * compute the caller's PC, SP and RBP.
 *
 * <pre>
 * lookup pc   = (exact ? pc : pc - 1) - bias   // a return address may be one past its call's function
 * CFA_RSP     cfa = sp + off                    CFA_RBP  cfa = bp + off (stop RBP_UNKNOWN if bp unknown)
 * PLT         cfa = sp + 8 + ((pc &amp; 15) &gt;= off ? 8 : 0)
 *             then: require cfa &gt; sp; ra = [cfa-8]; bp = RBP_SAVED ? [cfa+rbp_off] : RBP_UNCHANGED ? bp : unknown
 *             caller = {pc: ra, sp: cfa, exact: false}; ra == 0 ends the stack
 * SIGNAL      ctx = sp; caller = {pc: [ctx+168], sp: [ctx+160], bp: [ctx+120], exact: true}
 * STOP        the rule's reason
 * </pre>
 * PCs, SPs and BPs are the process's runtime values; {@code bias} is what the mapping adds to the file's
 * virtual addresses (0 for a non-PIE executable).
 */
public final class ReferenceUnwinder {
    private ReferenceUnwinder() {}

    /** The target's memory. */
    @FunctionalInterface
    public interface Memory {
        /** The 8 little-endian bytes at {@code address}, or empty if unreadable. */
        OptionalLong read64(long address);
    }

    /** Which table (and load bias) covers a runtime PC. */
    @FunctionalInterface
    public interface Tables {
        /** The table for the mapping containing {@code pc}, or null. */
        Mapped find(long pc);
    }

    /** A table and the bias its mapping adds to the file's addresses. */
    public record Mapped(UnwindTable table, long bias) {}

    /**
     * A frame's registers. {@code exactPc}: the PC is where execution is (the leaf, or the frame a
     * signal interrupted), not a return address. {@code bpKnown}: RBP holds this frame's real value.
     */
    public record Frame(long pc, long sp, long bp, boolean bpKnown, boolean exactPc) {
        /** The leaf frame, from the sampled registers. */
        public static Frame leaf(long pc, long sp, long bp) {
            return new Frame(pc, sp, bp, true, true);
        }
    }

    /** The caller's frame, or why there is none (exactly one is non-null). */
    public record Step(Frame caller, StopReason stop) {
        static Step stop(StopReason r) {
            return new Step(null, r);
        }
    }

    /** A walked stack: the frames from the leaf outwards and why the walk ended. */
    public record Walk(List<Frame> frames, StopReason end) {}

    /** One step from {@code f}, using {@code table} whose addresses are shifted by {@code bias}. */
    public static Step step(UnwindTable table, long bias, Frame f, Memory mem) {
        long lookup = (f.exactPc() ? f.pc() : f.pc() - 1) - bias;
        long rule = table.lookup(lookup);
        if (rule == UnwindRule.NOT_COVERED) {
            return Step.stop(StopReason.NO_TABLE);
        }
        long cfa;
        switch (UnwindRule.kind(rule)) {
            case UnwindRule.KIND_CFA_RSP -> cfa = f.sp() + UnwindRule.cfaOffset(rule);
            case UnwindRule.KIND_CFA_RBP -> {
                if (!f.bpKnown()) {
                    return Step.stop(StopReason.RBP_UNKNOWN);
                }
                cfa = f.bp() + UnwindRule.cfaOffset(rule);
            }
            case UnwindRule.KIND_PLT -> cfa = f.sp() + 8 + ((f.pc() & 15) >= UnwindRule.cfaOffset(rule) ? 8 : 0);
            case UnwindRule.KIND_SIGNAL -> {
                OptionalLong pc = mem.read64(f.sp() + UnwindRule.SIGNAL_RIP_OFFSET);
                OptionalLong sp = mem.read64(f.sp() + UnwindRule.SIGNAL_RSP_OFFSET);
                OptionalLong bp = mem.read64(f.sp() + UnwindRule.SIGNAL_RBP_OFFSET);
                if (pc.isEmpty() || sp.isEmpty() || bp.isEmpty()) {
                    return Step.stop(StopReason.MEMORY_READ_FAILED);
                }
                if (pc.getAsLong() == 0) {
                    return Step.stop(StopReason.ZERO_RETURN_ADDRESS);
                }
                return new Step(new Frame(pc.getAsLong(), sp.getAsLong(), bp.getAsLong(), true, true), null);
            }
            case UnwindRule.KIND_STOP -> {
                StopReason r = UnwindRule.stopReason(rule);
                return Step.stop(r == null ? StopReason.MALFORMED_FDE : r);
            }
            default -> {
                return Step.stop(StopReason.MALFORMED_FDE);
            }
        }
        if (Long.compareUnsigned(cfa, f.sp()) <= 0) {
            return Step.stop(StopReason.NO_PROGRESS);
        }
        OptionalLong ra = mem.read64(cfa - 8);
        if (ra.isEmpty()) {
            return Step.stop(StopReason.MEMORY_READ_FAILED);
        }
        if (ra.getAsLong() == 0) {
            return Step.stop(StopReason.ZERO_RETURN_ADDRESS);
        }
        long bp = f.bp();
        boolean bpKnown = f.bpKnown();
        switch (UnwindRule.rbpRule(rule)) {
            case UnwindRule.RBP_SAVED -> {
                OptionalLong saved = mem.read64(cfa + UnwindRule.rbpOffset(rule));
                if (saved.isEmpty()) {
                    return Step.stop(StopReason.MEMORY_READ_FAILED);
                }
                bp = saved.getAsLong();
                bpKnown = true;
            }
            case UnwindRule.RBP_UNCHANGED -> { }
            default -> {
                bp = 0;
                bpKnown = false;
            }
        }
        return new Step(new Frame(ra.getAsLong(), cfa, bp, bpKnown, false), null);
    }

    /** Walks from {@code leaf} for at most {@code maxFrames} frames (the leaf included). */
    public static Walk walk(Frame leaf, Tables tables, Memory mem, int maxFrames) {
        List<Frame> frames = new ArrayList<>();
        frames.add(leaf);
        Frame f = leaf;
        while (frames.size() < maxFrames) {
            Mapped m = tables.find(f.pc() - (f.exactPc() ? 0 : 1));
            if (m == null) {
                return new Walk(frames, StopReason.NO_TABLE);
            }
            Step s = step(m.table(), m.bias(), f, mem);
            if (s.caller() == null) {
                return new Walk(frames, s.stop());
            }
            f = s.caller();
            frames.add(f);
        }
        return new Walk(frames, StopReason.TRUNCATED);
    }
}
