package dev.loupe.bpf;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** A loaded BPF program of a {@link BpfObject}: attach it, read its run statistics. */
public final class BpfProgram {
    /** struct bpf_uprobe_opts of libbpf 1.1: sz@0, ref_ctr_offset@8, bpf_cookie@16, bool retprobe@24, func_name@32. */
    private static final int UPROBE_OPTS_SIZE = 40;

    private final String name;
    private final MemorySegment handle;
    private final int fd;

    BpfProgram(String name, MemorySegment handle, int fd) {
        this.name = name;
        this.handle = handle;
        this.fd = fd;
    }

    public String name() {
        return name;
    }

    public int fd() {
        return fd;
    }

    /** Attaches to an open perf event; the link owns (and closes) the perf fd. */
    public BpfLink attachPerfEvent(int perfFd) throws BpfException {
        MemorySegment link = LibBpf.ATTACH_PERF_EVENT.pointer(name + " to perf fd " + perfFd, handle, perfFd);
        return new BpfLink(name + "@perf" + perfFd, link);
    }

    /** Attaches to the kernel's raw tracepoint {@code name} (e.g. sched_process_exit): by name, without tracefs. */
    public BpfLink attachRawTracepoint(String name) throws BpfException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment link = LibBpf.ATTACH_RAW_TRACEPOINT.pointer(this.name + " to raw tracepoint " + name, handle,
                    a.allocateFrom(name));
            return new BpfLink(this.name + "@" + name, link);
        }
    }

    /**
     * Attaches as a uprobe at {@code fileOffset} of {@code binary} (a file offset, not a virtual address),
     * in process {@code pid} or in every process ({@code pid} = -1). {@code cookie} is what
     * {@code bpf_get_attach_cookie} returns in the program.
     */
    public BpfLink attachUprobe(int pid, Path binary, long fileOffset, long cookie) throws BpfException {
        return attachUprobe(pid, binary, null, fileOffset, cookie, false);
    }

    /** As {@link #attachUprobe(int, Path, long, long)}, for a function's return (a uretprobe). */
    public BpfLink attachUretprobe(int pid, Path binary, long fileOffset, long cookie) throws BpfException {
        return attachUprobe(pid, binary, null, fileOffset, cookie, true);
    }

    /**
     * A uprobe at {@code offsetInFunction} bytes into the ELF symbol {@code function} (libbpf resolves it),
     * or its return with {@code retprobe}.
     */
    public BpfLink attachUprobe(int pid, Path binary, String function, long offsetInFunction, long cookie, boolean retprobe)
            throws BpfException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment opts = a.allocate(UPROBE_OPTS_SIZE, 8);
            opts.set(JAVA_LONG, 0, UPROBE_OPTS_SIZE);
            opts.set(JAVA_LONG, 16, cookie);
            opts.set(JAVA_BYTE, 24, (byte) (retprobe ? 1 : 0));
            if (function != null) {
                opts.set(java.lang.foreign.ValueLayout.ADDRESS, 32, a.allocateFrom(function));
            }
            String what = (retprobe ? "uretprobe " : "uprobe ") + binary + (function != null ? ":" + function : "")
                    + "+0x" + Long.toHexString(offsetInFunction) + " pid " + pid + " cookie " + cookie;
            MemorySegment link = LibBpf.ATTACH_UPROBE_OPTS.pointer(what, handle, pid, binary.toString(), offsetInFunction, opts);
            return new BpfLink(what, link);
        }
    }

    /**
     * Cumulative run time and count (both 0 unless kernel.bpf_stats_enabled=1 or {@link #enableRunStats}).
     * Fails if the running kernel's BTF does not say where they are.
     */
    public RunStats runStats() throws BpfException {
        KernelAbi.ProgInfoOffsets at = KernelAbi.progInfoOffsets();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment info = a.allocate(KernelAbi.PROG_INFO_SIZE, 8);
            LibBpf.objGetInfoByFd(fd, info);
            return new RunStats(info.get(JAVA_LONG, at.runTimeNs()), info.get(JAVA_LONG, at.runCount()));
        }
    }

    /**
     * Turns on run statistics for every BPF program until the returned handle is closed (BPF_ENABLE_STATS:
     * the kernel counts holders, so this neither undoes nor is undone by kernel.bpf_stats_enabled).
     */
    static RunStatsOn enableRunStats() throws BpfException {
        int fd = LibBpf.ENABLE_STATS.status("BPF_STATS_RUN_TIME", LibBpf.BPF_STATS_RUN_TIME);
        return () -> LibC.close(fd);
    }

    /** Run statistics on until closed. */
    interface RunStatsOn extends AutoCloseable {
        @Override
        void close();
    }

    /** A program's cumulative kernel run time and run count. */
    public record RunStats(long runTimeNs, long runCount) {}
}
