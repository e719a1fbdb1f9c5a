package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.ehframe.ReferenceUnwinder;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindRule;

import java.util.OptionalLong;

/**
 * The spec of {@code hotspot.bpf.h}'s step for HotSpot's template interpreter frames ({@link UnwindRule#KIND_JAVA_INTERP},
 * x86-64, JDK 8 to 25). The frame is RBP-based: [bp] the caller's RBP, [bp+8] the return address, [bp-8] the sender's
 * SP ({@link #SENDER_SP_OFFSET}), [bp-24] the {@code Method*} being run ({@link #METHOD_OFFSET}). The caller's SP is
 * the sender SP if it lies at or above bp+16 and within {@link ReferenceUnwinder#NO_FDE_MAX_FRAME_BYTES} of sp (a
 * compiled caller's adapter extended the stack for the callee's locals, so bp+16 is not its SP), else bp+16. The
 * walker reports the frame as its tagged {@code Method*} ({@code FrameType.HOTSPOT_METHOD}), since the interpreter's pc
 * names no method. The offsets are loupe_abi.h's {@code enum hotspot_interp_frame}.
 *
 * <p>The tagged value also carries the frame's bytecode index ({@link #value}): {@code Method*} >> {@value #METHOD_SHIFT}
 * (metaspace allocations are word-aligned) above {@value #BCI_BITS} bits of bci, {@link #BCI_UNKNOWN} where it is not
 * known or does not fit (methods rarely have 4 KiB of bytecode; such a frame keeps its name without a line). bci =
 * bcp - (ConstMethod* + sizeof(ConstMethod)), the bytecodes following the ConstMethod; it counts only below the
 * method's {@code _code_size}. The bcp is the frame's slot {@code bcpSlot} words below RBP (frame_x86.hpp:
 * {@code interpreter_frame_bcp_offset}, -8 since JDK 9 added the mirror slot, -7 on JDK 8; VMStructs does not export
 * it), which the interpreter writes before every call; in the leaf frame, interrupted in the interpreter itself, the
 * slot may be stale and the live bcp is in R13 ({@code templateInterpreterGenerator_x86.cpp}'s {@code _bcp_register}).
 * The walk's rule for the interpreter carries the offsets ({@link #rule}); a rule without them gives no bci.
 */
public final class InterpreterFrameStep implements ReferenceUnwinder.RuntimeStep {
    public static final int SENDER_SP_OFFSET = -8;
    public static final int METHOD_OFFSET = -24;
    public static final int METHOD_SHIFT = 3;
    public static final int BCI_BITS = 12;
    public static final int BCI_UNKNOWN = (1 << BCI_BITS) - 1;
    /** The bcp slot, in words below RBP: JDK 9 to 25 (a mirror slot before it), and JDK 8. */
    public static final int BCP_SLOT = 8;
    public static final int BCP_SLOT_JDK8 = 7;
    public static final InterpreterFrameStep INSTANCE = new InterpreterFrameStep();

    private InterpreterFrameStep() {}

    /** HotSpot's steps by rule kind, for {@link ReferenceUnwinder#walk}. */
    public static ReferenceUnwinder.RuntimeSteps steps() {
        return kind -> kind == UnwindRule.KIND_JAVA_INTERP ? INSTANCE : null;
    }

    @Override
    public ReferenceUnwinder.Step step(ReferenceUnwinder.Frame f, ReferenceUnwinder.Memory mem) {
        if (!f.bpKnown()) {
            return ReferenceUnwinder.Step.stop(StopReason.RBP_UNKNOWN);
        }
        long bp = f.bp();
        OptionalLong senderSp = mem.read64(bp + SENDER_SP_OFFSET);
        OptionalLong savedBp = mem.read64(bp);
        OptionalLong ra = mem.read64(bp + 8);
        if (senderSp.isEmpty() || savedBp.isEmpty() || ra.isEmpty()) {
            return ReferenceUnwinder.Step.stop(StopReason.MEMORY_READ_FAILED);
        }
        if (ra.getAsLong() == 0) {
            return ReferenceUnwinder.Step.stop(StopReason.ZERO_RETURN_ADDRESS);
        }
        long sp = bp + 16;
        long sender = senderSp.getAsLong();
        if (Long.compareUnsigned(sender, sp) >= 0
                && Long.compareUnsigned(sender - f.sp(), ReferenceUnwinder.NO_FDE_MAX_FRAME_BYTES) < 0) {
            sp = sender;
        }
        if (Long.compareUnsigned(sp, f.sp()) <= 0) {
            return ReferenceUnwinder.Step.stop(StopReason.NO_PROGRESS);
        }
        return new ReferenceUnwinder.Step(new ReferenceUnwinder.Frame(ra.getAsLong(), sp, savedBp.getAsLong(), true, false), null);
    }

    /** loupe_abi.h's constants of the tagged value and the rule's operands, for the ABI check. */
    public static java.util.Map<String, Long> kernelConstants() {
        return java.util.Map.of("HOTSPOT_INTERP_SENDER_SP_OFFSET", (long) SENDER_SP_OFFSET,
                "HOTSPOT_INTERP_METHOD_OFFSET", (long) METHOD_OFFSET, "HOTSPOT_METHOD_SHIFT", (long) METHOD_SHIFT,
                "HOTSPOT_BCI_BITS", (long) BCI_BITS, "HOTSPOT_BCI_UNKNOWN", (long) BCI_UNKNOWN);
    }

    /**
     * The interpreter's rule with the offsets the kernel needs for the bci: aux the bcp slot (words below RBP), then a
     * byte each: {@code Method::_constMethod}'s offset, sizeof(ConstMethod), {@code ConstMethod::_code_size}'s offset
     * (a u2). The plain kind (no bci) if any does not fit a byte.
     */
    public static long rule(int bcpSlot, long constMethodOffset, long constMethodSize, long codeSizeOffset) {
        if (bcpSlot <= 0 || bcpSlot > 0xff || constMethodOffset < 0 || constMethodOffset > 0xff || constMethodSize <= 0
                || constMethodSize > 0xff || codeSizeOffset < 0 || codeSizeOffset + 2 > constMethodSize) {
            return UnwindRule.KIND_JAVA_INTERP;
        }
        return UnwindRule.KIND_JAVA_INTERP | (long) bcpSlot << 8 | constMethodOffset << 16 | constMethodSize << 24
                | codeSizeOffset << 32;
    }

    /** The tagged frame's value for {@code method} at {@code bci} ({@link #BCI_UNKNOWN} if it does not fit). */
    public static long value(long method, int bci) {
        return (method >>> METHOD_SHIFT) << BCI_BITS | (bci < 0 || bci >= BCI_UNKNOWN ? BCI_UNKNOWN : bci);
    }

    /** The {@code Method*} of a tagged value. */
    public static long methodOf(long value) {
        return (value >>> BCI_BITS) << METHOD_SHIFT;
    }

    /** The bci of a tagged value, or -1 if unknown. */
    public static int bciOf(long value) {
        int bci = (int) (value & BCI_UNKNOWN);
        return bci == BCI_UNKNOWN ? -1 : bci;
    }

    /**
     * The spec of the kernel's bci: of the interpreter frame at {@code bp} running {@code method}, under {@code rule};
     * {@code leaf}: the frame was interrupted in the interpreter itself, its bcp {@code r13}. {@link #BCI_UNKNOWN} when
     * the rule has no offsets, a read fails or the bcp is outside the method's bytecodes.
     */
    public static int bci(long rule, long bp, long method, boolean leaf, long r13, ReferenceUnwinder.Memory mem) {
        int slot = (int) (rule >>> 8) & 0xff;
        if (slot == 0) {
            return BCI_UNKNOWN;
        }
        OptionalLong bcp = leaf ? OptionalLong.of(r13) : mem.read64(bp - 8L * slot);
        OptionalLong cm = mem.read64(method + ((rule >>> 16) & 0xff));
        if (bcp.isEmpty() || cm.isEmpty()) {
            return BCI_UNKNOWN;
        }
        OptionalLong size = mem.read64(cm.getAsLong() + ((rule >>> 32) & 0xff));
        if (size.isEmpty()) {
            return BCI_UNKNOWN;
        }
        long bci = bcp.getAsLong() - cm.getAsLong() - ((rule >>> 24) & 0xff);
        long codeSize = size.getAsLong() & 0xffff;
        return bci >= 0 && bci < codeSize && bci < BCI_UNKNOWN ? (int) bci : BCI_UNKNOWN;
    }

    /** The {@code Method*} of the interpreter frame at {@code bp}, or empty if unreadable or 0. */
    public static OptionalLong method(long bp, ReferenceUnwinder.Memory mem) {
        OptionalLong m = mem.read64(bp + METHOD_OFFSET);
        return m.isPresent() && m.getAsLong() != 0 ? m : OptionalLong.empty();
    }
}
