package dev.loupe.unwinder.elf;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * Inflates an SHF_COMPRESSED section's zlib stream into the size its header claims, growing with the data actually
 * inflated: a header claiming hundreds of MiB must not cost that up front. Shared by the eh_frame and DWARF readers,
 * which turn a short or corrupt stream into their own errors.
 */
public final class ZlibSection {
    private ZlibSection() {}

    /**
     * The inflated bytes: exactly {@code size} of them, or fewer when the stream ended early (the caller reports the
     * header's lie).
     *
     * @throws DataFormatException the stream is corrupt
     */
    public static byte[] inflate(ByteBuffer stream, int size) throws DataFormatException {
        byte[] out = new byte[(int) Math.min(size, Math.max(4096, 4L * stream.remaining()))];
        Inflater inf = new Inflater();
        try {
            inf.setInput(stream);
            int n = 0;
            while (n < size) {
                if (n == out.length) {
                    out = Arrays.copyOf(out, (int) Math.min(size, 2L * out.length));
                }
                int k = inf.inflate(out, n, out.length - n);
                if (k == 0 && (inf.finished() || inf.needsInput() || inf.needsDictionary())) {
                    break;
                }
                n += k;
            }
            return n == out.length ? out : Arrays.copyOf(out, n);
        } finally {
            inf.end();
        }
    }
}
