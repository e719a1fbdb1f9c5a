package dev.loupe.bpf;

import java.util.Map;

/** errno names for messages ("EPERM"), with libc's strerror text. */
final class Errno {
    private static final Map<Integer, String> NAMES = Map.ofEntries(
            Map.entry(1, "EPERM"), Map.entry(2, "ENOENT"), Map.entry(3, "ESRCH"), Map.entry(4, "EINTR"),
            Map.entry(5, "EIO"), Map.entry(7, "E2BIG"), Map.entry(9, "EBADF"), Map.entry(11, "EAGAIN"),
            Map.entry(12, "ENOMEM"), Map.entry(13, "EACCES"), Map.entry(14, "EFAULT"), Map.entry(16, "EBUSY"),
            Map.entry(17, "EEXIST"), Map.entry(19, "ENODEV"), Map.entry(22, "EINVAL"), Map.entry(24, "EMFILE"),
            Map.entry(28, "ENOSPC"), Map.entry(38, "ENOSYS"), Map.entry(95, "EOPNOTSUPP"),
            Map.entry(524, "ENOTSUPP"));

    private Errno() {}

    static String describe(int errno) {
        if (errno == 0) {
            return "no errno";
        }
        String name = NAMES.getOrDefault(errno, "errno " + errno);
        return LibC.strerror(errno) + " (" + name + ")";
    }
}
