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

    private BpfAvailability fake(String os, String release, boolean btf, String capEff, String libbpfError) throws Exception {
        Path btfFile = dir.resolve("vmlinux");
        if (btf) {
            Files.writeString(btfFile, "x");
        } else {
            Files.deleteIfExists(btfFile);
        }
        Path rel = Files.writeString(dir.resolve("osrelease"), release + "\n");
        Path status = Files.writeString(dir.resolve("status"), "Name:\tjava\nCapInh:\t0000000000000000\nCapEff:\t" + capEff + "\n");
        return new BpfAvailability(os, "amd64", () -> libbpfError, btfFile, rel, status);
    }

    private static final String ROOT_CAPS = "000001ffffffffff";

    @Test
    void eachMissingPrerequisiteIsNamedInOneLine() throws Exception {
        assertEquals(Optional.empty(), fake("Linux", "6.1.0-18-amd64", true, ROOT_CAPS, null).reason());
        assertTrue(fake("Mac OS X", "6.1", true, ROOT_CAPS, null).reason().orElseThrow().startsWith("unsupported platform"));
        assertEquals("kernel too old: 5.4.0-100-generic (need Linux >= 5.17 for bpf_loop and BPF ring buffers)",
                fake("Linux", "5.4.0-100-generic", true, ROOT_CAPS, null).reason().orElseThrow());
        assertTrue(fake("Linux", "6.1.0", false, ROOT_CAPS, null).reason().orElseThrow().startsWith("no BTF: "));
        String caps = fake("Linux", "6.1.0", true, "0000000000000000", null).reason().orElseThrow();
        assertTrue(caps.startsWith("no CAP_BPF/CAP_PERFMON"), caps);
        // CAP_BPF (39) + CAP_PERFMON (38) without CAP_SYS_ADMIN is enough; CAP_BPF alone is not.
        assertEquals(Optional.empty(), fake("Linux", "6.1.0", true, Long.toHexString((1L << 39) | (1L << 38)), null).reason());
        assertTrue(fake("Linux", "6.1.0", true, Long.toHexString(1L << 39), null).reason().isPresent());
        assertEquals(Optional.empty(), fake("Linux", "6.1.0", true, Long.toHexString(1L << 21), null).reason());
        assertEquals("libbpf missing: x", fake("Linux", "6.1.0", true, ROOT_CAPS, "libbpf missing: x").reason().orElseThrow());
        for (String r : new String[] {"5.4", "6.1.0", "5.17.0-1", "7.0"}) {
            assertTrue(fake("Linux", r, false, ROOT_CAPS, null).reason().orElseThrow().indexOf('\n') < 0);
        }
    }

    @Test
    void kernelVersionComparison() {
        assertTrue(BpfAvailability.kernelAtLeast("5.17.0", 5, 17));
        assertTrue(BpfAvailability.kernelAtLeast("6.0.0-rc1", 5, 17));
        assertTrue(!BpfAvailability.kernelAtLeast("5.16.20", 5, 17));
        assertTrue(!BpfAvailability.kernelAtLeast("4.19.0", 5, 17));
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
