package dev.loupe.bpf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.params.provider.Arguments.arguments;

/** latency_abi.h against LatencyAbi: the shipped object agrees, a drifted one is refused naming the field or constant. */
class LatencyAbiTest {
    @TempDir
    Path dir;

    @Test
    void shippedObjectMatchesJava() throws Exception {
        try (BpfObject o = BpfObject.fromResource(LatencyProbes.class, LatencyProbes.OBJECT_RESOURCE, "latency");
             Btf btf = o.btf()) {
            LatencyAbi.check(btf);
            assertEquals(8 * 34, btf.struct("latency_hist").orElseThrow().size(), "32 buckets, sum and count");
            assertEquals(8 * 258, btf.struct("latency_fine_hist").orElseThrow().size(), "258 fine buckets");
            assertEquals(40, btf.struct("latency_group_key").orElseThrow().size(), "no implicit padding");
        }
    }

    /** A drift in a copy of the header: {@code from} replaced by {@code to}; the refusal names it. */
    static Stream<Arguments> drifts() {
        return Stream.of(
                arguments("a moved field", "__u32 tid;      /* thread at entry", "__u64 tid;      /* thread at entry",
                        "latency_call.tid is at offset 8 size 8 in C, offset 8 size 4 in Java"),
                arguments("a resized group key field", "__u32 bucket;   /* 0..LAT_FINITE_BUCKETS",
                        "__u64 bucket;   /* 0..LAT_FINITE_BUCKETS", "latency_group_key.bucket"),
                arguments("a new counter", "LSTAT_UNCONFIGURED,", "LSTAT_UNCONFIGURED,\n\tLSTAT_NEW,",
                        "LSTAT_NEW is missing in Java"),
                arguments("a changed constant", "LAT_G_TLS = 1,", "LAT_G_TLS = 2,",
                        "enum latency_g_source: LAT_G_TLS is 2 in C, 1 in Java"),
                arguments("a changed fine layout", "LAT_FINE_MAX_POWER = 42,", "LAT_FINE_MAX_POWER = 43,",
                        "enum latency_fine: LAT_FINE_MAX_POWER is 43 in C, 42 in Java"),
                arguments("changed fine sub-buckets", "LAT_FINE_SUB_BUCKETS = 8,", "LAT_FINE_SUB_BUCKETS = 16,",
                        "enum latency_fine: LAT_FINE_SUB_BUCKETS is 16 in C, 8 in Java"),
                arguments("more fine buckets", "LAT_FINE_BUCKETS = 258,", "LAT_FINE_BUCKETS = 266,",
                        "enum latency_fine: LAT_FINE_BUCKETS is 266 in C, 258 in Java"),
                arguments("a fine histogram of another size", "LAT_FINE_BUCKETS = 258,", "LAT_FINE_BUCKETS = 266,",
                        "struct latency_fine_hist is 2128 bytes in C, 2064 in Java"),
                arguments("a resized fine bucket in the group key", "__u32 fine_bucket;", "__u64 fine_bucket;",
                        "latency_group_key.fine_bucket is at offset 32 size 8 in C, offset 28 size 4 in Java"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("drifts")
    void aDriftIsRefusedNamingIt(String what, String from, String to, String named) throws Exception {
        String refused = refusal(from, to);
        assertTrue(refused.contains(named), refused);
    }

    /** LatencyAbi's refusal of an object built from the header with {@code from} replaced by {@code to}. */
    private String refusal(String from, String to) throws Exception {
        Path obj = BpfClang.drifted("latency.bpf.c", "latency_abi.h", from, to, dir);
        try (BpfObject o = BpfObject.open("drifted", Files.readAllBytes(obj)); Btf btf = o.btf()) {
            return assertThrows(BpfException.class, () -> LatencyAbi.check(btf)).getMessage();
        }
    }

}
