package dev.loupe.bpf;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;

class SampledPidsTest {
    @Test
    void theInitialNamespaceIsKnownByItsFixedInode() {
        assertEquals(SampledPids.INITIAL, SampledPids.of(4, 4026531836L, true));
        assertEquals(SampledPids.INITIAL, SampledPids.of(4, 4026531836L, false));
        assertEquals(new SampledPids(SampledPids.Mode.TRANSLATE, 4, 4026532186L), SampledPids.of(4, 4026532186L, true));
        assertEquals(new SampledPids(SampledPids.Mode.ALL_OUTSIDE, 4, 4026532186L), SampledPids.of(4, 4026532186L, false));
    }

    /** stat(2)'s device encoding (glibc: minor's low byte, major, then minor's high bits) to the kernel's dev_t. */
    @Test
    void devicesAreReencodedAsTheKernelComparesThem() {
        assertEquals(4, SampledPids.kernelDevice(4), "major 0, a small minor: the same");
        assertEquals(8L << 20 | 1, SampledPids.kernelDevice(0x801), "8:1");
        assertEquals(0x1234, SampledPids.kernelDevice(0x1200034), "0:0x1234, minor above 255");
        assertEquals(259L << 20 | 5, SampledPids.kernelDevice(0x10305), "259:5");
    }

    @Test
    void configIsStructPidNsConfig() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment c = new SampledPids(SampledPids.Mode.TRANSLATE, 4, 4026532186L).config(a);
            assertEquals(24, c.byteSize());
            assertEquals(1, c.get(JAVA_INT, 0));
            assertEquals(0, c.get(JAVA_INT, 4));
            assertEquals(4, c.get(JAVA_LONG, 8));
            assertEquals(4026532186L, c.get(JAVA_LONG, 16));
        }
    }
}
