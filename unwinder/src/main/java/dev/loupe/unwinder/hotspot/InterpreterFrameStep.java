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
 */
public final class InterpreterFrameStep implements ReferenceUnwinder.RuntimeStep {
    public static final int SENDER_SP_OFFSET = -8;
    public static final int METHOD_OFFSET = -24;
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

    /** The {@code Method*} of the interpreter frame at {@code bp}, or empty if unreadable or 0. */
    public static OptionalLong method(long bp, ReferenceUnwinder.Memory mem) {
        OptionalLong m = mem.read64(bp + METHOD_OFFSET);
        return m.isPresent() && m.getAsLong() != 0 ? m : OptionalLong.empty();
    }
}
