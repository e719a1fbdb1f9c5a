package dev.loupe.agent.unwind;

import dev.loupe.unwinder.ehframe.ReferenceUnwinder;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.hotspot.InterpreterFrameStep;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.proc.ProcessRegistry;

import java.util.Map;

/**
 * The unwinder's values for the constants loupe_abi.h shares with it, by their C names: what the BPF table
 * walker must agree on with the tables the unwinder builds and the processes it registers. bpf cannot import
 * the unwinder, so the sampler gets them here ({@code PerfEventSampler.open}) and checks them against the
 * compiled object's BTF before loading it.
 */
public final class UnwinderAbi {
    private UnwinderAbi() {}

    /** C enumerator name to the unwinder's value, for every enum in {@code KernelAbi.UNWINDER_ENUMS}. */
    public static Map<String, Long> constants() {
        Map<String, Long> all = new java.util.HashMap<>(fixed());
        all.putAll(dev.loupe.unwinder.python.PythonFrameStep.kernelConstants()); // python.bpf.h's enums
        all.putAll(dev.loupe.unwinder.hotspot.SegmentMapStep.kernelConstants()); // hotspot.bpf.h's code heap layout
        all.putAll(InterpreterFrameStep.kernelConstants()); // hotspot.bpf.h's interpreter frames and their value
        all.putAll(dev.loupe.unwinder.v8.V8FrameStep.kernelConstants()); // v8.bpf.h's enums
        for (FrameType t : FrameType.values()) { // the registry of tagged frames, one enumerator per type
            all.put(t.cName(), (long) t.code());
        }
        return Map.copyOf(all);
    }

    private static Map<String, Long> fixed() {
        return Map.ofEntries(
                Map.entry("RULE_CFA_RSP", (long) UnwindRule.KIND_CFA_RSP),
                Map.entry("RULE_CFA_RBP", (long) UnwindRule.KIND_CFA_RBP),
                Map.entry("RULE_PLT", (long) UnwindRule.KIND_PLT),
                Map.entry("RULE_SIGNAL", (long) UnwindRule.KIND_SIGNAL),
                Map.entry("RULE_STOP", (long) UnwindRule.KIND_STOP),
                Map.entry("RULE_RUNTIME_FIRST", (long) UnwindRule.FIRST_RUNTIME_KIND),
                Map.entry("RULE_JAVA_INTERP", (long) UnwindRule.KIND_JAVA_INTERP),
                Map.entry("RULE_PYTHON_EVAL", (long) UnwindRule.KIND_PYTHON_EVAL),
                Map.entry("RULE_PYTHON_DATA", (long) UnwindRule.KIND_PYTHON_DATA),
                Map.entry("RULE_HOTSPOT_CODE", (long) UnwindRule.KIND_HOTSPOT_CODE),
                Map.entry("RULE_HOTSPOT_DATA", (long) UnwindRule.KIND_HOTSPOT_DATA),
                Map.entry("RULE_V8_FRAME", (long) UnwindRule.KIND_V8_FRAME),
                Map.entry("RULE_V8_DATA", (long) UnwindRule.KIND_V8_DATA),
                Map.entry("FRAME_TYPE_SHIFT", (long) FrameType.SHIFT),
                Map.entry("ROW_SEARCH_STEPS", (long) UnwindTable.PAGE_SHIFT),
                Map.entry("RBP_UNCHANGED", (long) UnwindRule.RBP_UNCHANGED),
                Map.entry("RBP_SAVED", (long) UnwindRule.RBP_SAVED),
                Map.entry("RBP_UNKNOWN", (long) UnwindRule.RBP_UNKNOWN),
                Map.entry("SIGNAL_RBP_OFFSET", (long) UnwindRule.SIGNAL_RBP_OFFSET),
                Map.entry("SIGNAL_RSP_OFFSET", (long) UnwindRule.SIGNAL_RSP_OFFSET),
                Map.entry("SIGNAL_RIP_OFFSET", (long) UnwindRule.SIGNAL_RIP_OFFSET),
                // The stop reasons the walker finds itself (table rules carry the others in their aux byte).
                Map.entry("STOP_NO_UNWIND_INFO", (long) StopReason.NO_UNWIND_INFO.code()),
                Map.entry("STOP_END_OF_STACK", (long) StopReason.END_OF_STACK.code()),
                Map.entry("STOP_MALFORMED", (long) StopReason.MALFORMED_FDE.code()),
                Map.entry("STOP_NO_TABLE", (long) StopReason.NO_TABLE.code()),
                Map.entry("STOP_READ_FAILED", (long) StopReason.MEMORY_READ_FAILED.code()),
                Map.entry("STOP_RBP_UNKNOWN", (long) StopReason.RBP_UNKNOWN.code()),
                Map.entry("STOP_NO_PROGRESS", (long) StopReason.NO_PROGRESS.code()),
                Map.entry("STOP_ZERO_RA", (long) StopReason.ZERO_RETURN_ADDRESS.code()),
                Map.entry("NSEC_PER_TICK", ProcessRegistry.NANOS_PER_TICK),
                Map.entry("NO_FDE_MAX_FRAME_BYTES", ReferenceUnwinder.NO_FDE_MAX_FRAME_BYTES));
    }
}
