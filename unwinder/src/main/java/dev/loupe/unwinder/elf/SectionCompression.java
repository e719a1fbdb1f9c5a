package dev.loupe.unwinder.elf;

import com.github.luben.zstd.ZstdInputStreamNoFinalizer;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.zip.DataFormatException;

/**
 * Decompresses an SHF_COMPRESSED section's stream (what follows its Elf64_Chdr) of either type the gABI defines:
 * ELFCOMPRESS_ZLIB with the JDK's {@link java.util.zip.Inflater} ({@link ZlibSection}), ELFCOMPRESS_ZSTD (gcc/ld
 * {@code -gz=zstd}, lld, distributions' debug packages) with zstd-jni. The output grows with the data actually
 * decompressed up to the size the header claims: a header claiming hundreds of MiB costs nothing up front. Callers
 * turn a short output or a {@link DataFormatException} into their own errors.
 */
public final class SectionCompression {
    public static final int ELFCOMPRESS_ZLIB = 1;
    public static final int ELFCOMPRESS_ZSTD = 2;
    /** Size of an Elf64_Chdr: ch_type (4), ch_reserved (4), ch_size (8), ch_addralign (8). */
    public static final int CHDR_SIZE = 24;

    private SectionCompression() {}

    /** Whether this reader decompresses a section of that ch_type. */
    public static boolean known(int type) {
        return type == ELFCOMPRESS_ZLIB || type == ELFCOMPRESS_ZSTD;
    }

    /** The ch_type's name in messages. */
    public static String name(int type) {
        return switch (type) {
            case ELFCOMPRESS_ZLIB -> "zlib";
            case ELFCOMPRESS_ZSTD -> "zstd";
            default -> "compression type " + Integer.toUnsignedString(type) + " (only zlib and zstd are read)";
        };
    }

    /**
     * The decompressed bytes: exactly {@code size} of them, or fewer when the stream ended early (the caller reports
     * the header's lie).
     *
     * @throws DataFormatException the stream is corrupt, the type unknown, or the zstd library could not be loaded: its
     *                             message says which, to follow the section's name
     */
    public static byte[] decompress(int type, ByteBuffer stream, int size) throws DataFormatException {
        return switch (type) {
            case ELFCOMPRESS_ZLIB -> zlib(stream, size);
            case ELFCOMPRESS_ZSTD -> zstdOrError(stream, size);
            default -> throw new DataFormatException(name(type));
        };
    }

    private static byte[] zlib(ByteBuffer stream, int size) throws DataFormatException {
        try {
            return ZlibSection.inflate(stream, size);
        } catch (DataFormatException e) {
            throw new DataFormatException("corrupt zlib stream: " + e.getMessage());
        }
    }

    /**
     * zstd through {@link Zstd}, whose class alone names the library: without its jar, or with a libzstd that cannot be
     * unpacked and loaded (a temp directory mounted noexec, say), a zstd section is an error like a corrupt one.
     */
    private static byte[] zstdOrError(ByteBuffer stream, int size) throws DataFormatException {
        try {
            return Zstd.decompress(stream, size);
        } catch (LinkageError e) {
            throw new DataFormatException("zstd library unavailable: " + e);
        }
    }

    private static final class Zstd {
        /**
         * The zstd frames of {@code stream} decompressed into at most {@code size} bytes. A frame's window (the history
         * the decoder allocates natively when the frame does not say its size) may be no larger than the section, rounded
         * up to a power of two, or 8 MiB (what {@code zstd -19} uses for a stream of unknown size) if that is more: a
         * hostile header cannot make the decoder allocate 128 MiB for a small section.
         */
        static byte[] decompress(ByteBuffer stream, int size) throws DataFormatException {
            byte[] out = new byte[(int) Math.min(size, Math.max(4096, 8L * stream.remaining()))];
            int n = 0;
            int windowLog = Math.clamp(32 - Integer.numberOfLeadingZeros(Math.max(1, size) - 1), 23, 27);
            try (InputStream in = new ZstdInputStreamNoFinalizer(new BufferStream(stream.duplicate())).setLongMax(windowLog)) {
                while (n < size) {
                    if (n == out.length) {
                        out = Arrays.copyOf(out, (int) Math.min(size, 2L * out.length));
                    }
                    int k = in.read(out, n, out.length - n);
                    if (k < 0) {
                        break;
                    }
                    n += k;
                }
            } catch (IOException | RuntimeException e) {
                // ZstdIOException on a corrupt or truncated frame; others from the library are its own bugs, kept contained.
                throw new DataFormatException("corrupt zstd stream: " + e.getMessage());
            }
            return n == out.length ? out : Arrays.copyOf(out, n);
        }
    }

    /** A buffer's remaining bytes as a stream (a mapped section is read where it lies). */
    private static final class BufferStream extends InputStream {
        private final ByteBuffer b;

        BufferStream(ByteBuffer b) {
            this.b = b;
        }

        @Override
        public int read() {
            return b.hasRemaining() ? b.get() & 0xff : -1;
        }

        @Override
        public int read(byte[] dst, int off, int len) {
            if (len == 0) {
                return 0;
            }
            if (!b.hasRemaining()) {
                return -1;
            }
            int k = Math.min(len, b.remaining());
            b.get(dst, off, k);
            return k;
        }

        @Override
        public int available() {
            return b.remaining();
        }
    }
}
