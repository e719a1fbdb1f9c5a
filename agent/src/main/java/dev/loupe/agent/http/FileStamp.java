package dev.loupe.agent.http;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * What tells a file's new version from its old one without reading it: inode (a file replaced by rename is a new
 * one), modification time and size; and its permission bits.
 */
record FileStamp(Object inode, long modifiedNanos, long size, Set<PosixFilePermission> permissions) {
    /** A file that could not be looked at. */
    static final FileStamp MISSING = new FileStamp("missing", -1, -1, Set.of());

    static FileStamp of(Path file) throws IOException {
        PosixFileAttributes a = Files.readAttributes(file, PosixFileAttributes.class); // follows symlinks, as reading does
        return new FileStamp(a.fileKey(), a.lastModifiedTime().to(TimeUnit.NANOSECONDS), a.size(), a.permissions());
    }

    /** The same version: permissions aside (a chmod alone changes the ctime, not these). */
    boolean sameVersion(FileStamp other) {
        return other != null && inode.equals(other.inode) && modifiedNanos == other.modifiedNanos && size == other.size;
    }

    /** {@code 0640}-style octal of the permission bits. */
    static String octal(Set<PosixFilePermission> permissions) {
        int mode = 0;
        for (PosixFilePermission p : permissions) {
            mode |= 1 << (8 - p.ordinal()); // OWNER_READ is ordinal 0 = 0400, ..., OTHERS_EXECUTE is 8 = 0001
        }
        return String.format("0%03o", mode);
    }

    static boolean openToOthers(Set<PosixFilePermission> p) {
        return p.contains(PosixFilePermission.OTHERS_READ) || p.contains(PosixFilePermission.OTHERS_WRITE)
                || p.contains(PosixFilePermission.OTHERS_EXECUTE);
    }
}
