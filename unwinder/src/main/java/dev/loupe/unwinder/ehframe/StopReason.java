package dev.loupe.unwinder.ehframe;

/**
 * Why an unwind stops. Codes below 32 are stored in table rules ({@link UnwindRule#KIND_STOP}); codes from
 * 32 on arise while walking (the BPF side reports them the same way). Codes are part of the kernel
 * format: never renumber.
 */
public enum StopReason {
    /** A PC between FDEs (or outside every FDE): the table has nothing for it. */
    NO_UNWIND_INFO(1, "no unwind info"),
    /** The return address is undefined (DW_CFA_undefined rip: _start, thread start): the stack ends here. */
    END_OF_STACK(2, "end of stack"),
    /** CFA is computed from a register other than RSP or RBP. */
    UNSUPPORTED_CFA_REGISTER(3, "unsupported CFA register"),
    /** CFA is a DWARF expression other than the PLT and signal-frame forms. */
    UNSUPPORTED_CFA_EXPRESSION(4, "unsupported CFA expression"),
    /** The return address is not saved at CFA-8. */
    UNSUPPORTED_RA_RULE(5, "unsupported return-address rule"),
    /** RSP has an explicit rule (other than "CFA + 0"). */
    UNSUPPORTED_RSP_RULE(6, "unsupported RSP rule"),
    /** A CFA offset outside the rule's 32-bit field. */
    OFFSET_OUT_OF_RANGE(7, "CFA offset out of range"),
    /** The FDE could be located but its CFA program could not be interpreted. */
    MALFORMED_FDE(8, "malformed FDE"),
    /** A signal frame ('S' augmentation) whose rules are not the kernel's rt_sigframe layout. */
    UNSUPPORTED_SIGNAL_FRAME(9, "unsupported signal frame"),
    /** The table has more distinct rules than a row's 16-bit rule index can name. */
    TOO_MANY_RULES(10, "too many distinct unwind rules"),

    /** Walking: no table for the PC's mapping (or the PC is outside the table). */
    NO_TABLE(32, "no table"),
    /** Walking: reading the stack (return address, saved RBP, signal context) failed. */
    MEMORY_READ_FAILED(33, "stack read failed"),
    /** Walking: CFA is RBP-based but RBP's value is not known in this frame. */
    RBP_UNKNOWN(34, "frame base unknown"),
    /** Walking: the new SP is not above the old one (a loop or corrupt stack). */
    NO_PROGRESS(35, "stack pointer did not advance"),
    /** Walking: the frame limit was reached. */
    TRUNCATED(36, "truncated"),
    /** Walking: a return address of zero. */
    ZERO_RETURN_ADDRESS(37, "zero return address");

    private final int code;
    private final String text;

    StopReason(int code, String text) {
        this.code = code;
        this.text = text;
    }

    public int code() {
        return code;
    }

    /** Short text, e.g. "unsupported CFA expression". */
    public String text() {
        return text;
    }

    /** The synthetic frame name the symbolizer shows, e.g. {@code [unwind: unsupported CFA expression in libbar.so]}. */
    public String frameName(String binary) {
        return binary == null || binary.isEmpty() ? "[unwind: " + text + "]" : "[unwind: " + text + " in " + binary + "]";
    }

    private static final StopReason[] BY_CODE = new StopReason[64];

    static {
        for (StopReason r : values()) {
            BY_CODE[r.code] = r;
        }
    }

    /** The reason for a code, or null for an unknown code. */
    public static StopReason ofCode(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }
}
