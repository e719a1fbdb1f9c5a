package dev.loupe.agent.latency;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Map;
import java.util.Optional;

/**
 * Which file a path names now: device, inode, size and modification time. A deploy that renames a new binary
 * over the path, rewrites it in place or moves a symlink changes it; uprobes stay on the inode they were
 * attached to, so a change means the functions must be resolved and attached again.
 */
record FileKey(long device, long inode, long size, long mtimeNanos) {
    static final FileKey NONE = new FileKey(-1, -1, -1, -1);

    /** The file {@code path} names now (symlinks followed); empty if there is none or it cannot be read. */
    static Optional<FileKey> of(Path path) {
        try {
            Map<String, Object> a = Files.readAttributes(path, "unix:dev,ino,size,lastModifiedTime");
            FileTime m = (FileTime) a.get("lastModifiedTime");
            return Optional.of(new FileKey((Long) a.get("dev"), (Long) a.get("ino"), (Long) a.get("size"),
                    m.to(java.util.concurrent.TimeUnit.NANOSECONDS)));
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException | ClassCastException e) {
            return Optional.empty();
        }
    }
}
