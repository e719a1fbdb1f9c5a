package dev.loupe.bpf;

/**
 * One CPU sample as the kernel saw it, before symbolization.
 *
 * @param pid          process id (tgid)
 * @param tid          thread id
 * @param cpu          CPU the sample was taken on
 * @param comm         process name (thread group leader's comm)
 * @param threadComm   thread name
 * @param ktimeNs      CLOCK_MONOTONIC time of the sample
 * @param processStartNs when the process started, ns since boot (exact identity with the pid: PID reuse)
 * @param flags        {@link #USER_TRUNCATED}, {@link #USER_READ_ERROR}, {@link #KERNEL_ERROR}
 * @param kernelStack  kernel addresses, leaf first; [0] is the interrupted IP, the rest are return addresses
 * @param userStack    user addresses, leaf first; same convention
 */
public record RawSample(int pid, int tid, int cpu, String comm, String threadComm, long ktimeNs, long processStartNs, int flags,
                        long[] kernelStack, long[] userStack) {
    public static final int USER_TRUNCATED = 1;
    public static final int USER_READ_ERROR = 2;
    public static final int KERNEL_ERROR = 4;
    /** The process had no unwind state yet: its user stack came from frame pointers only. */
    public static final int FP_FALLBACK = 8;
    /** The user stack ends in a marker frame ({@link #isUnwindMarker}) naming why it stopped early. */
    public static final int UNWIND_STOPPED = 16;

    /** Whether a user "address" is a stop marker; its reason code is {@link #markerReason}. */
    public static boolean isUnwindMarker(long address) {
        return (address & KernelAbi.UNWIND_MARKER) == KernelAbi.UNWIND_MARKER;
    }

    public static int markerReason(long marker) {
        return (int) (marker & ~KernelAbi.UNWIND_MARKER);
    }
}
