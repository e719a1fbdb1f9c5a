package dev.loupe.bpf;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Whether this host can run Loupe's BPF sampler, and if not, exactly why, in one line
 * (in the manner of Netty's {@code Epoll.unavailabilityCause()}).
 */
public final class BpfAvailability {
    /** bpf_loop (5.17) is the newest kernel feature the sampler uses. */
    static final int MIN_MAJOR = 5;
    static final int MIN_MINOR = 17;
    private static final int CAP_SYS_ADMIN = 21;
    private static final int CAP_PERFMON = 38;
    private static final int CAP_BPF = 39;

    private final String osName;
    private final String osArch;
    private final Supplier<String> libbpfError;
    private final Path btf;
    private final Path osRelease;
    private final Path procStatus;

    BpfAvailability(String osName, String osArch, Supplier<String> libbpfError, Path btf, Path osRelease,
                    Path procStatus) {
        this.osName = osName;
        this.osArch = osArch;
        this.libbpfError = libbpfError;
        this.btf = btf;
        this.osRelease = osRelease;
        this.procStatus = procStatus;
    }

    private static BpfAvailability host() {
        return new BpfAvailability(System.getProperty("os.name"), System.getProperty("os.arch"),
                LibBpf::loadError, Path.of("/sys/kernel/btf/vmlinux"), Path.of("/proc/sys/kernel/osrelease"),
                Path.of("/proc/self/status"));
    }

    /** Empty when BPF sampling can be used on this host; otherwise one line naming what is missing. */
    public static Optional<String> unavailabilityReason() {
        return host().reason();
    }

    Optional<String> reason() {
        if (!"Linux".equals(osName) || !("amd64".equals(osArch) || "x86_64".equals(osArch))) {
            return Optional.of("unsupported platform: Loupe's BPF sampler needs Linux on x86-64, this is "
                    + osName + " " + osArch);
        }
        String kernel = read(osRelease);
        if (kernel != null && !kernelAtLeast(kernel, MIN_MAJOR, MIN_MINOR)) {
            return Optional.of("kernel too old: " + kernel + " (need Linux >= " + MIN_MAJOR + "." + MIN_MINOR
                    + " for bpf_loop and BPF ring buffers)");
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
        return Optional.empty();
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

    static boolean kernelAtLeast(String release, int major, int minor) {
        String[] parts = release.trim().split("[.-]");
        try {
            int ma = Integer.parseInt(parts[0]);
            int mi = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
            return ma > major || (ma == major && mi >= minor);
        } catch (NumberFormatException e) {
            return true; // unparseable: let the load itself decide
        }
    }

    private static String read(Path p) {
        try {
            return SysctlFiles.read(p);
        } catch (IOException e) {
            return null;
        }
    }
}
