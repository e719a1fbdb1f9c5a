package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.ehframe.EhFrameException.Problem;

import static dev.loupe.unwinder.ehframe.UnwindRule.KIND_CFA_RBP;
import static dev.loupe.unwinder.ehframe.UnwindRule.KIND_CFA_RSP;
import static dev.loupe.unwinder.ehframe.UnwindRule.KIND_PLT;
import static dev.loupe.unwinder.ehframe.UnwindRule.KIND_SIGNAL;
import static dev.loupe.unwinder.ehframe.UnwindRule.RBP_SAVED;
import static dev.loupe.unwinder.ehframe.UnwindRule.RBP_UNCHANGED;
import static dev.loupe.unwinder.ehframe.UnwindRule.RBP_UNKNOWN;

/**
 * Runs CIE and FDE call frame programs (DWARF 5 section 6.4.2, plus the GNU extensions GCC emits) and
 * compiles the state at each location into an {@link UnwindRule}.
 *
 * <p>Only the rules the x86-64 unwinder needs are kept: the CFA, RBP (DWARF register 6), RSP (7) and the
 * CIE's return-address column; rules for other registers are decoded (so malformed programs are still
 * caught) and dropped. Every instruction consumes at least one byte of a bounded program and
 * remember_state nests at most {@link #MAX_STATE_DEPTH} deep, so a program runs in time linear in its
 * length with constant memory.
 */
final class CfaInterpreter {
    static final int MAX_STATE_DEPTH = 64;
    static final int REG_RBP = 6;
    static final int REG_RSP = 7;

    // Register rule types.
    static final int UNSET = 0, UNDEFINED = 1, SAME = 2, OFFSET = 3, VAL_OFFSET = 4, REGISTER = 5, EXPRESSION = 6,
            VAL_EXPRESSION = 7;
    private static final int SLOT_RBP = 0, SLOT_RSP = 1, SLOT_RA = 2;

    /**
     * The DW_CFA_def_cfa_expression block ld emits for .plt (x86-64), byte for byte; byte
     * {@link #PLT_LIT_INDEX} is DW_OP_litN (N = 11 lazy PLT, 10 IBT PLT with BND, 9 IBT PLT).
     */
    private static final byte[] PLT_EXPR = {0x77, 0x08, (byte) 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22};
    private static final int PLT_LIT_INDEX = 6;

    /** The register rules at one location. */
    static final class State {
        boolean cfaExpression;
        long cfaRegister;
        long cfaOffset;
        int cfaExprPos;
        int cfaExprLen;
        final int[] type = new int[3];
        final long[] value = new long[3]; // offset, or register number
        final int[] exprPos = new int[3];
        final int[] exprLen = new int[3];

        void copyFrom(State o) {
            cfaExpression = o.cfaExpression;
            cfaRegister = o.cfaRegister;
            cfaOffset = o.cfaOffset;
            cfaExprPos = o.cfaExprPos;
            cfaExprLen = o.cfaExprLen;
            System.arraycopy(o.type, 0, type, 0, 3);
            System.arraycopy(o.value, 0, value, 0, 3);
            System.arraycopy(o.exprPos, 0, exprPos, 0, 3);
            System.arraycopy(o.exprLen, 0, exprLen, 0, 3);
        }
    }

    /** Receives the rule in effect from {@code pc} on (until the next row or the FDE's end). */
    interface RowSink {
        void row(long pc, long rule);
    }

    private final State state = new State();
    private final State[] stack = new State[MAX_STATE_DEPTH];
    private int depth;

    /**
     * Emits the rows of one FDE, in ascending PC order, starting at its pcBegin; rows at or past pcEnd
     * are not emitted. Throws if the CIE's or the FDE's program is malformed.
     */
    void run(CfiSection sec, CfiSection.Fde fde, RowSink sink) throws EhFrameException {
        CfiSection.Cie cie = fde.cie();
        if (cie.initialError != null) { // decoded once: many FDEs on one bad CIE must not re-run it each
            throw new EhFrameException(cie.initialError.problem(), cie.initialError.getMessage());
        }
        if (cie.initialState == null) {
            State init = new State();
            depth = 0;
            try {
                execute(sec, cie, cie.initialStart, cie.initialEnd, init, null, 0, 0, null, cie.offset);
            } catch (EhFrameException e) {
                cie.initialError = e;
                throw e;
            }
            cie.initialState = init;
        }
        state.copyFrom(cie.initialState);
        depth = 0;
        execute(sec, cie, fde.instructionStart(), fde.instructionEnd(), state, cie.initialState, fde.pcBegin(), fde.pcEnd(),
                sink, fde.offset());
    }

    /** Executes a program; {@code initial} is null for a CIE's initial instructions (no rows). */
    private void execute(CfiSection sec, CfiSection.Cie cie, int start, int end, State s, State initial, long pcBegin,
                         long pcEnd, RowSink sink, long entry) throws EhFrameException {
        byte[] d = sec.data;
        CfiSection.Cursor c = new CfiSection.Cursor(start, end);
        long loc = pcBegin;
        long rule = 0;
        boolean dirty = true;
        while (c.pos < end) {
            int op = d[c.pos++] & 0xff;
            long advance = 0;
            switch (op >>> 6) {
                case 1 -> advance = (op & 0x3f) * cie.codeAlign; // codeAlign <= 2^16: no overflow
                case 2 -> {
                    set(s, cie, op & 0x3f, OFFSET, mul(c.uleb(sec, entry), cie.dataAlign, sec, entry), 0, 0);
                    dirty = true;
                }
                case 3 -> {
                    restore(s, initial, cie, op & 0x3f);
                    dirty = true;
                }
                default -> {
                    boolean changes = true;
                    switch (op) {
                        case 0x00 -> changes = false; // DW_CFA_nop
                        case 0x01 -> { // DW_CFA_set_loc
                            long to = sec.eh ? sec.readEncoded(c, cie.fdeEncoding, entry, "DW_CFA_set_loc")
                                    : readAddress(sec, c, cie.addressSize, entry);
                            if (Long.compareUnsigned(to, loc) < 0) {
                                throw sec.error(Problem.BAD_CFA_PROGRAM, entry, "DW_CFA_set_loc goes backwards");
                            }
                            advance = to - loc;
                            changes = false;
                        }
                        case 0x02 -> { // DW_CFA_advance_loc1
                            c.need(1, sec, entry);
                            advance = (d[c.pos++] & 0xff) * cie.codeAlign;
                            changes = false;
                        }
                        case 0x03 -> { // DW_CFA_advance_loc2
                            advance = sec.readFormat(c, CfiSection.PE_UDATA2, entry, "DW_CFA_advance_loc2", 2) * cie.codeAlign;
                            changes = false;
                        }
                        case 0x04 -> { // DW_CFA_advance_loc4
                            advance = sec.readFormat(c, CfiSection.PE_UDATA4, entry, "DW_CFA_advance_loc4", 3) * cie.codeAlign;
                            changes = false;
                        }
                        case 0x05 -> { // DW_CFA_offset_extended
                            long reg = c.uleb(sec, entry);
                            set(s, cie, reg, OFFSET, mul(c.uleb(sec, entry), cie.dataAlign, sec, entry), 0, 0);
                        }
                        case 0x06 -> restore(s, initial, cie, c.uleb(sec, entry)); // DW_CFA_restore_extended
                        case 0x07 -> set(s, cie, c.uleb(sec, entry), UNDEFINED, 0, 0, 0);
                        case 0x08 -> set(s, cie, c.uleb(sec, entry), SAME, 0, 0, 0);
                        case 0x09 -> { // DW_CFA_register
                            long reg = c.uleb(sec, entry);
                            set(s, cie, reg, REGISTER, c.uleb(sec, entry), 0, 0);
                        }
                        case 0x0a -> { // DW_CFA_remember_state
                            if (depth == MAX_STATE_DEPTH) {
                                throw new EhFrameException(Problem.STATE_STACK_OVERFLOW, sec.name + " at offset 0x"
                                        + Long.toHexString(entry) + ": remember_state nested deeper than " + MAX_STATE_DEPTH);
                            }
                            if (stack[depth] == null) {
                                stack[depth] = new State();
                            }
                            stack[depth++].copyFrom(s);
                            changes = false;
                        }
                        case 0x0b -> { // DW_CFA_restore_state
                            if (depth == 0) {
                                throw sec.error(Problem.BAD_CFA_PROGRAM, entry, "DW_CFA_restore_state without remember_state");
                            }
                            s.copyFrom(stack[--depth]);
                        }
                        case 0x0c -> { // DW_CFA_def_cfa
                            s.cfaRegister = c.uleb(sec, entry);
                            s.cfaOffset = c.uleb(sec, entry);
                            s.cfaExpression = false;
                        }
                        case 0x0d -> { // DW_CFA_def_cfa_register
                            s.cfaRegister = c.uleb(sec, entry);
                            s.cfaExpression = false;
                        }
                        case 0x0e -> s.cfaOffset = c.uleb(sec, entry); // DW_CFA_def_cfa_offset
                        case 0x0f -> { // DW_CFA_def_cfa_expression
                            long len = c.uleb(sec, entry);
                            int at = c.pos;
                            c.skip(len, sec, entry, "DW_CFA_def_cfa_expression block");
                            s.cfaExpression = true;
                            s.cfaExprPos = at;
                            s.cfaExprLen = (int) len;
                        }
                        case 0x10, 0x16 -> { // DW_CFA_expression, DW_CFA_val_expression
                            long reg = c.uleb(sec, entry);
                            long len = c.uleb(sec, entry);
                            int at = c.pos;
                            c.skip(len, sec, entry, "expression block");
                            set(s, cie, reg, op == 0x10 ? EXPRESSION : VAL_EXPRESSION, 0, at, (int) len);
                        }
                        case 0x11 -> { // DW_CFA_offset_extended_sf
                            long reg = c.uleb(sec, entry);
                            set(s, cie, reg, OFFSET, mul(c.sleb(sec, entry), cie.dataAlign, sec, entry), 0, 0);
                        }
                        case 0x12 -> { // DW_CFA_def_cfa_sf
                            s.cfaRegister = c.uleb(sec, entry);
                            s.cfaOffset = mul(c.sleb(sec, entry), cie.dataAlign, sec, entry);
                            s.cfaExpression = false;
                        }
                        case 0x13 -> s.cfaOffset = mul(c.sleb(sec, entry), cie.dataAlign, sec, entry); // DW_CFA_def_cfa_offset_sf
                        case 0x14 -> { // DW_CFA_val_offset
                            long reg = c.uleb(sec, entry);
                            set(s, cie, reg, VAL_OFFSET, mul(c.uleb(sec, entry), cie.dataAlign, sec, entry), 0, 0);
                        }
                        case 0x15 -> { // DW_CFA_val_offset_sf
                            long reg = c.uleb(sec, entry);
                            set(s, cie, reg, VAL_OFFSET, mul(c.sleb(sec, entry), cie.dataAlign, sec, entry), 0, 0);
                        }
                        case 0x2e -> { // DW_CFA_GNU_args_size: the callee pops its arguments; no rule changes
                            c.uleb(sec, entry);
                            changes = false;
                        }
                        case 0x2f -> { // DW_CFA_GNU_negative_offset_extended
                            long reg = c.uleb(sec, entry);
                            set(s, cie, reg, OFFSET, -(mul(c.uleb(sec, entry), cie.dataAlign, sec, entry)), 0, 0);
                        }
                        default -> throw sec.error(Problem.BAD_CFA_PROGRAM, entry,
                                "unknown DW_CFA opcode 0x" + Integer.toHexString(op) + " at offset 0x" + Integer.toHexString(c.pos - 1));
                    }
                    dirty |= changes;
                }
            }
            if (advance != 0 && sink != null) {
                long to = loc + advance;
                if (Long.compareUnsigned(to, loc) < 0) {
                    throw sec.error(Problem.BAD_CFA_PROGRAM, entry, "location advances past the end of the address space");
                }
                if (dirty) {
                    rule = compile(sec, cie, s);
                    dirty = false;
                }
                sink.row(loc, rule);
                loc = to;
                if (Long.compareUnsigned(loc, pcEnd) >= 0) {
                    return; // the rest of the program describes PCs outside the FDE
                }
            }
        }
        if (sink != null) {
            if (dirty) {
                rule = compile(sec, cie, s);
            }
            sink.row(loc, rule);
        }
    }

    /** Factored offsets: a product that overflows is a malformed program, not a wrapped-around offset. */
    private static long mul(long v, long factor, CfiSection sec, long entry) throws EhFrameException {
        try {
            return Math.multiplyExact(v, factor);
        } catch (ArithmeticException e) {
            throw sec.error(Problem.BAD_CFA_PROGRAM, entry, "factored offset overflows 64 bits");
        }
    }

    private static long readAddress(CfiSection sec, CfiSection.Cursor c, int size, long entry) throws EhFrameException {
        return sec.readFormat(c, size == 4 ? CfiSection.PE_UDATA4 : CfiSection.PE_UDATA8, entry, "address", size);
    }

    private static int slot(CfiSection.Cie cie, long reg) {
        if (reg == cie.raRegister) {
            return SLOT_RA;
        }
        if (reg == REG_RBP) {
            return SLOT_RBP;
        }
        return reg == REG_RSP ? SLOT_RSP : -1;
    }

    private static void set(State s, CfiSection.Cie cie, long reg, int type, long value, int exprPos, int exprLen) {
        int i = slot(cie, reg);
        if (i >= 0) {
            s.type[i] = type;
            s.value[i] = value;
            s.exprPos[i] = exprPos;
            s.exprLen[i] = exprLen;
        }
    }

    private static void restore(State s, State initial, CfiSection.Cie cie, long reg) {
        int i = slot(cie, reg);
        if (i < 0) {
            return;
        }
        if (initial == null) { // restore inside a CIE's own program: back to "no rule"
            s.type[i] = UNSET;
            s.value[i] = 0;
            return;
        }
        s.type[i] = initial.type[i];
        s.value[i] = initial.value[i];
        s.exprPos[i] = initial.exprPos[i];
        s.exprLen[i] = initial.exprLen[i];
    }

    /** Compiles one state into a rule; everything the kernel format cannot express becomes a stop. */
    static long compile(CfiSection sec, CfiSection.Cie cie, State s) {
        int raType = s.type[SLOT_RA];
        if (raType == UNDEFINED) {
            return UnwindRule.stop(StopReason.END_OF_STACK);
        }
        if (cie.signalFrame) {
            return isKernelSigframe(sec, s) ? UnwindRule.cfa(KIND_SIGNAL, 0, RBP_UNCHANGED, 0)
                    : UnwindRule.stop(StopReason.UNSUPPORTED_SIGNAL_FRAME);
        }
        int kind;
        long cfaOffset = 0;
        if (s.cfaExpression) {
            int threshold = pltThreshold(sec.data, s.cfaExprPos, s.cfaExprLen);
            if (threshold < 0) {
                return UnwindRule.stop(StopReason.UNSUPPORTED_CFA_EXPRESSION);
            }
            kind = KIND_PLT;
            cfaOffset = threshold;
        } else if (s.cfaRegister == REG_RSP || s.cfaRegister == REG_RBP) {
            kind = s.cfaRegister == REG_RSP ? KIND_CFA_RSP : KIND_CFA_RBP;
            cfaOffset = s.cfaOffset;
            if (cfaOffset != (int) cfaOffset) {
                return UnwindRule.stop(StopReason.OFFSET_OUT_OF_RANGE);
            }
        } else {
            return UnwindRule.stop(StopReason.UNSUPPORTED_CFA_REGISTER);
        }
        if (raType != OFFSET || s.value[SLOT_RA] != -8) {
            return UnwindRule.stop(StopReason.UNSUPPORTED_RA_RULE);
        }
        int rspType = s.type[SLOT_RSP];
        if (rspType != UNSET && !(rspType == VAL_OFFSET && s.value[SLOT_RSP] == 0)) {
            return UnwindRule.stop(StopReason.UNSUPPORTED_RSP_RULE);
        }
        int rbpRule;
        int rbpOffset = 0;
        switch (s.type[SLOT_RBP]) {
            case UNSET, SAME -> rbpRule = RBP_UNCHANGED;
            case OFFSET -> {
                long o = s.value[SLOT_RBP];
                if (o == (short) o) {
                    rbpRule = RBP_SAVED;
                    rbpOffset = (int) o;
                } else {
                    rbpRule = RBP_UNKNOWN;
                }
            }
            default -> rbpRule = RBP_UNKNOWN;
        }
        return UnwindRule.cfa(kind, cfaOffset, rbpRule, rbpOffset);
    }

    /**
     * glibc's __restore_rt: CFA = [RSP + 160] (DW_OP_breg7 160; DW_OP_deref), RIP and RBP saved by
     * expressions at RSP+168 and RSP+120: the kernel's rt_sigframe ucontext, which the BPF side reads directly.
     */
    private static boolean isKernelSigframe(CfiSection sec, State s) {
        return s.cfaExpression && bregRsp(sec.data, s.cfaExprPos, s.cfaExprLen, true) == UnwindRule.SIGNAL_RSP_OFFSET
                && s.type[SLOT_RA] == EXPRESSION
                && bregRsp(sec.data, s.exprPos[SLOT_RA], s.exprLen[SLOT_RA], false) == UnwindRule.SIGNAL_RIP_OFFSET
                && s.type[SLOT_RBP] == EXPRESSION
                && bregRsp(sec.data, s.exprPos[SLOT_RBP], s.exprLen[SLOT_RBP], false) == UnwindRule.SIGNAL_RBP_OFFSET;
    }

    /** The offset N of an expression that is exactly {@code DW_OP_breg7 N} (then DW_OP_deref if asked), else -1. */
    private static long bregRsp(byte[] d, int pos, int len, boolean deref) {
        int end = pos + len;
        if (len < 2 || d[pos] != 0x77) {
            return -1;
        }
        long v = 0;
        int shift = 0;
        int p = pos + 1;
        int b;
        do {
            if (p >= end || shift > 56) {
                return -1;
            }
            b = d[p++];
            v |= (long) (b & 0x7f) << shift;
            shift += 7;
        } while ((b & 0x80) != 0);
        if ((b & 0x40) != 0) {
            v |= -1L << shift;
        }
        if (deref) {
            if (p >= end || d[p++] != 0x06) {
                return -1;
            }
        }
        return p == end && v >= 0 ? v : -1;
    }

    /** N of ld's PLT expression with DW_OP_litN (0..15), or -1 if the block is anything else. */
    private static int pltThreshold(byte[] d, int pos, int len) {
        if (len != PLT_EXPR.length) {
            return -1;
        }
        for (int i = 0; i < len; i++) {
            if (i != PLT_LIT_INDEX && d[pos + i] != PLT_EXPR[i]) {
                return -1;
            }
        }
        int lit = d[pos + PLT_LIT_INDEX] - 0x30; // DW_OP_lit0
        return lit >= 0 && lit <= 15 ? lit : -1;
    }
}
