package dev.loupe.unwinder.golang;

import java.util.Arrays;
import java.util.Optional;

/**
 * The return instructions of one function (C3 ret, C2 ret imm16, CB/CA far ret, with any prefixes such as
 * F3 C3), found by decoding instruction lengths linearly from the entry: every offset returned is the
 * start of an instruction, never a C3 byte inside another one.
 */
public final class ReturnFinder {
    /**
     * @param returnOffsets  offsets from the function's entry of each return instruction's first byte
     *                       (including its prefixes), ascending
     * @param instructions   instructions decoded
     * @param problem        why the function cannot be probed at its returns, if it cannot: it has no
     *                       return (only tail jumps or no-return calls), or its bytes do not decode
     */
    public record Returns(int[] returnOffsets, int instructions, Optional<String> problem) {
        public boolean probeable() {
            return problem.isEmpty();
        }
    }

    private ReturnFinder() {}

    /** Decodes {@code code[from, to)}, a function's bytes starting at its entry. */
    public static Returns find(byte[] code, int from, int to) {
        if (from < 0 || to > code.length || from > to) {
            throw new IllegalArgumentException("range [" + from + ", " + to + ") outside " + code.length + " bytes");
        }
        int[] rets = new int[8];
        int n = 0;
        int count = 0;
        int p = from;
        while (p < to) {
            X86InstructionLength.Instruction i = X86InstructionLength.decode(code, p, to);
            if (i == null) {
                return new Returns(Arrays.copyOf(rets, n), count, Optional.of("instruction at offset " + (p - from)
                        + " runs past the function's end (" + (to - from) + " bytes): not code, or a wrong function size"));
            }
            if (i.isReturn()) {
                if (n == rets.length) {
                    rets = Arrays.copyOf(rets, n * 2);
                }
                rets[n++] = p - from;
            }
            count++;
            p += i.length();
        }
        int[] out = Arrays.copyOf(rets, n);
        return new Returns(out, count, n == 0 ? Optional.of("no return instruction (the function ends in tail jumps or never returns)")
                : Optional.empty());
    }
}
