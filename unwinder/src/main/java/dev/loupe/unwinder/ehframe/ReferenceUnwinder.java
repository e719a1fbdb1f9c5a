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
 * <p>
 * Where the table has no unwind info ({@code STOP(NO_UNWIND_INFO)}: code without an FDE in a binary that has
 * them, such as V8's builtins or hand-written assembly), the walk tries one frame-pointer step and takes it
 * only if the frame passes {@link #noFdeStep}'s checks; otherwise it stops with {@code NO_UNWIND_INFO}.
 */
public final class ReferenceUnwinder {
    /**
     * How far above the stack pointer the frame of code without unwind info may lie for its frame-pointer
     * step (loupe_abi.h's {@code NO_FDE_MAX_FRAME_BYTES}).
     */
    public static final long NO_FDE_MAX_FRAME_BYTES = 8L << 20;

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

        /** Whether {@code pc} is in one of the process's executable mappings (by default: one with a table). */
        default boolean executable(long pc) {
            return find(pc) != null;
        }
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
        public static Step stop(StopReason r) {
            return new Step(null, r);
        }
    }

    /** A walked stack: the frames from the leaf outwards and why the walk ended. */
    public record Walk(List<Frame> frames, StopReason end) {}

    /**
     * A runtime's step for its own rule kind (from {@link UnwindRule#FIRST_RUNTIME_KIND}): the spec of that runtime's
     * BPF step, in the runtime's package (e.g. HotSpot's interpreter frames).
     */
    @FunctionalInterface
    public interface RuntimeStep {
        Step step(Frame f, Memory mem);
    }

    /** The runtime steps by rule kind (null for a kind none handles): none by default. */
    @FunctionalInterface
    public interface RuntimeSteps {
        RuntimeSteps NONE = kind -> null;

        RuntimeStep forKind(int kind);
    }

    /**
     * The step the walk takes from {@code f} in mapping {@code m}: the table's rule, or, where the table has no
     * unwind info, {@link #noFdeStep}.
     */
    public static Step step(Mapped m, Frame f, Tables tables, Memory mem) {
        return step(m, f, tables, mem, RuntimeSteps.NONE);
    }

    /** As above, with runtimes' steps for their rule kinds. */
    public static Step step(Mapped m, Frame f, Tables tables, Memory mem, RuntimeSteps runtimes) {
        Step s = step(m.table(), m.bias(), f, mem, runtimes);
        return s.stop() == StopReason.NO_UNWIND_INFO ? noFdeStep(f, tables, mem) : s;
    }

    /**
     * One frame-pointer step from code its table has no unwind info for, taken only if the frame looks real:
     * <ul>
     *   <li>bp is known, and the frame {saved rbp, return address} at bp lies at or above sp, less than
     *       {@link #NO_FDE_MAX_FRAME_BYTES} above it, and is readable;</li>
     *   <li>the saved rbp is 0 or above bp;</li>
     *   <li>the return address is in an executable mapping ({@code ra - 1}, where the caller's call is);</li>
     *   <li>if that mapping has a table and the 5 bytes before the return address are a direct
     *       {@code call rel32} whose target is in the same mapping, the target is not a function the table
     *       describes (a CFA rule or a signal frame): its caller called a function with an FDE, not this code,
     *       so bp is an ancestor's frame that code without a frame pointer left in place. The 8 bytes before
     *       the return address must be readable.</li>
     * </ul>
     * Then the caller is {pc: [bp+8], sp: bp+16, bp: [bp]}; otherwise the walk stops with {@code NO_UNWIND_INFO}.
     */
    public static Step noFdeStep(Frame f, Tables tables, Memory mem) {
        Step no = Step.stop(StopReason.NO_UNWIND_INFO);
        long bp = f.bp();
        if (!f.bpKnown() || bp == 0 || Long.compareUnsigned(bp, f.sp()) < 0
                || Long.compareUnsigned(bp - f.sp(), NO_FDE_MAX_FRAME_BYTES) >= 0) {
            return no;
        }
        OptionalLong saved = mem.read64(bp);
        OptionalLong ra = mem.read64(bp + 8);
        if (saved.isEmpty() || ra.isEmpty()) {
            return no;
        }
        if (saved.getAsLong() != 0 && Long.compareUnsigned(saved.getAsLong(), bp) <= 0) {
            return no;
        }
        long ret = ra.getAsLong();
        if (ret == 0 || !tables.executable(ret - 1)) {
            return no;
        }
        Mapped m = tables.find(ret - 1);
        if (m != null) {
            OptionalLong code = mem.read64(ret - 8);
            if (code.isEmpty()) {
                return no;
            }
            if (((code.getAsLong() >>> 24) & 0xff) == 0xe8) {
                long target = ret + (int) (code.getAsLong() >>> 32);
                if (m.equals(tables.find(target))) {
                    int kind = UnwindRule.kind(m.table().lookup(target - m.bias()));
                    if (kind == UnwindRule.KIND_CFA_RSP || kind == UnwindRule.KIND_CFA_RBP || kind == UnwindRule.KIND_SIGNAL) {
                        return no;
                    }
                }
            }
        }
        return new Step(new Frame(ret, bp + 16, saved.getAsLong(), true, false), null);
    }

    /**
     * One step from {@code f} by the rule alone, using {@code table} whose addresses are shifted by {@code bias}
     * (no frame-pointer step where it has no unwind info: that is {@link #step(Mapped, Frame, Tables, Memory)}).
     */
    public static Step step(UnwindTable table, long bias, Frame f, Memory mem) {
        return step(table, bias, f, mem, RuntimeSteps.NONE);
    }

    /** As above; a runtime's rule kind is stepped by {@code runtimes}' step for it (MALFORMED_FDE if none). */
    public static Step step(UnwindTable table, long bias, Frame f, Memory mem, RuntimeSteps runtimes) {
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
                RuntimeStep r = UnwindRule.kind(rule) >= UnwindRule.FIRST_RUNTIME_KIND ? runtimes.forKind(UnwindRule.kind(rule)) : null;
                return r == null ? Step.stop(StopReason.MALFORMED_FDE) : r.step(f, mem);
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
        return walk(leaf, tables, mem, maxFrames, RuntimeSteps.NONE);
    }

    /** As above, with runtimes' steps for their rule kinds. */
    public static Walk walk(Frame leaf, Tables tables, Memory mem, int maxFrames, RuntimeSteps runtimes) {
        List<Frame> frames = new ArrayList<>();
        frames.add(leaf);
        Frame f = leaf;
        while (frames.size() < maxFrames) {
            Mapped m = tables.find(f.pc() - (f.exactPc() ? 0 : 1));
            if (m == null) {
                return new Walk(frames, StopReason.NO_TABLE);
            }
            Step s = step(m, f, tables, mem, runtimes);
            if (s.caller() == null) {
                return new Walk(frames, s.stop());
            }
            f = s.caller();
            frames.add(f);
        }
        return new Walk(frames, StopReason.TRUNCATED);
    }
}
