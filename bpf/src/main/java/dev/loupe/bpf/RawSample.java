package dev.loupe.bpf;

/**
 * One CPU sample as the kernel saw it, before symbolization.
 *
 * @param pid          process id (tgid) as this process's {@code /proc} names it; 0 for a process outside this
 *                     process's PID namespace ({@link #PID_OUTSIDE}): its pid here is unknown
 * @param tid          thread id, the same way
 * @param hostPid      process id in the initial PID namespace, as the kernel names it (the same as {@code pid}
 *                     outside containers); never for reading {@code /proc}
 * @param hostTid      thread id in the initial PID namespace
 * @param cpu          CPU the sample was taken on
 * @param comm         process name (thread group leader's comm)
 * @param threadComm   thread name
 * @param ktimeNs      CLOCK_MONOTONIC time of the sample
 * @param processStartNs when the process started, ns since boot (exact identity with the pid: PID reuse)
 * @param flags        {@link #USER_TRUNCATED}, {@link #USER_READ_ERROR}, {@link #KERNEL_ERROR}
 * @param kernelStack  kernel addresses, leaf first; [0] is the interrupted IP, the rest are return addresses
 * @param userStack    user addresses, leaf first; same convention
 */
public record RawSample(int pid, int tid, int hostPid, int hostTid, int cpu, String comm, String threadComm, long ktimeNs, long processStartNs, int flags,
                        long[] kernelStack, long[] userStack) {
    public static final int USER_TRUNCATED = 1;
    public static final int USER_READ_ERROR = 2;
    public static final int KERNEL_ERROR = 4;
    /** The process had no unwind state yet: its user stack came from frame pointers only. */
    public static final int FP_FALLBACK = 8;
    /** The user stack ends in a marker frame ({@link #isUnwindMarker}) naming why it stopped early. */
    public static final int UNWIND_STOPPED = 16;
    /**
     * The process is outside this process's PID namespace: {@code pid} and {@code tid} are 0 and there is
     * no user stack, since nothing here may be read for it.
     */
    public static final int PID_OUTSIDE = 32;
    /**
     * Not a sample: the process exited (its last thread). No frames; {@code pid}, {@code comm} and
     * {@code processStartNs} name it, {@code ktimeNs} is the exit. The sampler hands these to a
     * {@link ProcessExits} listener, never to a sample consumer.
     */
    public static final int PROCESS_EXIT = 64;

    /** Whether a user "address" is a stop marker; its reason code is {@link #markerReason}. */
    public static boolean isUnwindMarker(long address) {
        return (address & KernelAbi.UNWIND_MARKER) == KernelAbi.UNWIND_MARKER;
    }

    public static int markerReason(long marker) {
        return (int) (marker & ~KernelAbi.UNWIND_MARKER);
    }
}
