package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A forward-moving window of up to 1 MiB over a range of process memory, so that walking a code heap costs one pread
 * per MiB rather than one per field. Never reads beyond the range's end.
 */
final class Window {
    static final int SIZE = 1 << 20;
    private final ProcessMemory mem;
    private final long limit;
    private final int size;
    private final ByteBuffer buf;
    private long base = -1;
    private int length;
    long reads;

    Window(ProcessMemory mem, long limit) {
        this(mem, limit, SIZE);
    }

    /** A window of {@code size} bytes (a lookup of one blob reads a few KiB, not a MiB). */
    Window(ProcessMemory mem, long limit, int size) {
        this.mem = mem;
        this.limit = limit;
        this.size = size;
        this.buf = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Makes [address, address + need) readable and returns its index in {@link #buffer()}. */
    int at(long address, int need) throws IOException {
        if (need > size || address < 0 || need > limit - address) {
            throw new IllegalArgumentException("window read of " + need + " at 0x" + Long.toHexString(address));
        }
        if (base < 0 || address < base || address + need > base + length) {
            int n = (int) Math.min(size, limit - address);
            buf.clear().limit(n);
            mem.read(address, buf);
            reads++;
            base = address;
            length = n;
        }
        return (int) (address - base);
    }

    ByteBuffer buffer() {
        return buf;
    }
}
