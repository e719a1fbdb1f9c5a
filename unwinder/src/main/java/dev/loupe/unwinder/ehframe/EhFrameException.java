package dev.loupe.unwinder.ehframe;

/**
 * Call frame information (or the ELF file around it) that cannot be read. {@link #problem()} says what is
 * wrong in a form a counter can be keyed by; the message says where (section, offset).
 */
public final class EhFrameException extends Exception {
    /** What was wrong with the input. */
    public enum Problem {
        /** Not a readable ELF64 little-endian x86-64 file, or a section outside the file. */
        BAD_ELF,
        /** A length, count or size runs past its section (or the file). */
        TRUNCATED,
        /** An entry length that is impossible (e.g. 0xfffffff0..0xfffffffe, or shorter than its header). */
        BAD_LENGTH,
        /** An FDE whose CIE pointer does not lead to a CIE. */
        BAD_CIE_POINTER,
        /** A CIE version other than 1, 3 or 4, or an address size other than 8. */
        BAD_VERSION,
        /** An augmentation string that cannot be parsed (unknown letter without 'z'). */
        BAD_AUGMENTATION,
        /** A DW_EH_PE_* pointer encoding that is invalid or does not apply here. */
        BAD_POINTER_ENCODING,
        /** An unknown DW_CFA_* opcode, a location going backwards, restore_state without remember_state. */
        BAD_CFA_PROGRAM,
        /** More nested remember_state than the interpreter keeps. */
        STATE_STACK_OVERFLOW,
        /** A compressed section in a format other than zlib or zstd, or a corrupt stream. */
        BAD_COMPRESSION,
        /** Larger than the limits this reader keeps to (sections, entries, pages). */
        TOO_LARGE,
        /** An .eh_frame_hdr whose version, encodings or table cannot be used. */
        BAD_HEADER,
    }

    private final Problem problem;

    public EhFrameException(Problem problem, String message) {
        super(message);
        this.problem = problem;
    }

    public Problem problem() {
        return problem;
    }
}
