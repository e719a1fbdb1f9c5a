package dev.loupe.agent.http;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The file of {@code http.socket}: what may be at the path before the listener binds it, and its mode after.
 * Connecting to a Unix socket needs write permission on its file, so mode 0660 admits the owner and the group:
 * the agent's group, or the directory's when the directory is setgid (systemd's {@code RuntimeDirectory=}
 * makes /run/loupe the service's). Between bind and chmod the file has the process umask's mode; the directory
 * (0750 for the service) is what keeps others out meanwhile.
 */
final class UnixSocketFile {
    static final String MODE = "rw-rw----";

    private UnixSocketFile() {}

    /**
     * Makes {@code path} free to bind: a socket nobody listens on (left by a crash) is removed; a live socket,
     * or anything that is not a socket, is an error; the directory must exist.
     */
    static void prepare(Path path) throws IOException {
        Path dir = path.toAbsolutePath().getParent();
        if (!Files.isDirectory(dir)) {
            throw new IOException("directory " + dir + " does not exist (the service's RuntimeDirectory=loupe makes /run/loupe)");
        }
        if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (!isSocket(path)) {
            throw new IOException(path + " exists and is not a socket: remove it or choose another http.socket");
        }
        try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            probe.connect(UnixDomainSocketAddress.of(path));
            throw new IOException("another process serves " + path + " (is another loupe running?)");
        } catch (java.net.ConnectException stale) {
            Files.delete(path); // ECONNREFUSED: nobody listens, a crash left it
        }
    }

    /** After bind: mode 0660. */
    static void restrict(Path path) throws IOException {
        Files.setPosixFilePermissions(path, PosixFilePermissions.fromString(MODE));
    }

    static boolean isSocket(Path path) throws IOException {
        Object mode = Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        return ((Integer) mode & 0170000) == 0140000; // S_IFSOCK
    }
}
