package dev.loupe.unwinder.fuzz;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A fuzz input read as a sequence of choices, for targets that need more than one byte string (a file's
 * successive versions, a rule and a label set). Reading past the end gives zeros and empty strings, so every
 * input means something and the same input always means the same thing: the kept inputs replay exactly.
 * (Jazzer's FuzzedDataProvider would do, but needs Jazzer's native library in the replaying JVM.)
 */
public final class FuzzInput {
    private final byte[] data;
    private int pos;

    public FuzzInput(byte[] data) {
        this.data = data;
    }

    public boolean hasMore() {
        return pos < data.length;
    }

    public int remaining() {
        return data.length - pos;
    }

    /** The next byte, 0..255 (0 past the end). */
    public int u8() {
        return pos < data.length ? data[pos++] & 0xff : 0;
    }

    public boolean bool() {
        return (u8() & 1) != 0;
    }

    /** A little-endian 16-bit value. */
    public int u16() {
        return u8() | u8() << 8;
    }

    /** A little-endian 32-bit value. */
    public int i32() {
        return u16() | u16() << 16;
    }

    /** A little-endian 64-bit value. */
    public long i64() {
        return (i32() & 0xffffffffL) | (long) i32() << 32;
    }

    /** A value in [lo, hi] from one byte (ranges up to 256) or two (wider ones). */
    public int intIn(int lo, int hi) {
        if (hi <= lo) {
            return lo;
        }
        long span = (long) hi - lo + 1;
        long v = span <= 256 ? u8() : span <= 65536 ? u16() : i32() & 0xffffffffL;
        return (int) (lo + v % span);
    }

    /** One of {@code choices}. */
    @SafeVarargs
    public final <T> T pick(T... choices) {
        return choices[intIn(0, choices.length - 1)];
    }

    /** A length (one byte, up to {@code max} and what is left) and then that many bytes. */
    public byte[] bytes(int max) {
        int n = Math.min(Math.min(u8(), max), remaining());
        return take(n);
    }

    /** As {@link #bytes}, with a two-byte length. */
    public byte[] longBytes(int max) {
        int n = Math.min(Math.min(u16(), max), remaining());
        return take(n);
    }

    /** {@code n} bytes, or what is left if fewer. */
    public byte[] bytesExactly(int n) {
        return take(Math.min(n, remaining()));
    }

    /** A short UTF-8 string (a {@link #bytes} chunk, invalid UTF-8 replaced as Java decodes it). */
    public String string(int maxBytes) {
        return new String(bytes(maxBytes), StandardCharsets.UTF_8);
    }

    /** Everything not read yet. */
    public byte[] rest() {
        return take(remaining());
    }

    private byte[] take(int n) {
        byte[] b = Arrays.copyOfRange(data, pos, pos + n);
        pos += n;
        return b;
    }
}
