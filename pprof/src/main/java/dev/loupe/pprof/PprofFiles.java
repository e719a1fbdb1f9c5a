package dev.loupe.pprof;

import dev.loupe.pprof.proto.Profile;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;

/** pprof on disk and on the wire: a gzipped serialized {@link Profile}. */
public final class PprofFiles {
    private PprofFiles() {}

    /**
     * The gzipped serialized profile, as go tool pprof and Parca expect it. Compressed at deflate's fastest
     * level, as Go's runtime/pprof does: profiles are encoded every interval on the agent's CPU budget.
     */
    public static byte[] gzip(Profile profile) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(Math.max(64, profile.getSerializedSize() / 4));
        try (GZIPOutputStream gz = new FastGzip(bytes)) {
            profile.writeTo(gz);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // in-memory streams do not fail
        }
        return bytes.toByteArray();
    }

    private static final class FastGzip extends GZIPOutputStream {
        FastGzip(java.io.OutputStream out) throws IOException {
            super(out, 64 * 1024);
            def.setLevel(java.util.zip.Deflater.BEST_SPEED);
        }
    }

    /**
     * Parses a serialized profile, gzipped (recognized by the gzip magic bytes 1f 8b) or raw.
     *
     * @throws IllegalArgumentException if the bytes are not a valid (gzipped) profile
     */
    public static Profile parse(byte[] gzippedOrRaw) {
        boolean gzipped = gzippedOrRaw.length >= 2 && (gzippedOrRaw[0] & 0xff) == 0x1f && (gzippedOrRaw[1] & 0xff) == 0x8b;
        try (InputStream in = gzipped ? new GZIPInputStream(new ByteArrayInputStream(gzippedOrRaw))
                : new ByteArrayInputStream(gzippedOrRaw)) {
            return Profile.parseFrom(in);
        } catch (IOException e) {
            throw new IllegalArgumentException("not a pprof profile: " + e.getMessage(), e);
        }
    }

    /**
     * Writes the gzipped profile so that readers never see a partial file and a crash never leaves a torn
     * one: write a temp file in the same directory (same filesystem, so the rename is atomic), fsync it,
     * rename it over {@code file}, then fsync the directory so the rename itself is durable. Creates missing
     * parent directories. The temp file is removed on failure.
     */
    public static void writeAtomically(Profile profile, Path file) throws IOException {
        writeAtomically(gzip(profile), file);
    }

    /** As {@link #writeAtomically(Profile, Path)}, for bytes already encoded (e.g. once for every sink). */
    public static void writeAtomically(byte[] data, Path file) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        // Dot-prefixed so directory watchers globbing "*.pb.gz" skip it.
        Path tmp = Files.createTempFile(dir, "." + file.getFileName(), ".tmp");
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer buf = ByteBuffer.wrap(data);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
                ch.force(true);
            }
            try {
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING); // not expected within one directory
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
        syncDirectory(dir);
    }

    private static void syncDirectory(Path dir) {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException e) {
            // Some filesystems refuse to open or fsync a directory; the file itself is already complete.
        }
    }
}
