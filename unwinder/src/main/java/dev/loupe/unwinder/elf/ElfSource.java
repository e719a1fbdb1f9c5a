package dev.loupe.unwinder.elf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The bytes of an ELF file or of an in-memory image (e.g. the vdso), and the one bounds policy every ELF
 * view reads them with: a range is checked against the size before anything is allocated, and a failed
 * or short read is an {@link ElfException} naming the source ("NAME: problem").
 *
 * <p>Files are read with positional reads, not mmap: a file truncated under us gives an error, not
 * SIGBUS. A file source holds its channel until {@link #close}; {@link #reopen} gives a source for a later
 * read (an image's is itself, and closing it does nothing).
 */
public final class ElfSource implements AutoCloseable {
    private final String name;
    private final Path path; // null for an image
    private final FileChannel channel; // null for an image
    private final ByteBuffer image; // null for a file
    private final long size;

    private ElfSource(String name, Path path, FileChannel channel, ByteBuffer image, long size) {
        this.name = name;
        this.path = path;
        this.channel = channel;
        this.image = image;
        this.size = size;
    }

    /** Opens a file; IOException: it cannot be opened at all (read errors after that are ElfExceptions). */
    public static ElfSource open(Path path) throws IOException {
        FileChannel ch = FileChannel.open(path, StandardOpenOption.READ);
        try {
            return new ElfSource(path.toString(), path, ch, null, ch.size());
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /** An in-memory image, from the buffer's position to its limit. */
    public static ElfSource of(String name, ByteBuffer image) {
        ByteBuffer img = image.slice();
        return new ElfSource(name, null, null, img, img.limit());
    }

    /** The name given (the path for files): the prefix of every error. */
    public String name() {
        return name;
    }

    public long size() {
        return size;
    }

    /**
     * A source for reading {@code what} after this one was closed: a file is opened again and must still
     * have the size it had; an image is itself.
     */
    public ElfSource reopen(String what) throws ElfException {
        if (path == null) {
            return this;
        }
        FileChannel ch;
        long now;
        try {
            ch = FileChannel.open(path, StandardOpenOption.READ);
            try {
                now = ch.size();
            } catch (IOException e) {
                ch.close();
                throw e;
            }
        } catch (IOException e) {
            throw error("cannot re-open to read " + what + ": " + e.getMessage());
        }
        if (now != size) {
            closeQuietly(ch);
            throw error("file changed size since it was parsed (" + size + " -> " + now + ")");
        }
        return new ElfSource(name, path, ch, null, size);
    }

    /** Throws unless [offset, offset + length) lies inside the source. */
    public void checkRange(long offset, long length, String what) throws ElfException {
        if (offset < 0 || length < 0 || offset > size || size - offset < length) {
            throw error(what + " beyond end of file (offset " + Long.toUnsignedString(offset) + ", length "
                    + Long.toUnsignedString(length) + ", file size " + size + ")");
        }
    }

    /** Fills {@code dst[0, length)} from {@code offset}. */
    public void read(long offset, byte[] dst, int length, String what) throws ElfException {
        checkRange(offset, length, what);
        try {
            if (image != null) {
                image.get((int) offset, dst, 0, length);
                return;
            }
            ByteBuffer b = ByteBuffer.wrap(dst, 0, length);
            while (b.hasRemaining()) {
                if (channel.read(b, offset + b.position()) < 0) {
                    throw new IOException("unexpected end of file at offset " + (offset + b.position()));
                }
            }
        } catch (IOException | RuntimeException e) {
            throw error("cannot read " + what + " at offset " + offset + ": " + e.getMessage());
        }
    }

    /** {@code length} bytes at {@code offset}, in a new array (checked before it is allocated). */
    public byte[] bytes(long offset, int length, String what) throws ElfException {
        checkRange(offset, length, what);
        byte[] b = new byte[length];
        read(offset, b, length, what);
        return b;
    }

    /** {@code length} bytes at {@code offset}, little-endian: a slice of an image, a copy from a file. */
    public ByteBuffer view(long offset, int length, String what) throws ElfException {
        if (image != null) {
            checkRange(offset, length, what);
            return image.slice((int) offset, length).order(ByteOrder.LITTLE_ENDIAN);
        }
        return ByteBuffer.wrap(bytes(offset, length, what)).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** An error about this source: "NAME: what". */
    public ElfException error(String what) {
        return new ElfException(name + ": " + what);
    }

    @Override
    public void close() {
        if (channel != null) {
            closeQuietly(channel);
        }
    }

    private static void closeQuietly(FileChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // a read-only channel: nothing was written that could be lost
        }
    }
}
