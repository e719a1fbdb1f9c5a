package dev.loupe.bpf;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * Java's one definition of the records in {@code loupe_abi.h}, checked against the BTF of the compiled
 * object when it is opened ({@link #checkProfiler}): a field renamed, moved or resized on either side fails
 * the load with a message naming the struct and the field, instead of decoding garbage. The constants are
 * checked the same way: every enumerator of the header's shared enums against Java's value, by name. Those
 * whose Java definition lives in the unwinder (rule kinds, RBP rules, signal frame offsets, stop reasons,
 * the /proc clock tick, the frame-pointer step's limit in code without FDEs: {@link #UNWINDER_ENUMS}) cannot be named here, since bpf does not import the
 * unwinder: the composition root passes their values to {@link PerfEventSampler#open(int, java.util.Set,
 * UnwindMaps.Capacity, Map)}.
 */
public final class KernelAbi {
    public static final int MAX_KERNEL_FRAMES = 127;
    public static final int MAX_USER_FRAMES = 127;
    public static final int TASK_COMM_LEN = 16;
    /** Mappings a sample's walk found itself and the record carries ({@link RawSample#mappings}). */
    public static final int MAX_SAMPLE_MAPPINGS = 8;

    /** struct sampled_mapping: a mapping as the walk found it (bpf_find_vma), carried by the record after its frames. */
    static final StructLayout SAMPLED_MAPPING = MemoryLayout.structLayout(
            JAVA_LONG.withName("start"),
            JAVA_LONG.withName("end"),
            JAVA_LONG.withName("offset"),
            JAVA_LONG.withName("dev"),
            JAVA_LONG.withName("ino"),
            JAVA_INT.withName("kind"),
            JAVA_INT.withName("reserved")
    ).withName("sampled_mapping");

    /** struct sample: the ring-buffer record. */
    static final StructLayout SAMPLE = MemoryLayout.structLayout(
            JAVA_INT.withName("pid"),
            JAVA_INT.withName("tid"),
            JAVA_INT.withName("cpu"),
            JAVA_SHORT.withName("kernel_frames"),
            JAVA_SHORT.withName("user_frames"),
            MemoryLayout.sequenceLayout(TASK_COMM_LEN, JAVA_BYTE).withName("comm"),
            MemoryLayout.sequenceLayout(TASK_COMM_LEN, JAVA_BYTE).withName("thread_comm"),
            JAVA_LONG.withName("ktime_ns"),
            JAVA_INT.withName("flags"),
            JAVA_SHORT.withName("mappings"),
            JAVA_SHORT.withName("off_cpu_state"),
            JAVA_LONG.withName("start_boottime"),
            JAVA_INT.withName("host_pid"),
            JAVA_INT.withName("host_tid"),
            JAVA_LONG.withName("off_cpu_ns"),
            MemoryLayout.sequenceLayout(MAX_KERNEL_FRAMES + MAX_USER_FRAMES, JAVA_LONG).withName("frames"),
            MemoryLayout.sequenceLayout(MAX_SAMPLE_MAPPINGS, SAMPLED_MAPPING).withName("mapping_room")
    ).withName("sample");

    /** struct config: written once before sampling. */
    static final StructLayout CONFIG = MemoryLayout.structLayout(
            JAVA_INT.withName("filter_pids"),
            JAVA_INT.withName("wakeup_bytes"),
            JAVA_LONG.withName("off_cpu_threshold"),
            JAVA_INT.withName("skip_tgid"),
            JAVA_INT.withName("reserved")
    ).withName("config");

    /** struct pid_ns_config (pid_ns_abi.h, in both objects): which pids are reported; section {@code .rodata.pid_ns}. */
    static final StructLayout PID_NS_CONFIG = MemoryLayout.structLayout(
            JAVA_INT.withName("mode"),
            JAVA_INT.withName("reserved"),
            JAVA_LONG.withName("dev"),
            JAVA_LONG.withName("ino")
    ).withName("pid_ns_config");

    /** enum pid_ns_mode (pid_ns_abi.h, in both objects): {@link SampledPids.Mode} by ordinal. */
    static final Map<String, Long> PID_NS_MODES = ordinals(Arrays.stream(SampledPids.Mode.values())
            .map(m -> "PID_NS_" + m.name()).toList());

    /** enum stat, in order; the last is the count. */
    static final List<String> STATS = List.of("STAT_SAMPLES", "STAT_IDLE", "STAT_FILTERED", "STAT_RINGBUF_DROPS",
            "STAT_USER_READ_ERRORS", "STAT_USER_TRUNCATED", "STAT_KERNEL_ERRORS", "STAT_FP_FALLBACK", "STAT_UNWIND_STOPPED",
            "STAT_TABLE_FRAMES", "STAT_FP_FRAMES", "STAT_PID_OUTSIDE", "STAT_FP_NO_FDE_FRAMES", "STAT_PROCESS_EXITS",
            "STAT_EXIT_DROPS", "STAT_VMA_LOOKUPS", "STAT_VMA_LOOKUP_FAILURES", "STAT_FILE_TABLE_MISSES", "STAT_OFF_CPU_SWITCHES",
            "STAT_OFF_CPU_RECORDED", "STAT_OFF_CPU_DROPS", "STAT_OFF_CPU_END_DROPS", "STAT_MAX");

    /** struct unwind_table: where a table's pages, rows and rules start in the shared arrays. */
    static final StructLayout UNWIND_TABLE = MemoryLayout.structLayout(
            JAVA_LONG.withName("pc_base"),
            JAVA_INT.withName("page_start"),
            JAVA_INT.withName("page_count"),
            JAVA_INT.withName("row_start"),
            JAVA_INT.withName("rule_start")
    ).withName("unwind_table");

    /** struct unwind_page. */
    static final StructLayout UNWIND_PAGE = MemoryLayout.structLayout(
            JAVA_INT.withName("first_row"),
            JAVA_INT.withName("row_count")
    ).withName("unwind_page");

    /** struct exec_mapping: one executable mapping of a process. */
    static final StructLayout EXEC_MAPPING = MemoryLayout.structLayout(
            JAVA_LONG.withName("start"),
            JAVA_LONG.withName("end"),
            JAVA_LONG.withName("bias"),
            JAVA_INT.withName("kind"),
            JAVA_INT.withName("table_id")
    ).withName("exec_mapping");

    /** struct file_key: a file as the kernel names a mapping's (super block device, kernel encoding; inode). */
    static final StructLayout FILE_KEY = MemoryLayout.structLayout(
            JAVA_LONG.withName("dev"),
            JAVA_LONG.withName("ino")
    ).withName("file_key");

    /** struct file_table: a file's table (or why it has none) for every process that maps it. */
    static final StructLayout FILE_TABLE = MemoryLayout.structLayout(
            JAVA_LONG.withName("size"),
            JAVA_LONG.withName("mtime_sec"),
            JAVA_INT.withName("mtime_nsec"),
            JAVA_INT.withName("kind"),
            JAVA_INT.withName("table_id"),
            JAVA_INT.withName("flags"),
            JAVA_LONG.withName("vaddr_delta")
    ).withName("file_table");

    /** struct proc_unwind: a process's slice of the mappings array. */
    static final StructLayout PROC_UNWIND = MemoryLayout.structLayout(
            JAVA_LONG.withName("start_ticks"),
            JAVA_INT.withName("first"),
            JAVA_INT.withName("count")
    ).withName("proc_unwind");

    /** The low bits of an unwind marker that hold the reason; every bit above them is set. */
    static final int UNWIND_REASON_BITS = 16;
    /** UNWIND_MARKER | reason: a user "frame" that names why the walk stopped. */
    public static final long UNWIND_MARKER = -1L << UNWIND_REASON_BITS;

    /** The C enums of loupe_abi.h whose Java values the caller supplies (the unwinder's), checked complete. */
    public static final List<String> UNWINDER_ENUMS = List.of("rule_kind", "rbp_rule", "signal_frame_offset", "stop_reason",
            "proc_clock", "no_fde_limit", "frame_tag", "frame_type", "hotspot_interp_frame", "hotspot_code_heap", "row_search",
            "python_abi", "python_variant", "python_error", "v8_abi", "v8_error");

    /** The C enums of loupe_abi.h defined in Java here, by enum name: enumerator to Java's value. */
    static final Map<String, Map<String, Long>> PROFILER_ENUMS = Map.ofEntries(
            Map.entry("sample_limit", Map.of("MAX_KERNEL_FRAMES", (long) MAX_KERNEL_FRAMES, "MAX_USER_FRAMES", (long) MAX_USER_FRAMES,
                    "TASK_COMM_LEN", (long) TASK_COMM_LEN, "MAX_SAMPLE_MAPPINGS", (long) MAX_SAMPLE_MAPPINGS)),
            Map.entry("sample_flag", Map.of("SAMPLE_F_USER_TRUNCATED", (long) RawSample.USER_TRUNCATED,
                    "SAMPLE_F_USER_READ_ERROR", (long) RawSample.USER_READ_ERROR, "SAMPLE_F_KERNEL_ERROR", (long) RawSample.KERNEL_ERROR,
                    "SAMPLE_F_FP_FALLBACK", (long) RawSample.FP_FALLBACK, "SAMPLE_F_UNWIND_STOPPED", (long) RawSample.UNWIND_STOPPED,
                    "SAMPLE_F_PID_OUTSIDE", (long) RawSample.PID_OUTSIDE, "SAMPLE_F_PROCESS_EXIT", (long) RawSample.PROCESS_EXIT,
                    "SAMPLE_F_NEEDS_PROCESS", (long) RawSample.NEEDS_PROCESS, "SAMPLE_F_OFF_CPU", (long) RawSample.OFF_CPU,
                    "SAMPLE_F_OFF_CPU_END", (long) RawSample.OFF_CPU_END)),
            Map.entry("off_cpu_state", Map.of("OFF_CPU_RUNNABLE", (long) OffCpuState.RUNNABLE.code(), "OFF_CPU_SLEEPING",
                    (long) OffCpuState.SLEEPING.code(), "OFF_CPU_BLOCKED", (long) OffCpuState.BLOCKED.code(), "OFF_CPU_STOPPED",
                    (long) OffCpuState.STOPPED.code())),
            Map.entry("unwind_marker", Map.of("UNWIND_REASON_BITS", (long) UNWIND_REASON_BITS)),
            Map.entry("mapping_search", Map.of("MAPPING_SEARCH_STEPS", (long) UnwindMaps.MAPPING_SEARCH_STEPS)),
            Map.entry("stat", ordinals(STATS)),
            Map.entry("mapping_kind", Map.of("MAPPING_FP", (long) UnwindMaps.KIND_FRAME_POINTERS, "MAPPING_TABLE", (long) UnwindMaps.KIND_TABLE,
                    "MAPPING_STOP", (long) UnwindMaps.KIND_STOP)),
            Map.entry("pid_ns_mode", PID_NS_MODES),
            Map.entry("sampled_mapping_kind", Map.of("SAMPLED_FILE", (long) RawSample.MAPPING_FILE, "SAMPLED_VDSO", (long) RawSample.MAPPING_VDSO,
                    "SAMPLED_ANON", (long) RawSample.MAPPING_ANONYMOUS)),
            Map.entry("file_table_flag", Map.of("FILE_F_NEEDS_PROCESS", (long) UnwindMaps.FILE_NEEDS_PROCESS)),
            Map.entry("vdso_key", Map.of("VDSO_KEY_DEV", UnwindMaps.VDSO_DEVICE, "VDSO_KEY_INO", UnwindMaps.VDSO_INODE)));

    static final long SAMPLE_HEADER_SIZE = offset(SAMPLE, "frames");

    /** struct bpf_prog_info size for this UAPI; the run statistics' offsets come from the kernel's BTF. */
    static final int PROG_INFO_SIZE = 232;

    private KernelAbi() {}

    static long offset(GroupLayout layout, String field) {
        return layout.byteOffset(groupElement(field));
    }

    /**
     * Checks the profiler object's structs and the enums defined here against Java's, and, if given, the
     * enums of {@link #UNWINDER_ENUMS} against {@code unwinderConstants} (enumerator name to Java's value).
     */
    static void checkProfiler(Btf btf, Optional<Map<String, Long>> unwinderConstants) throws BpfException {
        List<String> problems = new ArrayList<>();
        problems.addAll(structProblems(btf, SAMPLE));
        problems.addAll(structProblems(btf, CONFIG));
        problems.addAll(structProblems(btf, PID_NS_CONFIG));
        problems.addAll(structProblems(btf, UNWIND_TABLE));
        problems.addAll(structProblems(btf, UNWIND_PAGE));
        problems.addAll(structProblems(btf, EXEC_MAPPING));
        problems.addAll(structProblems(btf, PROC_UNWIND));
        problems.addAll(structProblems(btf, SAMPLED_MAPPING));
        problems.addAll(structProblems(btf, FILE_KEY));
        problems.addAll(structProblems(btf, FILE_TABLE));
        for (Map.Entry<String, Map<String, Long>> e : new TreeMap<>(PROFILER_ENUMS).entrySet()) {
            problems.addAll(enumProblems(btf, e.getKey(), e.getValue()));
        }
        if (unwinderConstants.isPresent()) {
            problems.addAll(enumsProblems(btf, UNWINDER_ENUMS, unwinderConstants.get()));
        }
        if (!problems.isEmpty()) {
            throw new BpfException("kernel ABI mismatch between " + btf.source() + " and Java (dev.loupe.bpf.KernelAbi): "
                    + String.join("; ", problems), 0);
        }
    }

    /** enum values that count from 0 in declaration order (the last is the count). */
    static Map<String, Long> ordinals(List<String> names) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (int i = 0; i < names.size(); i++) {
            out.put(names.get(i), (long) i);
        }
        return out;
    }

    /** Every difference between a Java struct layout and the BTF struct of the same name, one line each. */
    static List<String> structProblems(Btf btf, StructLayout java) throws BpfException {
        String name = java.name().orElseThrow();
        Optional<Btf.Struct> found = btf.struct(name);
        if (found.isEmpty()) {
            return List.of("struct " + name + " is not in the BTF");
        }
        Btf.Struct c = found.get();
        List<String> problems = new ArrayList<>();
        if (c.size() != java.byteSize()) {
            problems.add("struct " + name + " is " + c.size() + " bytes in C, " + java.byteSize() + " in Java");
        }
        Map<String, Btf.Member> byName = new LinkedHashMap<>();
        for (Btf.Member m : c.members()) {
            byName.put(m.name(), m);
        }
        for (MemoryLayout m : java.memberLayouts()) {
            if (m.name().isEmpty()) {
                continue; // padding
            }
            String field = m.name().get();
            Btf.Member cm = byName.remove(field);
            long jo = java.byteOffset(groupElement(field));
            if (cm == null) {
                problems.add(name + "." + field + " is missing in C");
            } else if (cm.bitfieldBits() != 0) {
                problems.add(name + "." + field + " is a bitfield in C");
            } else if (cm.offset() != jo || cm.size() != m.byteSize()) {
                problems.add(name + "." + field + " is at offset " + cm.offset() + " size " + cm.size() + " in C, offset "
                        + jo + " size " + m.byteSize() + " in Java");
            }
        }
        for (String extra : byName.keySet()) {
            problems.add(name + "." + extra + " is missing in Java");
        }
        return problems;
    }

    /**
     * Every difference between Java's values for one C enum's enumerators and the BTF enum of that name: an
     * enumerator with another value ("enum stat: STAT_MAX is 12 in C, 11 in Java") or on one side only.
     */
    static List<String> enumProblems(Btf btf, String name, Map<String, Long> java) throws BpfException {
        Optional<Map<String, Long>> found = btf.enumeration(name);
        if (found.isEmpty()) {
            return List.of("enum " + name + " is not in the BTF");
        }
        return valueProblems(name, found.get(), java);
    }

    /**
     * As {@link #enumProblems} for several C enums whose Java values come as one map by enumerator name: each
     * value must be an enumerator of one of them, and each of their enumerators must have a value.
     */
    static List<String> enumsProblems(Btf btf, List<String> names, Map<String, Long> java) throws BpfException {
        List<String> problems = new ArrayList<>();
        Map<String, Long> unclaimed = new HashMap<>(java);
        for (String name : names) {
            Optional<Map<String, Long>> c = btf.enumeration(name);
            if (c.isEmpty()) {
                problems.add("enum " + name + " is not in the BTF");
                continue;
            }
            Map<String, Long> mine = new LinkedHashMap<>();
            for (String k : c.get().keySet()) {
                if (unclaimed.containsKey(k)) {
                    mine.put(k, unclaimed.remove(k));
                }
            }
            problems.addAll(valueProblems(name, c.get(), mine));
        }
        for (String k : new TreeSet<>(unclaimed.keySet())) {
            problems.add(k + " is missing in C (in none of enum " + String.join(", ", names) + ")");
        }
        return problems;
    }

    /** In C's declaration order, then Java's extras by name. */
    private static List<String> valueProblems(String name, Map<String, Long> c, Map<String, Long> java) {
        List<String> problems = new ArrayList<>();
        for (Map.Entry<String, Long> e : c.entrySet()) {
            Long j = java.get(e.getKey());
            if (j == null) {
                problems.add("enum " + name + ": " + e.getKey() + " is missing in Java");
            } else if (!j.equals(e.getValue())) {
                problems.add("enum " + name + ": " + e.getKey() + " is " + e.getValue() + " in C, " + j + " in Java");
            }
        }
        for (String k : new TreeSet<>(java.keySet())) {
            if (!c.containsKey(k)) {
                problems.add("enum " + name + ": " + k + " is missing in C");
            }
        }
        return problems;
    }

    // ---- struct bpf_prog_info: the run statistics' offsets from the running kernel's BTF ----

    /** Where struct bpf_prog_info holds run_time_ns and run_cnt. */
    record ProgInfoOffsets(long runTimeNs, long runCount) {
        /** Reads them from a kernel's BTF; fails naming what is missing (no guessed offsets). */
        static ProgInfoOffsets read(Btf kernel) throws BpfException {
            Btf.Struct info = kernel.struct("bpf_prog_info").orElseThrow(() -> new BpfException(
                    "struct bpf_prog_info is not in the BTF of " + kernel.source() + ": no BPF run statistics", 0));
            return new ProgInfoOffsets(member(kernel, info, "run_time_ns"), member(kernel, info, "run_cnt"));
        }

        private static long member(Btf kernel, Btf.Struct info, String name) throws BpfException {
            for (Btf.Member m : info.members()) {
                if (m.name().equals(name)) {
                    if (m.size() != 8 || m.offset() + 8 > PROG_INFO_SIZE) {
                        throw new BpfException("bpf_prog_info." + name + " in the BTF of " + kernel.source() + " is at offset "
                                + m.offset() + " size " + m.size() + ": not a u64 within the " + PROG_INFO_SIZE + " bytes asked for", 0);
                    }
                    return m.offset();
                }
            }
            throw new BpfException("bpf_prog_info." + name + " is not in the BTF of " + kernel.source()
                    + ": no BPF run statistics", 0);
        }
    }

    private static volatile ProgInfoOffsets progInfo;

    /** The running kernel's bpf_prog_info offsets, read from /sys/kernel/btf/vmlinux once they are first asked for. */
    static ProgInfoOffsets progInfoOffsets() throws BpfException {
        ProgInfoOffsets p = progInfo;
        if (p == null) {
            try (Btf vmlinux = Btf.vmlinux()) {
                p = ProgInfoOffsets.read(vmlinux);
            }
            progInfo = p;
        }
        return p;
    }
}
