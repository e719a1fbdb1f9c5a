package dev.loupe.agent.files;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * Files that survive a crash: written to a temp file beside the target, forced to disk, renamed over the
 * target; a rename or delete made durable by forcing its directory. The spool's queue, the quarantine
 * ({@code ship}) and the latency baselines ({@code regression}) write this way.
 */
public final class DurableFiles {
    /** A file being written; one left by a crash is deleted at the next open. */
    public static final String TEMP_SUFFIX = ".tmp";

    private DurableFiles() {}

    /** Creates {@code dir} (and its parents) readable by the owner only: profiles name the host's processes. */
    public static void createPrivateDirectories(Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            return;
        }
        try {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (UnsupportedOperationException e) {
            Files.createDirectories(dir);
        }
    }

    /**
     * Writes {@code parts} in order to {@code target} through a forced temp file; the target holds either its
     * old content or all of the new. The caller forces the directory ({@link #fsyncDirectory}) to make the
     * rename durable, once for several files.
     */
    public static void write(Path target, ByteBuffer... parts) throws IOException {
        Path temp = target.resolveSibling(target.getFileName() + TEMP_SUFFIX);
        long left = 0;
        for (ByteBuffer p : parts) {
            left += p.remaining();
        }
        try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            while (left > 0) {
                left -= ch.write(parts);
            }
            ch.force(true);
        } catch (IOException e) {
            Files.deleteIfExists(temp);
            throw e;
        }
        moveAtomically(temp, target);
    }

    public static void moveAtomically(Path from, Path to) throws IOException {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException | FileAlreadyExistsException e) {
            Files.move(from, to, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    /** Makes a rename or delete durable (the directory entry itself). */
    public static void fsyncDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }
}
