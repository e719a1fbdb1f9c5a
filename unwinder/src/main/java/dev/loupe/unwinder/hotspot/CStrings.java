package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * NUL-terminated strings of a process read through a small cache of 4 KiB pages: the VMStructs tables name
 * thousands of strings packed together in libjvm's read-only data, so a page read serves many of them.
 */
final class CStrings {
    private static final int PAGE = 4096;
    private static final int MAX_PAGES = 4096; // 16 MiB at most; cleared when full
    private final ProcessMemory mem;
    private final Map<Long, byte[]> pages = new HashMap<>();

    CStrings(ProcessMemory mem) {
        this.mem = mem;
    }

    /**
     * The string at {@code address}, at most {@code maxLength} bytes of printable ASCII, or IOException if unreadable,
     * unterminated or holding any other byte.
     */
    String read(long address, int maxLength) throws IOException {
        if (address == 0) {
            throw new IOException("null string pointer");
        }
        byte[] out = new byte[Math.min(maxLength, 256)];
        int n = 0;
        long at = address;
        while (true) {
            byte[] page = page(at & -PAGE);
            int i = (int) (at & (PAGE - 1));
            for (; i < PAGE; i++, at++) {
                byte c = page[i];
                if (c == 0) {
                    return new String(out, 0, n, StandardCharsets.ISO_8859_1);
                }
                if (c < 0x20 || c > 0x7E) {
                    // HotSpot's names (VMStructs', blobs', its release) are printable ASCII: this is not one of them.
                    throw new IOException("string at 0x" + Long.toHexString(address) + " holds byte 0x"
                            + Integer.toHexString(c & 0xFF) + ", not printable ASCII");
                }
                if (n == maxLength) {
                    throw new IOException("string at 0x" + Long.toHexString(address) + " longer than " + maxLength + " bytes");
                }
                if (n == out.length) {
                    out = java.util.Arrays.copyOf(out, Math.min(maxLength, out.length * 2));
                }
                out[n++] = c;
            }
        }
    }

    private byte[] page(long base) throws IOException {
        byte[] p = pages.get(base);
        if (p == null) {
            if (pages.size() >= MAX_PAGES) {
                pages.clear();
            }
            p = new byte[PAGE];
            mem.read(base, ByteBuffer.wrap(p));
            pages.put(base, p);
        }
        return p;
    }
}
