package dev.loupe.unwinder.ehframe;

/**
 * One compiled unwind rule, packed in a {@code long} exactly as the kernel reads it (a little-endian
 * {@code struct unwind_rule { u8 kind; u8 aux; s16 rbp_offset; s32 cfa_offset; }}):
 *
 * <pre>
 * bits  0..7   kind        KIND_CFA_RSP, KIND_CFA_RBP, KIND_PLT, KIND_SIGNAL, KIND_STOP; runtimes' kinds from
 *                          FIRST_RUNTIME_KIND (KIND_JAVA_INTERP)
 * bits  8..15  aux         STOP: the {@link StopReason} code; otherwise the RBP rule (RBP_*)
 * bits 16..31  rbp_offset  RBP_SAVED: caller's RBP is at CFA + rbp_offset (signed); else 0
 * bits 32..63  cfa_offset  CFA_RSP/CFA_RBP: CFA = RSP/RBP + cfa_offset (signed); PLT: the threshold; else 0
 * </pre>
 *
 * In the CFA kinds and PLT the return address is at CFA-8 and the caller's RSP is the CFA.
 */
public final class UnwindRule {
    /** CFA = RSP + cfa_offset. */
    public static final int KIND_CFA_RSP = 0;
    /** CFA = RBP + cfa_offset. */
    public static final int KIND_CFA_RBP = 1;
    /**
     * A PLT entry: CFA = RSP + 8 + ((RIP &amp; 15) &gt;= cfa_offset ? 8 : 0). ld describes .plt with this
     * DW_CFA_def_cfa_expression (DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN;
     * DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus): N is 11 for the lazy PLT, 10 for the IBT PLT with
     * BND prefixes and 9 without (binutils 2.40's default IBT layout): after an entry's push, 8 more bytes
     * are on the stack.
     */
    public static final int KIND_PLT = 2;
    /**
     * A signal trampoline (__restore_rt, CIE augmentation 'S'): RSP points at the kernel's ucontext
     * (rt_sigframe after its return address was popped); the interrupted registers are
     * RBP at [RSP+120], RSP at [RSP+160], RIP at [RSP+168], and that RIP is exact (not a return address).
     */
    public static final int KIND_SIGNAL = 3;
    /** No unwinding past this PC; aux is the {@link StopReason} code. */
    public static final int KIND_STOP = 4;
    /**
     * Rule kinds from here on are runtimes' frames, each stepped by its runtime's own BPF step (one header each,
     * dispatched by kind in profiler.bpf.c's {@code runtime_step}) and specified by a
     * {@link ReferenceUnwinder.RuntimeStep} in the runtime's package. loupe_abi.h's {@code RULE_RUNTIME_FIRST}.
     */
    public static final int FIRST_RUNTIME_KIND = 5;
    /**
     * HotSpot's template interpreter (x86-64; {@code hotspot.bpf.h}, spec {@code hotspot.InterpreterFrameStep}): an
     * RBP-based frame that the walker reports as its {@code Method*} and bci ({@code FrameType.HOTSPOT_METHOD}).
     */
    public static final int KIND_JAVA_INTERP = FIRST_RUNTIME_KIND;
    /**
     * CPython's {@code _PyEval_EvalFrameDefault} ({@code python.bpf.h}, spec {@code python.PythonFrameStep}): the walker
     * reports the interpreter frames the call ran, then steps the native frame by the CFA kind kept in the aux byte's
     * high nibble (its low nibble the RBP rule).
     */
    public static final int KIND_PYTHON_EVAL = FIRST_RUNTIME_KIND + 1;
    /** Not a pc's rule: a word of a process's CPython layout, the first rules of the table its runtime gives. */
    public static final int KIND_PYTHON_DATA = FIRST_RUNTIME_KIND + 2;
    /**
     * HotSpot code heap memory no blob of the last scan held ({@code hotspot.bpf.h}, spec {@code hotspot.SegmentMapStep}):
     * the walker finds the blob through the heap's segment map and steps it by its frame size; no operands.
     */
    public static final int KIND_HOTSPOT_CODE = FIRST_RUNTIME_KIND + 3;
    /** Not a pc's rule: a word of a JVM's code heap layout, the first rules of its code table. */
    public static final int KIND_HOTSPOT_DATA = FIRST_RUNTIME_KIND + 4;
    /**
     * V8's code ({@code v8.bpf.h}, spec {@code v8.V8FrameStep}): a frame-pointer frame, reported as its JavaScript
     * function ({@code FrameType.V8}) when its marker slot says it is one; aux {@code V8FrameStep.AUX_BUILTINS} in the
     * embedded builtins (where an interpreted frame's bytecode offset is read).
     */
    public static final int KIND_V8_FRAME = FIRST_RUNTIME_KIND + 5;
    /** Not a pc's rule: the word of a V8 layout, the first rule of the tables the V8 runtime gives. */
    public static final int KIND_V8_DATA = FIRST_RUNTIME_KIND + 6;

    /** RBP is unchanged in the caller. */
    public static final int RBP_UNCHANGED = 0;
    /** The caller's RBP was saved at CFA + rbp_offset. */
    public static final int RBP_SAVED = 1;
    /** The caller's RBP cannot be recovered (undefined, or a rule the table does not express). */
    public static final int RBP_UNKNOWN = 2;

    /** Offsets of the interrupted registers from RSP at a signal trampoline (x86-64 rt_sigframe, uc_mcontext at 40). */
    public static final int SIGNAL_RBP_OFFSET = 40 + 10 * 8;
    public static final int SIGNAL_RSP_OFFSET = 40 + 15 * 8;
    public static final int SIGNAL_RIP_OFFSET = 40 + 16 * 8;

    /** Returned by lookups for a PC the table does not cover (never a valid rule: kind 0xff). */
    public static final long NOT_COVERED = 0xffL;

    private UnwindRule() {}

    public static long cfa(int kind, long cfaOffset, int rbpRule, int rbpOffset) {
        return (kind & 0xffL) | (rbpRule & 0xffL) << 8 | (rbpOffset & 0xffffL) << 16 | (cfaOffset & 0xffffffffL) << 32;
    }

    /** {@code nativeRule} (a CFA kind) as a {@link #KIND_PYTHON_EVAL} rule: its kind moves to the aux byte's high nibble. */
    public static long pythonEval(long nativeRule) {
        return nativeRule & ~0xffffL | KIND_PYTHON_EVAL | (long) (kind(nativeRule) << 4 | rbpRule(nativeRule)) << 8;
    }

    /** The native CFA rule a {@link #KIND_PYTHON_EVAL} rule keeps. */
    public static long pythonNative(long pythonRule) {
        return pythonRule & ~0xffffL | (pythonRule >>> 12 & 0xf) | (pythonRule >>> 8 & 0xf) << 8;
    }

    public static long stop(StopReason reason) {
        return KIND_STOP | (long) reason.code() << 8;
    }

    public static int kind(long rule) {
        return (int) (rule & 0xff);
    }

    public static int rbpRule(long rule) {
        return (int) (rule >>> 8 & 0xff);
    }

    public static int rbpOffset(long rule) {
        return (short) (rule >>> 16);
    }

    public static int cfaOffset(long rule) {
        return (int) (rule >>> 32);
    }

    /** The stop reason of a KIND_STOP rule (NO_TABLE for NOT_COVERED), else null. */
    public static StopReason stopReason(long rule) {
        if (rule == NOT_COVERED) {
            return StopReason.NO_TABLE;
        }
        return kind(rule) == KIND_STOP ? StopReason.ofCode(rbpRule(rule)) : null;
    }

    /** Human-readable form, e.g. {@code rsp+16 rbp=c-16}, {@code plt(rip&15>=11)}, {@code stop(end of stack)}. */
    public static String toString(long rule) {
        if (rule == NOT_COVERED) {
            return "not-covered";
        }
        String rbp = switch (rbpRule(rule)) {
            case RBP_UNCHANGED -> "";
            case RBP_SAVED -> " rbp=c" + (rbpOffset(rule) >= 0 ? "+" : "") + rbpOffset(rule);
            default -> " rbp=?";
        };
        return switch (kind(rule)) {
            case KIND_CFA_RSP -> "rsp" + signed(cfaOffset(rule)) + rbp;
            case KIND_CFA_RBP -> "rbp" + signed(cfaOffset(rule)) + rbp;
            case KIND_PLT -> "plt(rip&15>=" + cfaOffset(rule) + ")";
            case KIND_SIGNAL -> "signal";
            case KIND_JAVA_INTERP -> "java-interpreter";
            case KIND_PYTHON_EVAL -> "python-eval(" + toString(pythonNative(rule)) + ")";
            case KIND_PYTHON_DATA -> "python-data(0x" + Long.toHexString(rule >>> 8) + ")";
            case KIND_HOTSPOT_CODE -> "hotspot-segment-map";
            case KIND_HOTSPOT_DATA -> "hotspot-data(0x" + Long.toHexString(rule >>> 8) + ")";
            case KIND_V8_FRAME -> "v8-frame" + ((rule >>> 8 & 0xff) != 0 ? "(builtins)" : "");
            case KIND_V8_DATA -> "v8-data(0x" + Long.toHexString(rule >>> 8) + ")";
            case KIND_STOP -> "stop(" + (stopReason(rule) == null ? "code " + rbpRule(rule) : stopReason(rule).text()) + ")";
            default -> "bad(0x" + Long.toHexString(rule) + ")";
        };
    }

    private static String signed(int v) {
        return v >= 0 ? "+" + v : Integer.toString(v);
    }
}
