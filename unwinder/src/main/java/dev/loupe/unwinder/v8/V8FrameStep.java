package dev.loupe.unwinder.v8;

import dev.loupe.unwinder.ehframe.ReferenceUnwinder;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.PackedFrameValue;

import java.util.HashMap;
import java.util.Map;
import java.util.OptionalLong;

/**
 * What {@code v8.bpf.h}'s step does and writes (the spec of its {@link UnwindRule#KIND_V8_FRAME} step, as a
 * {@link ReferenceUnwinder.RuntimeStep}): at a pc of V8's code, the frame at RBP is a frame-pointer frame; if its marker
 * slot holds a heap object (a context), it is a JavaScript frame, reported as a {@link FrameType#V8} value: the
 * SharedFunctionInfo (untagged) of the JSFunction in its function slot, shifted right by {@link #OBJECT_SHIFT}, above
 * {@link #OFFSET_BITS} of bytecode offset as the frame holds it ({@link #OFFSET_UNKNOWN} outside the builtins or when
 * the slot holds no Smi). An object of 0 is an error frame whose offset is its {@link Error}. The constants are
 * loupe_abi.h's {@code enum v8_abi} and {@code v8_error}, checked against the object's BTF ({@link #kernelConstants}).
 */
public final class V8FrameStep {
    public static final int OBJECT_SHIFT = 3;
    public static final int OFFSET_BITS = 12;
    public static final int OFFSET_UNKNOWN = (1 << OFFSET_BITS) - 1;
    public static final int DATA_WORDS = 1;
    public static final int SLOTS_BYTES = 48;
    public static final int MAX_FRAME_BYTES = 1 << 20;
    public static final int AUX_BUILTINS = 1;

    private V8FrameStep() {}

    /** Why the walker could not name a JavaScript frame ({@code enum v8_error}). */
    public enum Error implements PackedFrameValue.StepError {
        BAD_FUNCTION(1, "function slot holds no object"),
        READ(2, "function unreadable"),
        BAD_SHARED(3, "function's shared info is no object"),
        LAYOUT(4, "layout missing");

        final int code;
        final String text;

        Error(int code, String text) {
            this.code = code;
            this.text = text;
        }

        @Override
        public int code() {
            return code;
        }

        @Override
        public String text() {
            return text;
        }
    }

    private static final Error[] ERRORS = Error.values(); // not a copy per frame
    static final PackedFrameValue PACKED = new PackedFrameValue(OBJECT_SHIFT, OFFSET_BITS);

    /** The SharedFunctionInfo's (untagged) address in a frame value, 0 for an error frame. */
    public static long sharedAddress(long value) {
        return PACKED.object(value);
    }

    /** The bytecode offset as the frame holds it, or -1 when unknown. */
    public static int rawOffset(long value) {
        return PACKED.offset(value);
    }

    /** The value the walker writes (for tests and fakes). */
    public static long value(long sharedAddress, int rawOffset) {
        return PACKED.value(sharedAddress, rawOffset);
    }

    /** An error frame's error, or null when the value names an object. */
    public static Error error(long value) {
        return PACKED.error(value, ERRORS);
    }

    /** The layout word ({@link UnwindRule#KIND_V8_DATA}) for {@code layout}. */
    public static long dataWord(V8Layout layout) {
        long marker = -layout.get(V8Layout.Field.FP_MARKER);
        long function = -layout.get(V8Layout.Field.FP_FUNCTION);
        long offset = -layout.get(V8Layout.Field.FP_BYTECODE_OFFSET);
        long shared = layout.get(V8Layout.Field.JS_FUNCTION_SHARED);
        for (long d : new long[] {marker, function, offset}) {
            if (d <= 0 || d > SLOTS_BYTES || (d & 7) != 0) {
                throw new IllegalArgumentException("slot " + d + " below the frame pointer is not read by the walker");
            }
        }
        if (shared < 0 || shared > 0xffff) {
            throw new IllegalArgumentException("JSFunction's shared field at " + shared);
        }
        return UnwindRule.KIND_V8_DATA | marker << 8 | function << 16 | offset << 24 | shared << 32;
    }

    /** The reference unwinder's steps for {@link UnwindRule#KIND_V8_FRAME}: {@link #step}. */
    public static ReferenceUnwinder.RuntimeSteps steps() {
        return kind -> kind == UnwindRule.KIND_V8_FRAME ? V8FrameStep::step : null;
    }

    /** The walker's step from a frame of V8 code: the frame-pointer step, checked ({@code v8_frame_step}'s). */
    public static ReferenceUnwinder.Step step(ReferenceUnwinder.Frame f, ReferenceUnwinder.Memory mem) {
        long bp = f.bp();
        if (!f.bpKnown() || bp == 0) {
            return ReferenceUnwinder.Step.stop(StopReason.RBP_UNKNOWN);
        }
        if (Long.compareUnsigned(bp, f.sp()) < 0 || bp - f.sp() >= MAX_FRAME_BYTES) {
            return ReferenceUnwinder.Step.stop(StopReason.NO_PROGRESS);
        }
        OptionalLong savedBp = mem.read64(bp);
        OptionalLong ra = mem.read64(bp + 8);
        if (savedBp.isEmpty() || ra.isEmpty() || mem.read64(bp - SLOTS_BYTES).isEmpty()) {
            return ReferenceUnwinder.Step.stop(StopReason.MEMORY_READ_FAILED);
        }
        if (savedBp.getAsLong() != 0 && Long.compareUnsigned(savedBp.getAsLong(), bp) <= 0) {
            return ReferenceUnwinder.Step.stop(StopReason.NO_PROGRESS);
        }
        if (ra.getAsLong() == 0) {
            return ReferenceUnwinder.Step.stop(StopReason.ZERO_RETURN_ADDRESS);
        }
        return new ReferenceUnwinder.Step(new ReferenceUnwinder.Frame(ra.getAsLong(), bp + 16, savedBp.getAsLong(), true, false), null);
    }

    /**
     * What the walker reports in place of frame {@code f}'s pc, given the table's layout word {@code word} (or 0 when
     * the table has none) and whether the rule's aux says the builtins: the tagged {@link FrameType#V8} frame of a
     * JavaScript frame, or empty for any other frame (its pc stays).
     */
    public static OptionalLong frame(ReferenceUnwinder.Frame f, ReferenceUnwinder.Memory mem, long word, boolean builtins) {
        long bp = f.bp();
        boolean layout = (word & 0xff) == UnwindRule.KIND_V8_DATA;
        OptionalLong marker = mem.read64(bp - (word >>> 8 & 0xff));
        if (layout && (marker.isEmpty() || (marker.getAsLong() & 1) == 0)) {
            return OptionalLong.empty();
        }
        long value;
        if (!layout) {
            value = value(0, Error.LAYOUT.code);
        } else {
            OptionalLong function = mem.read64(bp - (word >>> 16 & 0xff));
            if (function.isEmpty() || (function.getAsLong() & 3) != 1) {
                value = value(0, Error.BAD_FUNCTION.code);
            } else {
                OptionalLong shared = mem.read64(function.getAsLong() - 1 + (word >>> 32 & 0xffff));
                if (shared.isEmpty()) {
                    value = value(0, Error.READ.code);
                } else if ((shared.getAsLong() & 3) != 1 || Long.compareUnsigned(shared.getAsLong(), 1L << 47) >= 0) {
                    value = value(0, Error.BAD_SHARED.code);
                } else {
                    int offset = -1;
                    OptionalLong raw = builtins ? mem.read64(bp - (word >>> 24 & 0xff)) : OptionalLong.empty();
                    if (raw.isPresent() && (raw.getAsLong() & 1) == 0 && (raw.getAsLong() >> 32) >= 0
                            && (raw.getAsLong() >> 32) < OFFSET_UNKNOWN) {
                        offset = (int) (raw.getAsLong() >> 32);
                    }
                    value = value(shared.getAsLong() - 1, offset);
                }
            }
        }
        return OptionalLong.of(FrameType.V8.frame(value));
    }

    /** loupe_abi.h's enumerators for these constants (the agent's {@code UnwinderAbi} hands them to the BTF check). */
    public static Map<String, Long> kernelConstants() {
        Map<String, Long> m = new HashMap<>(Map.of(
                "V8_OBJECT_SHIFT", (long) OBJECT_SHIFT,
                "V8_OFFSET_BITS", (long) OFFSET_BITS,
                "V8_OFFSET_UNKNOWN", (long) OFFSET_UNKNOWN,
                "V8_DATA_WORDS", (long) DATA_WORDS,
                "V8_SLOTS_BYTES", (long) SLOTS_BYTES,
                "V8_MAX_FRAME_BYTES", (long) MAX_FRAME_BYTES,
                "V8_AUX_BUILTINS", (long) AUX_BUILTINS));
        for (Error e : Error.values()) {
            m.put("V8_ERR_" + e.name(), (long) e.code);
        }
        return Map.copyOf(m);
    }
}
