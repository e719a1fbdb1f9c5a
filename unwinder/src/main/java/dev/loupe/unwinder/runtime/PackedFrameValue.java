package dev.loupe.unwinder.runtime;

/**
 * How an interpreter's BPF step packs a tagged frame's value (below the {@link FrameType} bits): an object's address
 * shifted right by {@code objectShift} (the objects' alignment) above {@code offsetBits} of offset into it (an
 * instruction index, a bytecode offset), all ones when unknown or too large. An address of 0 is an error frame whose
 * offset is the step's error code ({@link StepError}). CPython's and V8's steps write their values so.
 */
public record PackedFrameValue(int objectShift, int offsetBits) {
    /** An error a step reports in place of a frame: its code in the kernel's enum and its text for the frame's name. */
    public interface StepError {
        int code();

        String text();
    }

    /** The offset value that means unknown. */
    public int unknown() {
        return (1 << offsetBits) - 1;
    }

    /** The object's address in a frame value (0 for an error frame). */
    public long object(long value) {
        return (value >>> offsetBits) << objectShift;
    }

    /** The offset as the frame holds it, or -1 when unknown. */
    public int offset(long value) {
        int o = (int) (value & unknown());
        return o == unknown() ? -1 : o;
    }

    /** The value the step writes for an object and an offset (for tests and fakes). */
    public long value(long object, int offset) {
        return (object >>> objectShift) << offsetBits | (offset < 0 || offset >= unknown() ? unknown() : offset);
    }

    /** An error frame's error among {@code errors}, or null when the value names an object (or an unknown code). */
    public <E extends StepError> E error(long value, E[] errors) {
        if (object(value) != 0) {
            return null;
        }
        long code = value & unknown();
        for (E e : errors) {
            if (e.code() == code) {
                return e;
            }
        }
        return null;
    }
}
