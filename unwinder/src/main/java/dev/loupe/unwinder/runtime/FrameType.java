package dev.loupe.unwinder.runtime;

/**
 * The registry of tagged frames: a user "frame" the kernel's walk reports that is not a pc but a runtime's own value
 * (an interpreter frame's {@code Method*}, ...), written by that runtime's BPF step in place of the native frame it
 * stands for. Bits {@value #SHIFT}-62 hold the frame type, bits 0-55 the value; bit 63 is clear, so neither a user
 * address (below 2^47) nor an unwind marker (every top bit set) is one. One constant per type, each the value of the
 * enumerator of {@code enum frame_type} in loupe_abi.h named {@link #cName()} (checked against the object's BTF).
 */
public enum FrameType {
    /** HotSpot's template interpreter: the frame's {@code Method*} and bci (hotspot.bpf.h, {@code hotspot.InterpreterFrameStep.value}). */
    HOTSPOT_METHOD(0x40, "FRAME_TYPE_HOTSPOT_METHOD", "interpreted Java method"),
    /** CPython's interpreter frames: a code object and instruction index (python.bpf.h, {@code python.PythonFrameStep}). */
    PYTHON(0x41, "FRAME_TYPE_PYTHON", "Python frame"),
    /** V8's JavaScript frames: a SharedFunctionInfo and bytecode offset (v8.bpf.h, {@code v8.V8FrameStep}). */
    V8(0x42, "FRAME_TYPE_V8", "JavaScript frame");

    /** Where the type starts in a tagged frame (loupe_abi.h's {@code FRAME_TYPE_SHIFT}). */
    public static final int SHIFT = 56;
    private static final long VALUE_MASK = (1L << SHIFT) - 1;
    private static final FrameType[] BY_CODE = new FrameType[128];

    static {
        for (FrameType t : values()) {
            if (BY_CODE[t.code] != null) {
                throw new ExceptionInInitializerError("frame types " + BY_CODE[t.code] + " and " + t + " share code " + t.code);
            }
            BY_CODE[t.code] = t;
        }
    }

    private final int code;
    private final String cName;
    private final String description;

    FrameType(int code, String cName, String description) {
        if (code <= 0 || code > 127) {
            throw new IllegalArgumentException("frame type code " + code + " is not in 1..127");
        }
        this.code = code;
        this.cName = cName;
        this.description = description;
    }

    /** What such a frame is, for one no runtime can name ("[interpreted Java method]"). */
    public String description() {
        return description;
    }

    /** The type's code (bits 56-62 of its frames). */
    public int code() {
        return code;
    }

    /** The C enumerator that holds {@link #code()} in loupe_abi.h. */
    public String cName() {
        return cName;
    }

    /** The type of a walked user frame, or null for an address or a marker. */
    public static FrameType of(long frame) {
        return frame < 0 ? null : BY_CODE[(int) (frame >>> SHIFT)];
    }

    /** The runtime's value in a frame of this type. */
    public long value(long frame) {
        return frame & VALUE_MASK;
    }

    /** The frame the walker reports for {@code value} (its low 56 bits). */
    public long frame(long value) {
        return (long) code << SHIFT | (value & VALUE_MASK);
    }

    /** The first frame value of this type: a profile's mapping for these frames spans [rangeStart, rangeEnd). */
    public long rangeStart() {
        return (long) code << SHIFT;
    }

    public long rangeEnd() {
        return rangeStart() + (1L << SHIFT);
    }
}
