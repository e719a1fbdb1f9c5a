package dev.loupe.unwinder.python;

import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * A CPython process's memory made by hand from a version's {@link PythonLayout}, for versions this host has no
 * interpreter of: the runtime, its interpreter, thread states, frames and code objects (with their str and bytes
 * objects), each placed at the layout's offsets in one region; nothing mapped outside it.
 */
final class FakeInterpreter implements ProcessMemory {
    static final long BASE = 0x7f3a_0000_0000L;
    static final long CODE_TYPE = BASE + 0x40; // PyCode_Type: any address the code objects point at
    private static final int SIZE = 1 << 16;

    final PythonLayout layout;
    private final ByteBuffer image = ByteBuffer.allocate(SIZE).order(ByteOrder.LITTLE_ENDIAN);
    private int next = 0x100;

    FakeInterpreter(PythonLayout layout) {
        this.layout = layout;
    }

    /** A zeroed object of {@code size} bytes, 16-byte aligned (as CPython's allocator aligns them). */
    long alloc(int size) {
        long at = BASE + next;
        next = (next + size + 15) & ~15;
        if (next > SIZE) {
            throw new IllegalStateException("fake process full");
        }
        return at;
    }

    void putLong(long address, long value) {
        image.putLong((int) (address - BASE), value);
    }

    void putInt(long address, int value) {
        image.putInt((int) (address - BASE), value);
    }

    void putByte(long address, int value) {
        image.put((int) (address - BASE), (byte) value);
    }

    /** A compact ASCII str object (state: kind 1, compact, ascii). */
    long str(String text) {
        byte[] b = text.getBytes(StandardCharsets.US_ASCII);
        long at = alloc(layout.code().asciiData() + b.length + 1);
        putLong(at + 16, b.length);
        putInt(at + 32, 1 << 2 | 1 << 5 | 1 << 6);
        image.put((int) (at - BASE + layout.code().asciiData()), b);
        return at;
    }

    /** A bytes object. */
    long bytes(byte[] b) {
        long at = alloc(layout.code().bytesData() + b.length + 1);
        putLong(at + layout.code().bytesSize(), b.length);
        image.put((int) (at - BASE + layout.code().bytesData()), b);
        return at;
    }

    /** A code object of {@code PyCode_Type}. */
    long code(String qualname, String file, int firstLine, byte[] lineTable) {
        PythonLayout.CodeLayout c = layout.code();
        long at = alloc(Math.max(c.span(), layout.codeAdaptive()) + 256);
        putLong(at + 8, CODE_TYPE);
        putInt(at + c.firstLineNo(), firstLine);
        putLong(at + c.filename(), str(file));
        putLong(at + c.name(), str(qualname.substring(qualname.lastIndexOf('.') + 1)));
        if (c.qualname() >= 0) {
            putLong(at + c.qualname(), str(qualname));
        }
        putLong(at + c.lineTable(), bytes(lineTable));
        return at;
    }

    /**
     * The runtime with one interpreter whose threads are, in list order, one per {@code threadIds} entry (their
     * {@code thread_id}), each thread's current frame {@code currentFrames[i]}. Returns {@code _PyRuntime}'s address.
     */
    long runtime(long[] threadIds, long[] currentFrames) {
        long runtime = alloc(layout.interpretersHead() + 64);
        long interp = alloc(layout.threadsHead() + 64);
        putLong(runtime + layout.interpretersHead(), interp);
        long previous = 0;
        for (int i = 0; i < threadIds.length; i++) {
            long ts = alloc(Math.max(layout.threadId(), layout.frameHolder() == PythonLayout.NO_HOLDER ? 0 : layout.frameHolder()) + 64);
            putLong(ts + layout.threadId(), threadIds[i]);
            if (layout.frameHolder() == PythonLayout.NO_HOLDER) {
                putLong(ts + layout.currentFrame(), currentFrames[i]);
            } else {
                long holder = alloc(64);
                putLong(ts + layout.frameHolder(), holder);
                putLong(holder + layout.currentFrame(), currentFrames[i]);
            }
            if (previous == 0) {
                putLong(interp + layout.threadsHead(), ts);
            } else {
                putLong(previous + layout.threadNext(), ts);
            }
            previous = ts;
        }
        return runtime;
    }

    /** A frame object of 3.9/3.10 ({@code f_back}, {@code f_code}, {@code f_lasti}). */
    long frameObject(long code, int lasti, long back) {
        long at = alloc(PythonFrameStep.FRAME_BYTES + 64);
        putLong(at + layout.framePrevious(), back);
        putLong(at + layout.frameCode(), code);
        putInt(at + layout.frameInstr(), lasti);
        return at;
    }

    /** An interpreter frame of 3.11+ at instruction {@code index} of {@code code} ({@code prev_instr}), its owner byte. */
    long interpreterFrame(long code, int index, long previous, int owner) {
        long at = alloc(PythonFrameStep.FRAME_BYTES + 64);
        putLong(at + layout.framePrevious(), previous);
        putLong(at + layout.frameCode(), code);
        putLong(at + layout.frameInstr(), code + layout.codeAdaptive() + 2L * index);
        putByte(at + layout.frameEnd(), owner);
        return at;
    }

    @Override
    public void read(long address, ByteBuffer dst) throws IOException {
        long off = address - BASE;
        if (off < 0 || off + dst.remaining() > SIZE) {
            throw new IOException("not mapped: 0x" + Long.toHexString(address));
        }
        dst.put(image.array(), (int) off, dst.remaining());
    }

    @Override
    public void close() {}
}
