package dev.loupe.unwinder.proc;

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
}
