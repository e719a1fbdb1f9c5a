package dev.loupe.bpf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** latency_abi.h against LatencyAbi: the shipped object agrees, a drifted one is refused naming the field or constant. */
class LatencyAbiTest {
    private static final Path C_SOURCES = Path.of("src/main/c");

    @TempDir
    Path dir;

    @Test
    void shippedObjectMatchesJava() throws Exception {
        try (BpfObject o = BpfObject.fromResource(LatencyProbes.class, LatencyProbes.OBJECT_RESOURCE, "latency");
             Btf btf = o.btf()) {
            LatencyAbi.check(btf);
            assertEquals(8 * 34, btf.struct("latency_hist").orElseThrow().size(), "32 buckets, sum and count");
        }
    }

    @Test
    void aMovedFieldIsRefused() throws Exception {
        Path obj = compileDrifted("__u32 tid;      /* thread at entry", "__u64 tid;      /* thread at entry");
        try (BpfObject o = BpfObject.open("drifted", Files.readAllBytes(obj)); Btf btf = o.btf()) {
            BpfException e = assertThrows(BpfException.class, () -> LatencyAbi.check(btf));
            assertTrue(e.getMessage().contains("latency_call.tid is at offset 8 size 8 in C, offset 8 size 4 in Java"), e.getMessage());
        }
    }

    @Test
    void aResizedGroupKeyFieldIsRefused() throws Exception {
        Path obj = compileDrifted("__u32 bucket;   /* 0..LAT_FINITE_BUCKETS", "__u64 bucket;   /* 0..LAT_FINITE_BUCKETS");
        try (BpfObject o = BpfObject.open("drifted", Files.readAllBytes(obj)); Btf btf = o.btf()) {
            BpfException e = assertThrows(BpfException.class, () -> LatencyAbi.check(btf));
            assertTrue(e.getMessage().contains("latency_group_key.bucket"), e.getMessage());
        }
    }

    @Test
    void aNewCounterIsRefused() throws Exception {
        Path obj = compileDrifted("LSTAT_UNCONFIGURED,", "LSTAT_UNCONFIGURED,\n\tLSTAT_NEW,");
        try (BpfObject o = BpfObject.open("drifted", Files.readAllBytes(obj)); Btf btf = o.btf()) {
            BpfException e = assertThrows(BpfException.class, () -> LatencyAbi.check(btf));
            assertTrue(e.getMessage().contains("LSTAT_NEW is missing in Java"), e.getMessage());
        }
    }

    @Test
    void aChangedConstantIsRefusedNamingBothValues() throws Exception {
        Path obj = compileDrifted("LAT_G_TLS = 1,", "LAT_G_TLS = 2,");
        try (BpfObject o = BpfObject.open("drifted", Files.readAllBytes(obj)); Btf btf = o.btf()) {
            BpfException e = assertThrows(BpfException.class, () -> LatencyAbi.check(btf));
            assertTrue(e.getMessage().contains("enum latency_g_source: LAT_G_TLS is 2 in C, 1 in Java"), e.getMessage());
        }
    }

    private Path compileDrifted(String from, String to) throws Exception {
        String header = Files.readString(C_SOURCES.resolve("latency_abi.h"));
        assertTrue(header.contains(from), "test premise: the header has " + from);
        Files.writeString(dir.resolve("latency_abi.h"), header.replace(from, to));
        Files.copy(C_SOURCES.resolve("latency.bpf.c"), dir.resolve("latency.bpf.c"));
        Path obj = dir.resolve("drifted.bpf.o");
        Process p = new ProcessBuilder("clang", "-g", "-O2", "-target", "bpf", "-D__TARGET_ARCH_x86",
                "-I/usr/include/x86_64-linux-gnu", "-c", dir.resolve("latency.bpf.c").toString(), "-o", obj.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), out);
        return obj;
    }
}
