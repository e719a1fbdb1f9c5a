package dev.loupe.unwinder.proc;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** One line of /proc/PID/maps. {@code path} has any " (deleted)" suffix removed; {@code deleted} says so. */
public record MapEntry(long start, long end, String perms, long offset, int devMajor, int devMinor, long inode,
                       String path, boolean deleted) {
    public boolean executable() {
        return perms.length() >= 3 && perms.charAt(2) == 'x';
    }

    /** A file-backed mapping (not anonymous, not [heap]/[stack]/[vdso]...). */
    public boolean fileBacked() {
        return inode != 0 && path.startsWith("/");
    }

    /**
     * Executable memory no file backs, where runtimes put the code they generate (JIT compilers): anonymous or named
     * anonymous ({@code [anon:...]}) memory, not the kernel's {@code [vdso]} or {@code [vsyscall]}.
     */
    public boolean anonymousCode() {
        return executable() && !fileBacked() && !path.equals("[vdso]") && !path.equals("[vsyscall]");
    }

    /** The name of this mapping under /proc/PID/map_files/. */
    public String mapFilesName() {
        return Long.toHexString(start) + "-" + Long.toHexString(end);
    }

    /**
     * The mapped file, readable as process {@code pid} maps it: its {@code map_files} link (the very file, even if
     * replaced or deleted since), else its path inside the process's root unless it was deleted.
     *
     * @throws IOException neither is readable (process gone, no permission)
     */
    public Path readableFile(Path procRoot, int pid) throws IOException {
        Path pidDir = procRoot.resolve(Integer.toString(pid));
        Path viaMapFiles = pidDir.resolve("map_files").resolve(mapFilesName());
        if (Files.isReadable(viaMapFiles)) {
            return viaMapFiles;
        }
        Path viaRoot = pidDir.resolve("root").resolve(path.substring(1));
        if (!deleted && Files.isReadable(viaRoot)) {
            return viaRoot;
        }
        throw new IOException(path + " of pid " + pid + " is not readable");
    }
}
