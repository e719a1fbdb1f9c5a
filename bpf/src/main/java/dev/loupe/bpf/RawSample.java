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
 * @param mappings     the mappings the walk found itself in the process's memory map, {@link #MAPPING_WORDS} words each
 *                     (start, end, file offset at start, device as the kernel encodes it, inode, {@code MAPPING_*} kind):
 *                     enough to name the frames in them once the process has exited; empty when the walk found none
 * @param offCpuState  {@link #OFF_CPU}: why the thread left the CPU ({@link OffCpuState#code()}); else 0
 * @param offCpuNs     {@link #OFF_CPU} as the sampler delivers it: how long the thread waited; else 0
 */
public record RawSample(int pid, int tid, int hostPid, int hostTid, int cpu, String comm, String threadComm, long ktimeNs, long processStartNs, int flags,
                        long[] kernelStack, long[] userStack, long[] mappings, int offCpuState, long offCpuNs) {
    /** A CPU sample. */
    public RawSample(int pid, int tid, int hostPid, int hostTid, int cpu, String comm, String threadComm, long ktimeNs,
                     long processStartNs, int flags, long[] kernelStack, long[] userStack, long[] mappings) {
        this(pid, tid, hostPid, hostTid, cpu, comm, threadComm, ktimeNs, processStartNs, flags, kernelStack, userStack, mappings, 0, 0);
    }

    /** A sample that carries no mappings. */
    public RawSample(int pid, int tid, int hostPid, int hostTid, int cpu, String comm, String threadComm, long ktimeNs,
                     long processStartNs, int flags, long[] kernelStack, long[] userStack) {
        this(pid, tid, hostPid, hostTid, cpu, comm, threadComm, ktimeNs, processStartNs, flags, kernelStack, userStack, NO_MAPPINGS);
    }

    public static final long[] NO_MAPPINGS = {};
    /** Words per mapping in {@link #mappings}: start, end, offset, device, inode, kind. */
    public static final int MAPPING_WORDS = 6;
    /** Kinds of a carried mapping: a file, the vdso, anonymous executable memory (a JIT's). */
    public static final int MAPPING_FILE = 0;
    public static final int MAPPING_VDSO = 1;
    public static final int MAPPING_ANONYMOUS = 2;

    public static final int USER_TRUNCATED = 1;
    public static final int USER_READ_ERROR = 2;
    public static final int KERNEL_ERROR = 4;
    /** Frames in a file whose unwind table is not in the kernel (yet) were walked with frame pointers. */
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
    /**
     * The walk met code that needs the process registered for unwinding (anonymous executable memory, a runtime's
     * file) and the process has no registration.
     */
    public static final int NEEDS_PROCESS = 128;
    /**
     * Not a CPU sample: a thread's wait off the CPU, its stack where it was switched out ({@code ktimeNs}), why in
     * {@code offCpuState}; the sampler delivers it once the thread ran again, with {@code offCpuNs} set.
     */
    public static final int OFF_CPU = 256;
    /** The kernel's second record of a wait (header only: host tid, switch-out time, length); never delivered. */
    public static final int OFF_CPU_END = 512;

    /** Whether this is an off-CPU wait rather than a CPU sample. */
    public boolean offCpu() {
        return (flags & OFF_CPU) != 0;
    }

    /** The same wait with its length known. */
    RawSample withOffCpuNs(long ns) {
        return new RawSample(pid, tid, hostPid, hostTid, cpu, comm, threadComm, ktimeNs, processStartNs, flags, kernelStack,
                userStack, mappings, offCpuState, ns);
    }

    /** Whether a user "address" is a stop marker; its reason code is {@link #markerReason}. */
    public static boolean isUnwindMarker(long address) {
        return (address & KernelAbi.UNWIND_MARKER) == KernelAbi.UNWIND_MARKER;
    }

    public static int markerReason(long marker) {
        return (int) (marker & ~KernelAbi.UNWIND_MARKER);
    }
}
