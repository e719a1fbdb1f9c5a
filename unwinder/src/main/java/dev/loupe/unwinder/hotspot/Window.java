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
    private final ByteBuffer buf = ByteBuffer.allocate(SIZE).order(ByteOrder.LITTLE_ENDIAN);
    private long base = -1;
    private int length;
    long reads;

    Window(ProcessMemory mem, long limit) {
        this.mem = mem;
        this.limit = limit;
    }

    /** Makes [address, address + need) readable and returns its index in {@link #buffer()}. */
    int at(long address, int need) throws IOException {
        if (need > SIZE || address < 0 || need > limit - address) {
            throw new IllegalArgumentException("window read of " + need + " at 0x" + Long.toHexString(address));
        }
        if (base < 0 || address < base || address + need > base + length) {
            int n = (int) Math.min(SIZE, limit - address);
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
