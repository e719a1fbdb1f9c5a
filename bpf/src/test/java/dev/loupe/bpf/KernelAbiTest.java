package dev.loupe.bpf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Java's layouts against the compiled object's BTF: the shipped object agrees, a drifted one is refused. */
class KernelAbiTest {
    private static final Path C_SOURCES = Path.of("src/main/c");

    @TempDir
    Path dir;

    @Test
    void shippedObjectMatchesJava() throws Exception {
        try (BpfObject o = PerfEventSampler.openObject(); Btf btf = o.btf()) {
            assertEquals(List.of(), KernelAbi.structProblems(btf, KernelAbi.SAMPLE));
            assertEquals(List.of(), KernelAbi.structProblems(btf, KernelAbi.CONFIG));
            assertEquals(72, KernelAbi.SAMPLE_HEADER_SIZE, "the header the design notes describe");
            Btf.Struct sample = btf.struct("sample").orElseThrow();
            assertEquals(72 + 8 * 254, sample.size());
        }
    }

    /** One field's size changed in a copy of the header: the check names struct, field and both layouts. */
    @Test
    void aFieldResizedInCIsRefusedNamingIt() throws Exception {
        Path obj = compileDrifted("__u16 kernel_frames;", "__u32 kernel_frames;");
        try (BpfObject o = BpfObject.open("drifted", Files.readAllBytes(obj)); Btf btf = o.btf()) {
            BpfException e = assertThrows(BpfException.class, () -> KernelAbi.checkProfiler(btf));
            assertTrue(e.getMessage().contains("sample.kernel_frames is at offset 12 size 4 in C, offset 12 size 2 in Java"),
                    e.getMessage());
            // Every later field moved too, and the check says so rather than stopping at the first.
            assertTrue(e.getMessage().contains("sample.user_frames is at offset 16"), e.getMessage());
        }
    }

    @Test
    void aNewCounterInCIsRefused() throws Exception {
        Path obj = compileDrifted("STAT_KERNEL_ERRORS,", "STAT_KERNEL_ERRORS,\n\tSTAT_NEW_THING,");
        try (BpfObject o = BpfObject.open("drifted", Files.readAllBytes(obj)); Btf btf = o.btf()) {
            BpfException e = assertThrows(BpfException.class, () -> KernelAbi.checkProfiler(btf));
            int max = KernelAbi.STATS.size() - 1;
            assertTrue(e.getMessage().contains("enum stat: STAT_MAX is " + (max + 1) + " in C, " + max + " in Java"), e.getMessage());
            assertTrue(e.getMessage().contains("enum stat: STAT_NEW_THING is missing in Java"), e.getMessage());
        }
    }

    @Test
    void runStatisticsOffsetsComeFromTheKernelsBtf() {
        assertEquals(192, KernelAbi.progInfoRunTimeOffset());
        assertEquals(200, KernelAbi.progInfoRunCountOffset());
    }

    private Path compileDrifted(String from, String to) throws Exception {
        String header = Files.readString(C_SOURCES.resolve("loupe_abi.h"));
        assertTrue(header.contains(from), "test premise: the header has " + from);
        Files.writeString(dir.resolve("loupe_abi.h"), header.replace(from, to));
        Files.copy(C_SOURCES.resolve("profiler.bpf.c"), dir.resolve("profiler.bpf.c"));
        Path obj = dir.resolve("drifted.bpf.o");
        Process p = new ProcessBuilder("clang", "-g", "-O2", "-target", "bpf", "-D__TARGET_ARCH_x86",
                "-I/usr/include/x86_64-linux-gnu", "-c", dir.resolve("profiler.bpf.c").toString(), "-o", obj.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), out);
        return obj;
    }
}
