package dev.loupe.unwinder.python;

import java.util.Map;

/**
 * What {@code python.bpf.h}'s step writes, read back: a {@code FrameType.PYTHON} value is the code object's address
 * shifted right by {@link #CODE_SHIFT} (objects are 16-byte aligned) above {@link #INDEX_BITS} of instruction index in
 * code units ({@link #INDEX_UNKNOWN} when it does not fit); a code address of 0 is an error frame whose index is the
 * {@link Error}. The constants are loupe_abi.h's {@code enum python_abi}, {@code python_variant} and
 * {@code python_error}, checked against the object's BTF ({@link #kernelConstants}).
 */
public final class PythonFrameStep {
    public static final int CODE_SHIFT = 4;
    public static final int INDEX_BITS = 13;
    public static final int INDEX_UNKNOWN = (1 << INDEX_BITS) - 1;
    public static final int DATA_WORDS = 5;
    public static final int MAX_THREADS = 64;
    public static final int MAX_FRAMES_PER_EVAL = 64;
    /** The head of a frame the walker reads at once: the frame fields a layout names must lie in it. */
    public static final int FRAME_BYTES = 128;

    private PythonFrameStep() {}

    /** Why the walker could not report a call's interpreter frames ({@code enum python_error}). */
    public enum Error {
        NO_THREAD(1, "no thread state"),
        READ(2, "frame chain unreadable"),
        BAD_CODE(3, "bad code object pointer"),
        NO_FRAMES(4, "frame chain ended early"),
        LAYOUT(5, "layout missing");

        final int code;
        final String text;

        Error(int code, String text) {
            this.code = code;
            this.text = text;
        }

        public String text() {
            return text;
        }

        static Error of(long code) {
            for (Error e : values()) {
                if (e.code == code) {
                    return e;
                }
            }
            return null;
        }
    }

    /** The code object's address in a frame value (0 for an error frame). */
    public static long codeAddress(long value) {
        return (value >>> INDEX_BITS) << CODE_SHIFT;
    }

    /** The instruction index in code units, or -1 when unknown. */
    public static int instructionIndex(long value) {
        int i = (int) (value & INDEX_UNKNOWN);
        return i == INDEX_UNKNOWN ? -1 : i;
    }

    /** The value the walker writes for a code object and an index (for tests and fakes). */
    public static long value(long codeAddress, int index) {
        return (codeAddress >>> CODE_SHIFT) << INDEX_BITS | (index < 0 || index >= INDEX_UNKNOWN ? INDEX_UNKNOWN : index);
    }

    /** The error of an error frame's value, or null when the value names a code object. */
    public static Error error(long value) {
        return codeAddress(value) == 0 ? Error.of(value & INDEX_UNKNOWN) : null;
    }

    /** loupe_abi.h's enumerators for these constants (the agent's {@code UnwinderAbi} hands them to the BTF check). */
    public static Map<String, Long> kernelConstants() {
        Map<String, Long> m = new java.util.HashMap<>(Map.of(
                "PYTHON_CODE_SHIFT", (long) CODE_SHIFT,
                "PYTHON_INDEX_BITS", (long) INDEX_BITS,
                "PYTHON_INDEX_UNKNOWN", (long) INDEX_UNKNOWN,
                "PYTHON_DATA_WORDS", (long) DATA_WORDS,
                "PYTHON_MAX_THREADS", (long) MAX_THREADS,
                "PYTHON_MAX_FRAMES_PER_EVAL", (long) MAX_FRAMES_PER_EVAL,
                "PYTHON_NO_HOLDER", (long) PythonLayout.NO_HOLDER,
                "PYTHON_FRAME_BYTES", (long) FRAME_BYTES));
        for (PythonLayout.Variant v : PythonLayout.Variant.values()) {
            m.put("PYTHON_" + v.name(), (long) v.code());
        }
        for (Error e : Error.values()) {
            m.put("PYTHON_ERR_" + e.name(), (long) e.code);
        }
        return Map.copyOf(m);
    }
}
