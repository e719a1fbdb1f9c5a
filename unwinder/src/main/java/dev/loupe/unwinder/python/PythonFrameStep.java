package dev.loupe.unwinder.python;

import dev.loupe.unwinder.proc.ProcessMemory;
import dev.loupe.unwinder.runtime.PackedFrameValue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What {@code python.bpf.h}'s step writes, read back: a {@code FrameType.PYTHON} value is the code object's address
 * shifted right by {@link #CODE_SHIFT} (objects are 16-byte aligned) above {@link #INDEX_BITS} of instruction index in
 * code units ({@link #INDEX_UNKNOWN} when it does not fit); a code address of 0 is an error frame whose index is the
 * {@link Error}. The constants are loupe_abi.h's {@code enum python_abi}, {@code python_variant} and
 * {@code python_error}, checked against the object's BTF ({@link #kernelConstants}). {@link #walk} is the step's walk
 * in Java, over a process's memory: the specification the unit tests hold a version's layout to.
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
    /**
     * 3.11+: one read brings in a frame's head and the bytes below it, where its callers' frames lie in the thread's
     * data stack chunk (pushed before it), so that a deep chain costs a read per few frames, not one per frame.
     */
    public static final int BLOCK_BYTES = 1024;
    /** A block does not start below its frame's page (the page below a chunk's first may be unmapped). */
    public static final int PAGE_BYTES = 4096;

    private PythonFrameStep() {}

    /** Why the walker could not report a call's interpreter frames ({@code enum python_error}). */
    public enum Error implements PackedFrameValue.StepError {
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
    static final PackedFrameValue PACKED = new PackedFrameValue(CODE_SHIFT, INDEX_BITS);

    /** The code object's address in a frame value (0 for an error frame). */
    public static long codeAddress(long value) {
        return PACKED.object(value);
    }

    /** The instruction index in code units, or -1 when unknown. */
    public static int instructionIndex(long value) {
        return PACKED.offset(value);
    }

    /** The value the walker writes for a code object and an index (for tests and fakes). */
    public static long value(long codeAddress, int index) {
        return PACKED.value(codeAddress, index);
    }

    /** The error of an error frame's value, or null when the value names a code object. */
    public static Error error(long value) {
        return PACKED.error(value, ERRORS);
    }

    /**
     * What {@code python.bpf.h} writes at {@code evalCalls} consecutive native frames of the interpreter loop in one
     * sample of the thread whose FS base is {@code fsbase}, innermost first: per loop frame, the values of the
     * interpreter frames that call ran (the first in place of the native frame; none: the native frame stays), or one
     * error value. {@code runtime} is {@code _PyRuntime}'s address in the process. The same reads in the same order
     * as the kernel's step, with the same bounds; kept beside it, so that a change to one is a change to both.
     */
    public static List<List<Long>> walk(ProcessMemory mem, PythonLayout l, long runtime, long fsbase, int evalCalls) {
        PythonLayout.Variant v = l.variant();
        List<List<Long>> out = new ArrayList<>();
        long cursor = 0;
        Block block = new Block();
        for (int call = 0; call < evalCalls; call++) {
            List<Long> written = new ArrayList<>();
            out.add(written);
            if (call == 0) {
                try {
                    cursor = currentFrame(mem, l, runtime, fsbase);
                } catch (WalkFailed e) {
                    written.add((long) e.error.code);
                    continue; // the cursor stays 0: the sample's later loop frames report no frames
                }
            }
            long f = cursor;
            boolean failed = false;
            for (int k = 0; k < MAX_FRAMES_PER_EVAL && f != 0; k++) {
                int at = block.load(mem, f, v);
                if (at < 0) {
                    written.add((long) Error.READ.code);
                    failed = true;
                    break;
                }
                ByteBuffer frame = block.bytes;
                long code = frame.getLong(at + l.frameCode());
                long instr = frame.getLong(at + l.frameInstr());
                long previous = frame.getLong(at + l.framePrevious());
                int end = v == PythonLayout.Variant.V39 ? 0 : frame.get(at + l.frameEnd()) & 0xff;
                if (v.code() >= PythonLayout.Variant.V312.code() && end >= l.cstackOwner()) {
                    f = previous; // the call's entry frame: its frames are reported
                    break;
                }
                if (v == PythonLayout.Variant.V313) {
                    code &= ~3L;
                }
                int index = INDEX_UNKNOWN;
                if (v == PythonLayout.Variant.V39) {
                    int lasti = (int) instr;
                    if (lasti >= 0 && lasti < INDEX_UNKNOWN) {
                        index = lasti;
                    }
                } else {
                    long first = code + l.codeAdaptive();
                    if (Long.compareUnsigned(instr, first) < 0) {
                        index = 0;
                    } else if (Long.compareUnsigned((instr - first) / 2, INDEX_UNKNOWN) < 0) {
                        index = (int) ((instr - first) / 2);
                    }
                }
                if (code == 0 || (code & ((1 << CODE_SHIFT) - 1)) != 0 || Long.compareUnsigned(code, 1L << 47) >= 0) {
                    written.add((long) Error.BAD_CODE.code);
                    failed = true;
                    break;
                }
                written.add((code >>> CODE_SHIFT) << INDEX_BITS | index);
                f = previous;
                if (v == PythonLayout.Variant.V39 || (v == PythonLayout.Variant.V311 && end != 0)) {
                    break;
                }
            }
            cursor = failed ? 0 : f;
            if (!failed && written.isEmpty() && v.code() < PythonLayout.Variant.V312.code()) {
                written.add((long) Error.NO_FRAMES.code);
            }
        }
        return out;
    }

    /** The last read of one sample's walk: {@code python_load_frame} and the block it fills. */
    static final class Block {
        long start;
        int length; // 0: none
        ByteBuffer bytes;
        /** Reads, for tests that count them. */
        int reads;

        /** The offset in {@link #bytes} of the frame at {@code f}'s head, read if the last read does not hold it; -1 if unreadable. */
        int load(ProcessMemory mem, long f, PythonLayout.Variant v) {
            if (length >= FRAME_BYTES && Long.compareUnsigned(f, start) >= 0
                    && Long.compareUnsigned(f - start, length - FRAME_BYTES) <= 0) {
                return (int) (f - start);
            }
            long from = f;
            if (v != PythonLayout.Variant.V39 && Long.compareUnsigned(f, BLOCK_BYTES) >= 0) {
                long page = f & ~(long) (PAGE_BYTES - 1);
                from = f + FRAME_BYTES - BLOCK_BYTES;
                if (Long.compareUnsigned(from, page) < 0) {
                    from = page;
                }
            }
            int len = (int) (f + FRAME_BYTES - from);
            try {
                reads++;
                bytes = mem.read(from, len);
            } catch (IOException e) {
                if (from == f) {
                    length = 0;
                    return -1;
                }
                try {
                    reads++;
                    bytes = mem.read(f, FRAME_BYTES);
                } catch (IOException e2) {
                    length = 0;
                    return -1;
                }
                from = f;
                len = FRAME_BYTES;
            }
            start = from;
            length = len;
            return (int) (f - from);
        }
    }

    private static final class WalkFailed extends Exception {
        final Error error;

        WalkFailed(Error error) {
            super(error.text, null, false, false);
            this.error = error;
        }
    }

    /** The sampled thread's innermost interpreter frame: {@code python_current_frame}. */
    private static long currentFrame(ProcessMemory mem, PythonLayout l, long runtime, long fsbase) throws WalkFailed {
        if (fsbase == 0) {
            throw new WalkFailed(Error.NO_THREAD);
        }
        try {
            long interp = mem.readLong(runtime + l.interpretersHead());
            if (interp == 0) {
                throw new WalkFailed(Error.READ);
            }
            long ts = mem.readLong(interp + l.threadsHead());
            boolean found = false;
            for (int k = 0; k < MAX_THREADS && ts != 0; k++) {
                if (mem.readLong(ts + l.threadId()) == fsbase) {
                    found = true;
                    break;
                }
                ts = mem.readLong(ts + l.threadNext());
            }
            if (!found) {
                throw new WalkFailed(Error.NO_THREAD);
            }
            long holder = l.frameHolder() == PythonLayout.NO_HOLDER ? ts : mem.readLong(ts + l.frameHolder());
            if (holder == 0) {
                throw new WalkFailed(Error.READ);
            }
            return mem.readLong(holder + l.currentFrame());
        } catch (IOException e) {
            throw new WalkFailed(Error.READ);
        }
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
                "PYTHON_FRAME_BYTES", (long) FRAME_BYTES,
                "PYTHON_BLOCK_BYTES", (long) BLOCK_BYTES,
                "PYTHON_PAGE_BYTES", (long) PAGE_BYTES));
        for (PythonLayout.Variant v : PythonLayout.Variant.values()) {
            m.put("PYTHON_" + v.name(), (long) v.code());
        }
        for (Error e : Error.values()) {
            m.put("PYTHON_ERR_" + e.name(), (long) e.code);
        }
        return Map.copyOf(m);
    }
}
