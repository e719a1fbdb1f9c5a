package dev.loupe.bpf;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * What to measure: one function of one binary, by file offsets (not virtual addresses), in process
 * {@code pid} or in every process that maps the binary, including ones that start later ({@code pid} = -1).
 * {@code id} is the probe's identity in the kernel (its BPF cookie) and in {@link LatencyProbes#readHistograms()}.
 *
 * @param retOffsets Go only: file offsets of every RET of the function (never a uretprobe on Go code)
 * @param goidOffset Go only: offset of {@code goid} in {@code runtime.g} (152 for Go 1.13 to 1.22)
 * @param gSource    Go only: where the current g is found
 * @param stacks     record the caller stack at entry of each call (see {@link LatencyGroup#stack()})
 */
public record ProbeSpec(int id, Path binary, int pid, long entryOffset, Kind kind, List<Long> retOffsets,
                        int goidOffset, GSource gSource, boolean stacks) {

    public enum Kind { GO, NATIVE }

    /** Where Go code keeps the current goroutine's g. */
    public enum GSource {
        /** Register R14: Go 1.17+ ABIInternal functions (at entry and at every RET). */
        R14,
        /** Thread-local storage at fs_base - 8 (any Go version on linux/amd64). */
        TLS
    }

    /** Largest goid offset accepted: runtime.g is a few hundred bytes. */
    static final int MAX_GOID_OFFSET = 4096;

    public ProbeSpec {
        Objects.requireNonNull(binary, "binary");
        Objects.requireNonNull(kind, "kind");
        retOffsets = List.copyOf(Objects.requireNonNull(retOffsets, "retOffsets"));
        if (id < 0) {
            throw new IllegalArgumentException("probe id " + id + " is negative");
        }
        if (pid < -1 || pid == 0) {
            throw new IllegalArgumentException("pid " + pid + ": give a process id or -1 for every process");
        }
        if (entryOffset < 0) {
            throw new IllegalArgumentException("entry offset " + entryOffset + " is negative");
        }
        if (kind == Kind.GO) {
            Objects.requireNonNull(gSource, "gSource");
            if (retOffsets.isEmpty()) {
                throw new IllegalArgumentException("Go function at " + binary + "+0x" + Long.toHexString(entryOffset)
                        + " has no RET (only tail jumps?): it cannot be probed safely");
            }
            for (long r : retOffsets) {
                if (r <= entryOffset) {
                    throw new IllegalArgumentException("RET offset 0x" + Long.toHexString(r) + " is not after the entry 0x"
                            + Long.toHexString(entryOffset));
                }
            }
            if (goidOffset <= 8 || goidOffset >= MAX_GOID_OFFSET || goidOffset % 8 != 0) {
                throw new IllegalArgumentException("goid offset " + goidOffset + " is not a plausible field offset of runtime.g");
            }
        } else if (!retOffsets.isEmpty()) {
            throw new IllegalArgumentException("native probes return through a uretprobe: give no RET offsets");
        }
    }

    /** A Go function: entry uprobe plus a uprobe on each RET, keyed by goroutine. */
    public static ProbeSpec go(int id, Path binary, int pid, long entryOffset, List<Long> retOffsets, int goidOffset,
                               GSource gSource) {
        return new ProbeSpec(id, binary, pid, entryOffset, Kind.GO, retOffsets, goidOffset, gSource, false);
    }

    /** A C/C++/Rust function: entry uprobe plus a uretprobe, keyed by thread. */
    public static ProbeSpec nativeFunction(int id, Path binary, int pid, long entryOffset) {
        return new ProbeSpec(id, binary, pid, entryOffset, Kind.NATIVE, List.of(), 0, null, false);
    }

    /** This probe under another id (ids are the agent's to hand out and reuse). */
    public ProbeSpec withId(int newId) {
        return new ProbeSpec(newId, binary, pid, entryOffset, kind, retOffsets, goidOffset, gSource, stacks);
    }

    /** This probe with caller stacks at entry on or off. */
    public ProbeSpec withStacks(boolean on) {
        return new ProbeSpec(id, binary, pid, entryOffset, kind, retOffsets, goidOffset, gSource, on);
    }

    @Override
    public String toString() {
        return "probe " + id + " (" + binary + "+0x" + Long.toHexString(entryOffset) + ", " + kind
                + (pid == -1 ? ", every process" : ", pid " + pid) + (stacks ? ", stacks" : "") + ")";
    }
}
