package dev.loupe.bpf;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Which pids the programs report ({@code struct pid_ns_config}, {@code pid_ns_abi.h}): those of the PID
 * namespace this process runs in, which is the one its {@code /proc} shows. The kernel names tasks by their pids in the
 * initial namespace; inside a container that pid may be another process's here. There, the program
 * translates with {@code bpf_get_ns_current_pid_tgid}, which names only tasks of that namespace itself:
 * every other task is outside (no pid, no user stack). Without the helper every task is outside.
 *
 * @param mode   how pids are reported
 * @param device the namespace's nsfs device as the kernel encodes a {@code dev_t} (0 in the initial namespace)
 * @param inode  the namespace's inode ({@code /proc/self/ns/pid})
 */
record SampledPids(Mode mode, long device, long inode) {
    /** {@code enum pid_ns_mode}, by ordinal ({@code PID_NS_} + name). */
    enum Mode { INITIAL, TRANSLATE, ALL_OUTSIDE }

    /** The initial PID namespace's inode, fixed by the kernel ({@code PROC_PID_INIT_INO}). */
    static final long INITIAL_INODE = 0xEFFFFFFCL;

    static final SampledPids INITIAL = new SampledPids(Mode.INITIAL, 0, INITIAL_INODE);

    /** Where {@link #config} goes: a read-only section, so set before load. */
    static final String SECTION = ".rodata.pid_ns";

    /**
     * This process's namespace ({@code /proc/self/ns/pid}), translated if the kernel lets programs of every one of
     * {@code progTypes} call the helper (one object's programs share the setting).
     */
    static SampledPids ofThisProcess(int... progTypes) throws BpfException {
        Path link = Path.of("/proc/self/ns/pid");
        boolean helper = true;
        for (int type : progTypes) {
            helper &= BpfAvailability.namespacePidHelper(type);
        }
        try {
            return of((Long) Files.getAttribute(link, "unix:dev"), (Long) Files.getAttribute(link, "unix:ino"), helper);
        } catch (IOException | UnsupportedOperationException e) {
            throw new BpfException("cannot tell which PID namespace this process is in (stat " + link + "): " + e, 0);
        }
    }

    /**
     * The mode for a namespace: {@code stDev} and {@code inode} as stat(2) gives them for its nsfs file,
     * {@code helper} whether the kernel lets the program call {@code bpf_get_ns_current_pid_tgid}.
     */
    static SampledPids of(long stDev, long inode, boolean helper) {
        if (inode == INITIAL_INODE) {
            return INITIAL;
        }
        return new SampledPids(helper ? Mode.TRANSLATE : Mode.ALL_OUTSIDE, kernelDevice(stDev), inode);
    }

    /**
     * A device number as stat(2) encodes it (glibc's major/minor split) as the kernel's internal
     * {@code dev_t} (major &lt;&lt; 20 | minor), which the helper compares with: they differ once the minor
     * number passes 255.
     */
    static long kernelDevice(long stDev) {
        long major = ((stDev >>> 8) & 0xfff) | ((stDev >>> 32) & 0xfffff000L);
        long minor = (stDev & 0xff) | ((stDev >>> 12) & 0xffffff00L);
        return major << 20 | minor;
    }

    /** The section's contents, {@code struct pid_ns_config}. */
    MemorySegment config(Arena arena) {
        MemorySegment c = arena.allocate(KernelAbi.PID_NS_CONFIG);
        c.set(JAVA_INT, KernelAbi.offset(KernelAbi.PID_NS_CONFIG, "mode"), mode.ordinal());
        c.set(JAVA_LONG, KernelAbi.offset(KernelAbi.PID_NS_CONFIG, "dev"), device);
        c.set(JAVA_LONG, KernelAbi.offset(KernelAbi.PID_NS_CONFIG, "ino"), inode);
        return c;
    }

    /** For the start log line. */
    String describe() {
        return switch (mode) {
            case INITIAL -> "initial PID namespace";
            case TRANSLATE -> "PID namespace " + inode + ": pids as seen in it, processes outside it without pid or user stack";
            case ALL_OUTSIDE -> "PID namespace " + inode + " but the kernel lacks bpf_get_ns_current_pid_tgid:"
                    + " no process has a pid or user stack";
        };
    }
}
