package dev.loupe.bpf;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * Java's one definition of the records in {@code loupe_abi.h}, checked against the BTF of the compiled
 * object when it is opened ({@link #check}): a field renamed, moved or resized on either side fails the
 * load with a message naming the struct and the field, instead of decoding garbage.
 */
public final class KernelAbi {
    public static final int MAX_KERNEL_FRAMES = 127;
    public static final int MAX_USER_FRAMES = 127;
    public static final int TASK_COMM_LEN = 16;

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
            JAVA_INT.withName("reserved"),
            JAVA_LONG.withName("start_boottime"),
            MemoryLayout.sequenceLayout(MAX_KERNEL_FRAMES + MAX_USER_FRAMES, JAVA_LONG).withName("frames")
    ).withName("sample");

    /** struct config: written once before sampling. */
    static final StructLayout CONFIG = MemoryLayout.structLayout(
            JAVA_INT.withName("filter_pids"),
            JAVA_INT.withName("wakeup_bytes")
    ).withName("config");

    /** enum stat, in order; the last is the count. */
    static final List<String> STATS = List.of("STAT_SAMPLES", "STAT_IDLE", "STAT_FILTERED", "STAT_RINGBUF_DROPS",
            "STAT_USER_READ_ERRORS", "STAT_USER_TRUNCATED", "STAT_KERNEL_ERRORS", "STAT_FP_FALLBACK", "STAT_UNWIND_STOPPED",
            "STAT_TABLE_FRAMES", "STAT_FP_FRAMES", "STAT_MAX");

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

    /** struct proc_unwind: a process's slice of the mappings array. */
    static final StructLayout PROC_UNWIND = MemoryLayout.structLayout(
            JAVA_LONG.withName("start_ticks"),
            JAVA_INT.withName("first"),
            JAVA_INT.withName("count")
    ).withName("proc_unwind");

    /** UNWIND_MARKER | reason: a user "frame" that names why the walk stopped. */
    public static final long UNWIND_MARKER = 0xffffffffffff0000L;

    static final long SAMPLE_HEADER_SIZE = offset(SAMPLE, "frames");

    /** struct bpf_prog_info size for this UAPI; the run statistics' offsets come from the kernel's BTF. */
    static final int PROG_INFO_SIZE = 232;

    private KernelAbi() {}

    static long offset(GroupLayout layout, String field) {
        return layout.byteOffset(groupElement(field));
    }

    /** Checks the profiler object's struct sample, struct config and enum stat against Java's layouts. */
    static void checkProfiler(Btf btf) throws BpfException {
        List<String> problems = new ArrayList<>();
        problems.addAll(structProblems(btf, SAMPLE));
        problems.addAll(structProblems(btf, CONFIG));
        problems.addAll(structProblems(btf, UNWIND_TABLE));
        problems.addAll(structProblems(btf, UNWIND_PAGE));
        problems.addAll(structProblems(btf, EXEC_MAPPING));
        problems.addAll(structProblems(btf, PROC_UNWIND));
        problems.addAll(enumProblems(btf, "stat", STATS));
        if (!problems.isEmpty()) {
            throw new BpfException("kernel ABI mismatch between " + btf.source() + " and Java (dev.loupe.bpf.KernelAbi): "
                    + String.join("; ", problems), 0);
        }
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

    static List<String> enumProblems(Btf btf, String name, List<String> javaOrder) throws BpfException {
        Optional<Map<String, Long>> found = btf.enumeration(name);
        if (found.isEmpty()) {
            return List.of("enum " + name + " is not in the BTF");
        }
        List<String> problems = new ArrayList<>();
        Map<String, Long> c = found.get();
        for (int i = 0; i < javaOrder.size(); i++) {
            Long v = c.get(javaOrder.get(i));
            if (v == null) {
                problems.add("enum " + name + ": " + javaOrder.get(i) + " is missing in C");
            } else if (v != i) {
                problems.add("enum " + name + ": " + javaOrder.get(i) + " is " + v + " in C, " + i + " in Java");
            }
        }
        for (String k : c.keySet()) {
            if (!javaOrder.contains(k)) {
                problems.add("enum " + name + ": " + k + " is missing in Java");
            }
        }
        return problems;
    }

    // ---- struct bpf_prog_info: offsets from the running kernel's BTF, UAPI values if it has none ----

    private static final class ProgInfo {
        static final long RUN_TIME_NS;
        static final long RUN_CNT;

        static {
            long rt = 192;
            long rc = 200;
            try (Btf v = Btf.vmlinux()) {
                Optional<Btf.Struct> s = v.struct("bpf_prog_info");
                if (s.isPresent()) {
                    for (Btf.Member m : s.get().members()) {
                        if (m.name().equals("run_time_ns")) {
                            rt = m.offset();
                        } else if (m.name().equals("run_cnt")) {
                            rc = m.offset();
                        }
                    }
                }
            } catch (BpfException | RuntimeException e) {
                // keep the UAPI offsets
            }
            RUN_TIME_NS = rt + 8 <= PROG_INFO_SIZE ? rt : 192;
            RUN_CNT = rc + 8 <= PROG_INFO_SIZE ? rc : 200;
        }
    }

    static long progInfoRunTimeOffset() {
        return ProgInfo.RUN_TIME_NS;
    }

    static long progInfoRunCountOffset() {
        return ProgInfo.RUN_CNT;
    }
}
