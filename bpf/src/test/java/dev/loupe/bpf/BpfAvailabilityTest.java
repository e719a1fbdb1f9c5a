package dev.loupe.bpf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BpfAvailabilityTest {
    @TempDir
    Path dir;

    /** Probes answering 1 for everything except the named helper / map type / program type (answering {@code answer}). */
    static BpfAvailability.KernelProbes probesLacking(int progType, int mapType, int helperId, int answer) {
        return new BpfAvailability.KernelProbes() {
            @Override
            public int progType(int type) {
                return type == progType ? answer : 1;
            }

            @Override
            public int mapType(int type) {
                return type == mapType ? answer : 1;
            }

            @Override
            public int helper(int prog, int id) {
                return id == helperId ? answer : 1;
            }
        };
    }

    private static final BpfAvailability.KernelProbes ALL = probesLacking(-1, -1, -1, 0);

    private BpfAvailability fake(String os, String release, boolean btf, String capEff, String libbpfError) throws Exception {
        return fake(os, release, btf, capEff, libbpfError, ALL);
    }

    /** A host whose /proc/sys/kernel/osrelease says {@code release} (null: the file is missing). */
    private BpfAvailability fake(String os, String release, boolean btf, String capEff, String libbpfError,
                                 BpfAvailability.KernelProbes probes) throws Exception {
        Path btfFile = dir.resolve("vmlinux");
        if (btf) {
            Files.writeString(btfFile, "x");
        } else {
            Files.deleteIfExists(btfFile);
        }
        Path status = Files.writeString(dir.resolve("status"), "Name:\tjava\nCapInh:\t0000000000000000\nCapEff:\t" + capEff + "\n");
        Path osRelease = dir.resolve("osrelease");
        if (release != null) {
            Files.writeString(osRelease, release + "\n");
        } else {
            Files.deleteIfExists(osRelease);
        }
        return new BpfAvailability(os, "amd64", () -> libbpfError, btfFile, status, osRelease, () -> probes);
    }

    private static final String ROOT_CAPS = "000001ffffffffff";

    @Test
    void eachMissingPrerequisiteIsNamedInOneLine() throws Exception {
        assertEquals(Optional.empty(), fake("Linux", "6.1.0-18-amd64", true, ROOT_CAPS, null).reason());
        assertTrue(fake("Mac OS X", "6.1", true, ROOT_CAPS, null).reason().orElseThrow().startsWith("unsupported platform"));
        assertTrue(fake("Linux", "6.1.0", false, ROOT_CAPS, null).reason().orElseThrow().startsWith("no BTF: "));
        String caps = fake("Linux", "6.1.0", true, "0000000000000000", null).reason().orElseThrow();
        assertTrue(caps.startsWith("no CAP_BPF/CAP_PERFMON"), caps);
        // CAP_BPF (39) + CAP_PERFMON (38) without CAP_SYS_ADMIN is enough; CAP_BPF alone is not.
        assertEquals(Optional.empty(), fake("Linux", "6.1.0", true, Long.toHexString((1L << 39) | (1L << 38)), null).reason());
        assertTrue(fake("Linux", "6.1.0", true, Long.toHexString(1L << 39), null).reason().isPresent());
        assertEquals(Optional.empty(), fake("Linux", "6.1.0", true, Long.toHexString(1L << 21), null).reason());
        assertEquals("libbpf missing: x", fake("Linux", "6.1.0", true, ROOT_CAPS, "libbpf missing: x").reason().orElseThrow());
        assertTrue(fake("Linux", "6.1.0", false, ROOT_CAPS, null).reason().orElseThrow().indexOf('\n') < 0);
    }

    /** The kernel is judged by what it can do, not by its version: each missing feature is named, with the release. */
    @Test
    void missingKernelFeaturesAreNamedPrecisely() throws Exception {
        assertEquals("kernel 5.15.0-91-generic lacks BPF helper bpf_loop for perf_event programs (Linux >= 5.17 or a backport)",
                fake("Linux", "5.15.0-91-generic", true, ROOT_CAPS, null, probesLacking(-1, -1, 181, 0)).reason().orElseThrow());
        assertEquals("kernel 6.8.0 lacks BPF helper bpf_task_pt_regs for perf_event programs (Linux >= 5.15 or a backport)",
                fake("Linux", "6.8.0", true, ROOT_CAPS, null, probesLacking(-1, -1, 175, 0)).reason().orElseThrow());
        assertEquals("kernel 5.4.0-150-generic lacks BPF ring buffers (BPF_MAP_TYPE_RINGBUF, Linux >= 5.8 or a backport)",
                fake("Linux", "5.4.0-150-generic", true, ROOT_CAPS, null, probesLacking(-1, BpfAvailability.MAP_RINGBUF, -1, 0))
                        .reason().orElseThrow());
        assertEquals("kernel 6.1.0-18-amd64 lacks BPF perf_event programs (probe failed: Operation not permitted (EPERM))",
                fake("Linux", "6.1.0-18-amd64", true, ROOT_CAPS, null, probesLacking(BpfAvailability.PROG_PERF_EVENT, -1, -1, -1))
                        .reason().orElseThrow());
        // An unreadable release leaves the kernel unnamed rather than failing the check.
        assertEquals("kernel lacks BPF helper bpf_loop for perf_event programs (Linux >= 5.17 or a backport)",
                fake("Linux", null, true, ROOT_CAPS, null, probesLacking(-1, -1, 181, 0)).reason().orElseThrow());
    }

    /** A release older than every helper's "since" is fine when the probes say the features are there (backports). */
    @Test
    void anOldReleaseWithTheFeaturesBackportedIsAvailable() throws Exception {
        assertEquals(Optional.empty(), fake("Linux", "4.18.0-553.el8_10.x86_64", true, ROOT_CAPS, null).reason());
    }

    /** The real probes on this kernel: every helper the sampler uses is there, and a nonsense one is not. */
    @Test
    void realProbesOnThisKernel() {
        String release = System.getProperty("os.version");
        assertEquals(Optional.empty(), BpfAvailability.kernelReason(realProbes(), release));
        String lacking = BpfAvailability.kernelReason(new BpfAvailability.KernelProbes() {
            @Override
            public int progType(int type) {
                return realProbes().progType(type);
            }

            @Override
            public int mapType(int type) {
                return realProbes().mapType(type);
            }

            @Override
            public int helper(int prog, int id) {
                // bpf_loop (181) is not callable from a socket filter without CAP_... : ask a type that lacks it
                return realProbes().helper(prog, id == 181 ? 99_999 : id);
            }
        }, release).orElseThrow();
        assertTrue(lacking.startsWith("kernel " + release + " lacks BPF helper bpf_loop for perf_event programs"), lacking);
    }

    /**
     * bpf_get_ns_current_pid_tgid (helper 120) is optional: a kernel without it is available (the programs then
     * report every process as outside a non-initial namespace); this one has it for both program types.
     */
    @Test
    void theNamespacePidHelperIsOptionalAndThisKernelHasIt() {
        assertEquals(Optional.empty(), BpfAvailability.kernelReason(probesLacking(-1, -1, 120, 0), "5.6.0"));
        assertEquals(true, BpfAvailability.namespacePidHelper(BpfAvailability.PROG_PERF_EVENT));
        assertEquals(true, BpfAvailability.namespacePidHelper(BpfAvailability.PROG_KPROBE), "uprobes: latency");
        assertEquals(0, realProbes().helper(BpfAvailability.PROG_PERF_EVENT, 99_999), "the probe can say no");
    }

    private static BpfAvailability.KernelProbes realProbes() {
        return BpfAvailability.LIBBPF_PROBES;
    }

    /** This machine (and CI) must be able to run BPF: a reason here fails the build loudly. */
    @Test
    void thisHostCanRunBpf() {
        assertEquals(Optional.empty(), BpfAvailability.unavailabilityReason());
    }

    @Test
    void cpuLists() {
        assertEquals(java.util.List.of(0, 1, 2, 3, 6, 8, 9), PerfEventSampler.parseCpuList("0-3,6,8-9\n"));
        assertEquals(java.util.List.of(0), PerfEventSampler.parseCpuList("0"));
        assertEquals(1 << 20, PerfEventSampler.ringBufferBytes(2, 19));
        assertEquals(8 << 20, PerfEventSampler.ringBufferBytes(128, 99));
        assertEquals(64 << 20, PerfEventSampler.ringBufferBytes(100_000, 1000));
    }
}
