package dev.loupe.bpf;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Java's definition of the records and constants in {@code latency_abi.h}, checked against the BTF of the
 * compiled latency object when it is opened, as {@link KernelAbi} does for the profiler.
 */
final class LatencyAbi {
    static final int FINITE_BUCKETS = 31;
    static final int BUCKETS = FINITE_BUCKETS + 1;
    /** enum latency_fine: the fine histograms' layout (the agent's FineHistogram). */
    static final int FINE_SUB_BUCKETS = 8;
    static final int FINE_MIN_POWER = 10;
    static final int FINE_MAX_POWER = 42;
    static final int FINE_BUCKETS = (FINE_MAX_POWER - FINE_MIN_POWER) * FINE_SUB_BUCKETS + 2;
    static final int KIND_GO = 0;
    static final int KIND_NATIVE = 1;
    static final int G_R14 = 0;
    static final int G_TLS = 1;

    static final StructLayout PROBE = MemoryLayout.structLayout(
            JAVA_INT.withName("active"),
            JAVA_INT.withName("kind"),
            JAVA_INT.withName("g_source"),
            JAVA_INT.withName("goid_offset"),
            JAVA_INT.withName("stacks")
    ).withName("latency_probe");

    static final StructLayout KEY = MemoryLayout.structLayout(
            JAVA_INT.withName("tgid"),
            JAVA_INT.withName("probe"),
            JAVA_LONG.withName("id"),
            JAVA_LONG.withName("depth")
    ).withName("latency_key");

    static final StructLayout CALL = MemoryLayout.structLayout(
            JAVA_LONG.withName("start_ns"),
            JAVA_INT.withName("tid"),
            JAVA_INT.withName("reentries"),
            JAVA_LONG.withName("stack_id")
    ).withName("latency_call");

    static final int STACK_MAX = 64;
    /** latency_call.stack_id when the probe takes no stacks, or when the stacks map was full. */
    static final long STACK_NONE = 0;
    static final long STACK_LOST = 1;

    static final StructLayout STACK = MemoryLayout.structLayout(
            JAVA_INT.withName("tgid"),
            JAVA_INT.withName("depth"),
            MemoryLayout.sequenceLayout(STACK_MAX, JAVA_LONG).withName("addrs")
    ).withName("latency_stack");

    static final StructLayout GROUP_KEY = MemoryLayout.structLayout(
            JAVA_INT.withName("probe"),
            JAVA_INT.withName("tgid"),
            JAVA_LONG.withName("goid"),
            JAVA_LONG.withName("stack_id"),
            JAVA_INT.withName("bucket"),
            JAVA_INT.withName("fine_bucket"),
            JAVA_INT.withName("gen"),
            JAVA_INT.withName("pad")
    ).withName("latency_group_key");

    static final StructLayout GROUP = MemoryLayout.structLayout(
            JAVA_LONG.withName("count"),
            JAVA_LONG.withName("sum_ns"),
            MemoryLayout.sequenceLayout(16, java.lang.foreign.ValueLayout.JAVA_BYTE).withName("comm")
    ).withName("latency_group");

    static final StructLayout HIST = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(BUCKETS, JAVA_LONG).withName("buckets"),
            JAVA_LONG.withName("sum_ns"),
            JAVA_LONG.withName("count")
    ).withName("latency_hist");

    static final StructLayout FINE_HIST = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(FINE_BUCKETS, JAVA_LONG).withName("buckets")
    ).withName("latency_fine_hist");

    /** enum latency_stat, in order; the last is the count. */
    static final List<String> STATS = List.of("LSTAT_ENTRIES", "LSTAT_EXITS", "LSTAT_MIGRATIONS", "LSTAT_REENTRIES",
            "LSTAT_STALE_REPLACED", "LSTAT_UNMATCHED_EXITS", "LSTAT_INFLIGHT_FULL", "LSTAT_G_READ_ERRORS",
            "LSTAT_UNCONFIGURED", "LSTAT_GROUPS_FULL", "LSTAT_STACKS_FULL", "LSTAT_MAX");

    /** The C enums of latency_abi.h, by enum name: enumerator to Java's value. */
    static final Map<String, Map<String, Long>> ENUMS = Map.of(
            "latency_limit", Map.of("LAT_FINITE_BUCKETS", (long) FINITE_BUCKETS, "LAT_STACK_MAX", (long) STACK_MAX),
            "latency_fine", Map.of("LAT_FINE_SUB_BUCKETS", (long) FINE_SUB_BUCKETS, "LAT_FINE_MIN_POWER", (long) FINE_MIN_POWER,
                    "LAT_FINE_MAX_POWER", (long) FINE_MAX_POWER, "LAT_FINE_BUCKETS", (long) FINE_BUCKETS),
            "latency_kind", Map.of("LAT_KIND_GO", (long) KIND_GO, "LAT_KIND_NATIVE", (long) KIND_NATIVE),
            "latency_g_source", Map.of("LAT_G_R14", (long) G_R14, "LAT_G_TLS", (long) G_TLS),
            "latency_stack_id", Map.of("LAT_STACK_NONE", STACK_NONE, "LAT_STACK_LOST", STACK_LOST),
            "latency_stat", KernelAbi.ordinals(STATS),
            "pid_ns_mode", KernelAbi.PID_NS_MODES);

    private LatencyAbi() {}

    static void check(Btf btf) throws BpfException {
        List<String> problems = new ArrayList<>();
        for (StructLayout s : List.of(PROBE, KEY, CALL, HIST, FINE_HIST, STACK, GROUP_KEY, GROUP, KernelAbi.PID_NS_CONFIG)) {
            problems.addAll(KernelAbi.structProblems(btf, s));
        }
        for (Map.Entry<String, Map<String, Long>> e : new TreeMap<>(ENUMS).entrySet()) {
            problems.addAll(KernelAbi.enumProblems(btf, e.getKey(), e.getValue()));
        }
        if (!problems.isEmpty()) {
            throw new BpfException("latency ABI mismatch between " + btf.source() + " and Java (dev.loupe.bpf.LatencyAbi): "
                    + String.join("; ", problems), 0);
        }
    }

    static long offset(StructLayout layout, String field) {
        return KernelAbi.offset(layout, field);
    }
}
