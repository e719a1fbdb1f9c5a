package dev.loupe.bpf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Java's layouts and constants against the compiled object's BTF: the shipped object agrees, a drifted one is refused. */
class KernelAbiTest {
    @TempDir
    Path dir;

    /**
     * The object for kernels without the VMA iterator (before 6.7) has the same ABI, and the verifier accepts it: a
     * kernel that picks it is not the first to load it.
     */
    @Test
    void theObjectForKernelsWithoutTheVmaIteratorMatchesJavaAndLoads() throws Exception {
        try (BpfObject o = PerfEventSampler.openObject(PerfEventSampler.NO_ITERATOR_OBJECT_RESOURCE, Optional.empty());
             Btf btf = o.btf()) {
            assertEquals(List.of(), KernelAbi.structProblems(btf, KernelAbi.SAMPLE));
            assertEquals(List.of(), KernelAbi.structProblems(btf, KernelAbi.FILE_TABLE));
            o.load();
        }
        assertTrue(PerfEventSampler.kernelHasVmaIterator(), "this machine's kernel (6.x, CI's too) has the iterator");
    }

    @Test
    void shippedObjectMatchesJava() throws Exception {
        try (BpfObject o = PerfEventSampler.openObject(Optional.empty()); Btf btf = o.btf()) {
            assertEquals(List.of(), KernelAbi.structProblems(btf, KernelAbi.SAMPLE));
            assertEquals(List.of(), KernelAbi.structProblems(btf, KernelAbi.CONFIG));
            assertEquals(List.of(), KernelAbi.structProblems(btf, KernelAbi.PID_NS_CONFIG));
            assertEquals(88, KernelAbi.SAMPLE_HEADER_SIZE, "the header the design notes describe");
            Btf.Struct sample = btf.struct("sample").orElseThrow();
            assertEquals(88 + 8 * 254 + 48 * 8, sample.size(), "the header, 254 frames, room for 8 mappings");
            assertEquals(List.of(), KernelAbi.structProblems(btf, KernelAbi.SAMPLED_MAPPING));
            assertEquals(List.of(), KernelAbi.structProblems(btf, KernelAbi.FILE_KEY));
            assertEquals(List.of(), KernelAbi.structProblems(btf, KernelAbi.FILE_TABLE));
            assertEquals(40, btf.struct("file_table").orElseThrow().size());
            assertEquals(Map.of("SAMPLED_FILE", 0L, "SAMPLED_VDSO", 1L, "SAMPLED_ANON", 2L),
                    btf.enumeration("sampled_mapping_kind").orElseThrow());
            assertEquals(24, btf.struct("pid_ns_config").orElseThrow().size());
            assertEquals(Map.of("PID_NS_INITIAL", 0L, "PID_NS_TRANSLATE", 1L, "PID_NS_ALL_OUTSIDE", 2L),
                    btf.enumeration("pid_ns_mode").orElseThrow());
            // Every shared enum reached the BTF (clang keeps only used types) with all its enumerators.
            assertEquals(Map.of("MAPPING_FP", 0L, "MAPPING_TABLE", 1L, "MAPPING_STOP", 2L), btf.enumeration("mapping_kind").orElseThrow());
            assertEquals(Map.of("NSEC_PER_TICK", 10_000_000L), btf.enumeration("proc_clock").orElseThrow());
            assertEquals(13, btf.enumeration("rule_kind").orElseThrow().size(),
                    "5 native kinds, the first runtime kind, HotSpot's three, CPython's two, V8's two");
            assertEquals(Map.of("RULE_RUNTIME_FIRST", 5L, "RULE_JAVA_INTERP", 5L),
                    Map.of("RULE_RUNTIME_FIRST", btf.enumeration("rule_kind").orElseThrow().get("RULE_RUNTIME_FIRST"),
                            "RULE_JAVA_INTERP", btf.enumeration("rule_kind").orElseThrow().get("RULE_JAVA_INTERP")));
            assertEquals(Map.of("MAPPING_SEARCH_STEPS", 12L), btf.enumeration("mapping_search").orElseThrow());
            assertEquals(Map.of("FRAME_TYPE_HOTSPOT_METHOD", 0x40L, "FRAME_TYPE_PYTHON", 0x41L, "FRAME_TYPE_V8", 0x42L), btf.enumeration("frame_type").orElseThrow());
            assertEquals(8, btf.enumeration("stop_reason").orElseThrow().size());
            assertEquals(0xffffffffffff0000L, KernelAbi.UNWIND_MARKER);
        }
    }

    /** A constant changed in a copy of the header: the check names the enum, the constant and both values. */
    @Test
    void aConstantChangedInCIsRefusedNamingIt() throws Exception {
        String kind = refusal("MAPPING_STOP  = 2,", "MAPPING_STOP  = 3,");
        assertTrue(kind.contains("enum mapping_kind: MAPPING_STOP is 3 in C, 2 in Java"), kind);
        String flag = refusal("SAMPLE_F_FP_FALLBACK     = 8,", "SAMPLE_F_FP_FALLBACK     = 32,");
        assertTrue(flag.contains("enum sample_flag: SAMPLE_F_FP_FALLBACK is 32 in C, 8 in Java"), flag);
    }

    /**
     * The unwinder's constants come from the caller by C name. The object's own values pass (the agent's test
     * checks the unwinder's real ones); a changed, missing or unknown one fails naming it and both values.
     */
    @Test
    void unwinderConstantsAreCheckedByName() throws Exception {
        try (BpfObject o = PerfEventSampler.openObject(Optional.empty()); Btf btf = o.btf()) {
            Map<String, Long> theObjects = new HashMap<>();
            for (String e : KernelAbi.UNWINDER_ENUMS) {
                theObjects.putAll(btf.enumeration(e).orElseThrow());
            }
            assertEquals(73, theObjects.size(), "12 rule kinds and the first runtime kind, 3 RBP rules, 3 signal offsets, "
                    + "8 stop reasons, the tick, the no-FDE frame limit, the frame type shift, 3 frame types, 2 HotSpot "
                    + "interpreter frame offsets and 3 constants of its tagged value, 4 HotSpot code heap constants, the row search's steps, 10 CPython constants,"
                    + " 4 variants and 5 errors, 7 V8 constants and 4 errors");
            KernelAbi.checkProfiler(btf, Optional.of(theObjects));

            Map<String, Long> drifted = new HashMap<>(theObjects);
            drifted.put("RULE_STOP", 5L);
            drifted.put("NSEC_PER_TICK", 1_000_000L);
            drifted.remove("STOP_ZERO_RA");
            drifted.put("STOP_SOMETHING_NEW", 38L);
            BpfException e = assertThrows(BpfException.class, () -> KernelAbi.checkProfiler(btf, Optional.of(drifted)));
            assertEquals("kernel ABI mismatch between loupe_profiler and Java (dev.loupe.bpf.KernelAbi): "
                    + "enum rule_kind: RULE_STOP is 4 in C, 5 in Java; "
                    + "enum stop_reason: STOP_ZERO_RA is missing in Java; "
                    + "enum proc_clock: NSEC_PER_TICK is 10000000 in C, 1000000 in Java; "
                    + "STOP_SOMETHING_NEW is missing in C (in none of enum rule_kind, rbp_rule, signal_frame_offset, "
                    + "stop_reason, proc_clock, no_fde_limit, frame_tag, frame_type, hotspot_interp_frame, hotspot_code_heap, row_search, python_abi, "
                    + "python_variant, python_error, v8_abi, v8_error)", e.getMessage());
        }
    }

    /** One field's size changed in a copy of the header: the check names struct, field and both layouts. */
    @Test
    void aFieldResizedInCIsRefusedNamingIt() throws Exception {
        String refused = refusal("__u16 kernel_frames;", "__u32 kernel_frames;");
        assertTrue(refused.contains("sample.kernel_frames is at offset 12 size 4 in C, offset 12 size 2 in Java"),
                refused);
        // Every later field moved too, and the check says so rather than stopping at the first.
        assertTrue(refused.contains("sample.user_frames is at offset 16"), refused);
    }

    @Test
    void aNewCounterInCIsRefused() throws Exception {
        String refused = refusal("STAT_KERNEL_ERRORS,", "STAT_KERNEL_ERRORS,\n\tSTAT_NEW_THING,");
        int max = KernelAbi.STATS.size() - 1;
        assertTrue(refused.contains("enum stat: STAT_MAX is " + (max + 1) + " in C, " + max + " in Java"), refused);
        assertTrue(refused.contains("enum stat: STAT_NEW_THING is missing in Java"), refused);
    }

    /** bpftool reads the same BTF independently: its offsets of run_time_ns and run_cnt are the oracle. */
    @Test
    void runStatisticsOffsetsComeFromTheKernelsBtf() throws Exception {
        Process p = new ProcessBuilder("bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "raw")
                .redirectErrorStream(true).start();
        String dump = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), dump.length() > 2000 ? dump.substring(0, 2000) : dump);
        Matcher struct = Pattern.compile("(?m)^\\[\\d+\\] STRUCT 'bpf_prog_info' size=\\d+ vlen=\\d+\\n((?:\\t.*\\n)+)").matcher(dump);
        assertTrue(struct.find(), "bpftool shows struct bpf_prog_info");
        KernelAbi.ProgInfoOffsets read = KernelAbi.progInfoOffsets();
        assertEquals(new KernelAbi.ProgInfoOffsets(bitsOffset(struct.group(1), "run_time_ns") / 8,
                bitsOffset(struct.group(1), "run_cnt") / 8), read);
    }

    /** Without bpf_prog_info in the BTF there are no offsets to guess: the read fails naming what is missing. */
    @Test
    void runStatisticsOffsetsAreNotGuessed() throws Exception {
        try (BpfObject o = PerfEventSampler.openObject(Optional.empty()); Btf notTheKernels = o.btf()) {
            BpfException e = assertThrows(BpfException.class, () -> KernelAbi.ProgInfoOffsets.read(notTheKernels));
            assertEquals("struct bpf_prog_info is not in the BTF of loupe_profiler: no BPF run statistics", e.getMessage());
        }
    }

    private static long bitsOffset(String members, String name) {
        Matcher m = Pattern.compile("'" + name + "' type_id=\\d+ bits_offset=(\\d+)").matcher(members);
        assertTrue(m.find(), name + " in " + members);
        return Long.parseLong(m.group(1));
    }

    /** KernelAbi's refusal of an object built from the header with {@code from} replaced by {@code to}. */
    private String refusal(String from, String to) throws Exception {
        Path obj = BpfClang.drifted("profiler.bpf.c", "loupe_abi.h", from, to, dir);
        try (BpfObject o = BpfObject.open("drifted", Files.readAllBytes(obj)); Btf btf = o.btf()) {
            return assertThrows(BpfException.class, () -> KernelAbi.checkProfiler(btf, Optional.empty())).getMessage();
        }
    }

}
