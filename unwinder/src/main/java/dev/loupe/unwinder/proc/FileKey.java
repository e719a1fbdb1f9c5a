package dev.loupe.unwinder.proc;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Which file, as a cache key: device, inode, size and modification time. A deploy that renames a new binary over a
 * path gives another inode; one that rewrites it in place another size or time. {@code device} is encoded as
 * {@code stat}'s {@code st_dev} ({@link #device(int, int)}), so a key made from a maps line and one made by
 * {@link #of(Path)} compare equal for the same file on the same file system.
 */
public record FileKey(long device, long inode, long size, long mtimeNanos) {
    /** No file: a stand-in where none is known. */
    public static final FileKey NONE = new FileKey(-1, -1, -1, -1);

    /** The file {@code path} names now (symlinks followed); empty if there is none or it cannot be read. */
    public static Optional<FileKey> of(Path path) {
        try {
            Map<String, Object> a = Files.readAttributes(path, "unix:dev,ino,size,lastModifiedTime");
            return Optional.of(new FileKey((Long) a.get("dev"), (Long) a.get("ino"), (Long) a.get("size"),
                    ((FileTime) a.get("lastModifiedTime")).to(TimeUnit.NANOSECONDS)));
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException | ClassCastException e) {
            return Optional.empty();
        }
    }

    /**
     * The file a process mapped: the maps line's device and inode (the file the mapping holds, whatever path it is
     * opened by) with the size and modification time of {@code attributes}, read through {@code /proc/PID/map_files}
     * or {@code /proc/PID/root}.
     */
    public static FileKey of(MapEntry mapping, BasicFileAttributes attributes) {
        return new FileKey(device(mapping.devMajor(), mapping.devMinor()), mapping.inode(), attributes.size(),
                attributes.lastModifiedTime().to(TimeUnit.NANOSECONDS));
    }

    /** {@code major:minor} as glibc's {@code makedev} encodes a {@code dev_t} (what {@code stat} reports). */
    public static long device(int major, int minor) {
        long ma = Integer.toUnsignedLong(major);
        long mi = Integer.toUnsignedLong(minor);
        return (ma & 0xfff) << 8 | (ma & 0xfffff000L) << 32 | mi & 0xff | (mi & 0xffffff00L) << 12;
    }
}
