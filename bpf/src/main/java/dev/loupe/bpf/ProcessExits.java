package dev.loupe.bpf;

/**
 * Told that a process exited (its last thread), on the polling thread, in ring-buffer order: after every sample of
 * that process the kernel wrote before it.
 */
@FunctionalInterface
public interface ProcessExits {
    /** Ignores every exit. */
    ProcessExits NONE = (pid, processStartNs) -> { };

    /**
     * @param pid            the process's pid as this process's /proc names it
     * @param processStartNs its start, ns since boot (/proc/PID/stat's starttime, exact): with the pid, which process
     */
    void exited(int pid, long processStartNs);
}
