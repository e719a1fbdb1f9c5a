package dev.loupe.bpf;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Whether this host can run Loupe's BPF programs, and if not, exactly why, in one line (in the manner of
 * Netty's {@code Epoll.unavailabilityCause()}). The kernel is probed for what the programs use (program
 * and map types, each helper), not judged by its version: a 5.14 kernel with backports works, and a
 * kernel missing one helper is named precisely, with its release so the line says which kernel that is.
 * Checked once per process.
 */
public final class BpfAvailability {
    private static final int CAP_SYS_ADMIN = 21;
    private static final int CAP_PERFMON = 38;
    private static final int CAP_BPF = 39;
    static final int PROG_KPROBE = 2;
    static final int PROG_PERF_EVENT = 7;
    static final int PROG_RAW_TRACEPOINT = 17;
    static final int MAP_RINGBUF = 27;

    /** A BPF helper a program type must allow: id (enum bpf_func_id), name, the Linux version that added it. */
    record Helper(int progType, int id, String name, String since) {}

    /** What profiler.bpf.c calls from its perf_event programs and its process-exit tracepoint program. */
    static final List<Helper> SAMPLER_HELPERS = List.of(
            new Helper(PROG_PERF_EVENT, 67, "bpf_get_stack", "4.18"),
            new Helper(PROG_PERF_EVENT, 112, "bpf_probe_read_user", "5.5"),
            new Helper(PROG_PERF_EVENT, 130, "bpf_ringbuf_output", "5.8"),
            new Helper(PROG_PERF_EVENT, 134, "bpf_ringbuf_query", "5.8"),
            new Helper(PROG_PERF_EVENT, 158, "bpf_get_current_task_btf", "5.11"),
            new Helper(PROG_PERF_EVENT, 175, "bpf_task_pt_regs", "5.15"),
            new Helper(PROG_PERF_EVENT, 125, "bpf_ktime_get_boot_ns", "5.8"),
            new Helper(PROG_PERF_EVENT, 181, "bpf_loop", "5.17"),
            new Helper(PROG_RAW_TRACEPOINT, 131, "bpf_ringbuf_reserve", "5.8"),
            new Helper(PROG_RAW_TRACEPOINT, 132, "bpf_ringbuf_submit", "5.8"),
            new Helper(PROG_RAW_TRACEPOINT, 134, "bpf_ringbuf_query", "5.8"),
            new Helper(PROG_RAW_TRACEPOINT, 158, "bpf_get_current_task_btf", "5.11"));

    /**
     * Used only when the agent runs in a PID namespace other than the initial one, and optional there: without
     * it the programs report every task as outside that namespace ({@link SampledPids}) instead of failing.
     */
    static final String NAMESPACE_PID_HELPER = "bpf_get_ns_current_pid_tgid";
    static final int NAMESPACE_PID_HELPER_ID = 120;

    /** Kernel feature probes (libbpf_probe_bpf_*): 1 supported, 0 not, negative: the probe itself failed. */
    interface KernelProbes {
        int progType(int type);

        int mapType(int type);

        int helper(int progType, int helperId);
    }

    static final KernelProbes LIBBPF_PROBES = new KernelProbes() {
        @Override
        public int progType(int type) {
            return (int) LibBpf.PROBE_PROG_TYPE.raw(type, java.lang.foreign.MemorySegment.NULL);
        }

        @Override
        public int mapType(int type) {
            return (int) LibBpf.PROBE_MAP_TYPE.raw(type, java.lang.foreign.MemorySegment.NULL);
        }

        @Override
        public int helper(int progType, int helperId) {
            return (int) LibBpf.PROBE_HELPER.raw(progType, helperId, java.lang.foreign.MemorySegment.NULL);
        }
    };

    private final String osName;
    private final String osArch;
    private final Supplier<String> libbpfError;
    private final Path btf;
    private final Path procStatus;
    private final Path osRelease;
    private final Supplier<KernelProbes> probes;

    BpfAvailability(String osName, String osArch, Supplier<String> libbpfError, Path btf, Path procStatus, Path osRelease,
                    Supplier<KernelProbes> probes) {
        this.osName = osName;
        this.osArch = osArch;
        this.libbpfError = libbpfError;
        this.btf = btf;
        this.procStatus = procStatus;
        this.osRelease = osRelease;
        this.probes = probes;
    }

    private static final class Host {
        static final Optional<String> REASON = new BpfAvailability(System.getProperty("os.name"),
                System.getProperty("os.arch"), LibBpf::loadError, Path.of("/sys/kernel/btf/vmlinux"),
                Path.of("/proc/self/status"), Path.of("/proc/sys/kernel/osrelease"), () -> LIBBPF_PROBES).reason();
    }

    /** Whether programs of {@code progType} may call {@link #NAMESPACE_PID_HELPER} (a failed probe says no). */
    static boolean namespacePidHelper(int progType) {
        return LIBBPF_PROBES.helper(progType, NAMESPACE_PID_HELPER_ID) > 0;
    }

    /** Empty when BPF sampling can be used on this host; otherwise one line naming what is missing. */
    public static Optional<String> unavailabilityReason() {
        return Host.REASON;
    }

    Optional<String> reason() {
        if (!"Linux".equals(osName) || !("amd64".equals(osArch) || "x86_64".equals(osArch))) {
            return Optional.of("unsupported platform: Loupe's BPF sampler needs Linux on x86-64, this is "
                    + osName + " " + osArch);
        }
        if (!Files.exists(btf)) {
            return Optional.of("no BTF: " + btf + " is missing (kernel built without CONFIG_DEBUG_INFO_BTF)");
        }
        String status = read(procStatus);
        if (status != null) {
            long caps = capEff(status);
            boolean bpf = has(caps, CAP_BPF) && has(caps, CAP_PERFMON);
            if (!bpf && !has(caps, CAP_SYS_ADMIN)) {
                return Optional.of("no CAP_BPF/CAP_PERFMON: run as root or grant CAP_BPF and CAP_PERFMON"
                        + " (effective capabilities: 0x" + Long.toHexString(caps) + ")");
            }
        }
        String lib = libbpfError.get();
        if (lib != null) {
            return Optional.of(lib);
        }
        String release = read(osRelease);
        return kernelReason(probes.get(), release == null ? null : release.trim());
    }

    /** The first kernel feature the sampler needs and this kernel ({@code release}; null: unknown) lacks. */
    static Optional<String> kernelReason(KernelProbes p, String release) {
        String kernel = release == null || release.isEmpty() ? "kernel" : "kernel " + release;
        int prog = p.progType(PROG_PERF_EVENT);
        if (prog <= 0) {
            return Optional.of(kernel + " lacks BPF perf_event programs" + probeError(prog));
        }
        int tp = p.progType(PROG_RAW_TRACEPOINT);
        if (tp <= 0) {
            return Optional.of(kernel + " lacks BPF raw tracepoint programs" + probeError(tp));
        }
        int rb = p.mapType(MAP_RINGBUF);
        if (rb <= 0) {
            return Optional.of(kernel + " lacks BPF ring buffers (BPF_MAP_TYPE_RINGBUF, Linux >= 5.8 or a backport)"
                    + probeError(rb));
        }
        for (Helper h : SAMPLER_HELPERS) {
            int r = p.helper(h.progType(), h.id());
            if (r <= 0) {
                return Optional.of(kernel + " lacks BPF helper " + h.name() + " for "
                        + (h.progType() == PROG_RAW_TRACEPOINT ? "raw tracepoint" : "perf_event") + " programs (Linux >= "
                        + h.since() + " or a backport)" + probeError(r));
            }
        }
        return Optional.empty();
    }

    private static String probeError(int rc) {
        return rc < 0 ? " (probe failed: " + Errno.describe(-rc) + ")" : "";
    }

    private static boolean has(long caps, int cap) {
        return (caps & (1L << cap)) != 0;
    }

    static long capEff(String status) {
        for (String line : status.split("\n")) {
            if (line.startsWith("CapEff:")) {
                return Long.parseUnsignedLong(line.substring(7).trim(), 16);
            }
        }
        return 0;
    }

    private static String read(Path p) {
        try {
            return SysctlFiles.read(p);
        } catch (IOException e) {
            return null;
        }
    }
}
