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

/** pprof on disk and on the wire: gzipped protobuf. */
public final class PprofFiles {
    private PprofFiles() {}

    public static byte[] gzip(Profile profile) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 * 1024);
        try (GZIPOutputStream gz = new GZIPOutputStream(bytes, 64 * 1024)) {
            profile.writeTo(gz);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // in-memory streams do not fail
        }
        return bytes.toByteArray();
    }

    /** Parses a gzipped or raw serialized profile. */
    public static Profile parse(byte[] data) throws IOException {
        boolean gzipped = data.length >= 2 && (data[0] & 0xff) == 0x1f && (data[1] & 0xff) == 0x8b;
        try (InputStream in = gzipped ? new GZIPInputStream(new ByteArrayInputStream(data)) : new ByteArrayInputStream(data)) {
            return Profile.parseFrom(in);
        }
    }

    /**
     * Writes the gzipped profile so that readers never see a partial file: a temp file in the same
     * directory, fsync, then an atomic rename.
     */
    public static void writeAtomically(Profile profile, Path file) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path tmp = Files.createTempFile(dir, "." + file.getFileName(), ".tmp");
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer buf = ByteBuffer.wrap(gzip(profile));
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
                ch.force(true);
            }
            try {
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }
}
