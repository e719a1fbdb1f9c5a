package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.ehframe.ElfSections;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Fuzz target for the x86-64 length decoder ({@link X86InstructionLength}) and {@link ReturnFinder}, which place
 * latency probes on the returns of a function in any user's binary: a probe on a byte that does not start an
 * instruction would corrupt the traced program. Input: the first byte is where the function starts, the rest is
 * code. Nothing may escape; a finding is also an instruction longer than 15 bytes or past the limit, a decode that
 * depends on bytes after the instruction or on the limit once the instruction fits, returns out of order or not on
 * a decoded return, or a function decoded without returns and without a problem said.
 */
public final class X86DecoderFuzzTarget {
    private X86DecoderFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        if (data.length == 0) {
            return;
        }
        byte[] code = Arrays.copyOfRange(data, 1, data.length);
        int from = Math.min(data[0] & 0xff, code.length);
        ReturnFinder.Returns r = ReturnFinder.find(code, from, code.length);
        int[] rets = r.returnOffsets();
        int k = 0;
        int count = 0;
        int p = from;
        while (p < code.length) {
            X86InstructionLength.Instruction i = X86InstructionLength.decode(code, p, code.length);
            if (i == null) {
                if (r.problem().isEmpty()) {
                    throw new IllegalStateException("undecodable at " + p + " but no problem reported");
                }
                break;
            }
            if (i.length() < 1 || i.length() > X86InstructionLength.MAX_LENGTH || i.length() > code.length - p) {
                throw new IllegalStateException("length " + i.length() + " at " + p + " of " + code.length);
            }
            X86InstructionLength.Instruction exact = X86InstructionLength.decode(code, p, p + i.length());
            if (!i.equals(exact)) {
                throw new IllegalStateException("at " + p + ": " + i + " up to the end, " + exact + " up to its own end");
            }
            // The decoder reads at most 15 bytes: the instruction alone, then followed by other bytes than the code's.
            byte[] changed = Arrays.copyOfRange(code, p, Math.min(code.length, p + X86InstructionLength.MAX_LENGTH + 1));
            for (int j = i.length(); j < changed.length; j++) {
                changed[j] ^= (byte) 0xa5;
            }
            X86InstructionLength.Instruction after = X86InstructionLength.decode(changed, 0, changed.length);
            if (!i.equals(after)) {
                throw new IllegalStateException("at " + p + ": " + i + " depends on the bytes after it: " + after);
            }
            if (i.isReturn()) {
                if (k >= rets.length || rets[k] != p - from) {
                    throw new IllegalStateException("return at " + (p - from) + " not reported: " + Arrays.toString(rets));
                }
                k++;
            }
            count++;
            p += i.length();
        }
        if (k != rets.length) {
            throw new IllegalStateException("returns reported " + Arrays.toString(rets) + ", decoded " + k);
        }
        if (r.instructions() != count) {
            throw new IllegalStateException(r.instructions() + " instructions reported, " + count + " decoded");
        }
        if (r.problem().isEmpty() != (rets.length > 0 && p == code.length)) {
            throw new IllegalStateException("problem " + r.problem() + " with " + rets.length + " returns, decoded to " + p);
        }
    }

    /** Code compilers write: the .text of a small C program at -O2 and with AVX (VEX prefixes), and pieces of libc's. */
    public static void writeSeeds(Path dir) throws Exception {
        Path work = Files.createTempDirectory("loupe-x86-seed");
        try {
            String src = """
                    #include <string.h>
                    double dot(const double *a, const double *b, int n) { double s = 0; for (int i = 0; i < n; i++) s += a[i] * b[i]; return s; }
                    int find(const char *s, char c) { const char *p = strchr(s, c); return p ? (int)(p - s) : -1; }
                    long mix(long x) { switch (x & 7) { case 0: return x * 31; case 1: return x >> 3; case 2: return ~x; case 3: return x ^ 0xc3c3; default: return x; } }
                    int main(int argc, char **argv) { double a[8] = {argc}; return (int) dot(a, a, 8) + find(argv[0], '/') + (int) mix(argc); }
                    """;
            int n = 0;
            for (String[] flags : new String[][] {{"-O2"}, {"-O3", "-mavx2", "-mfma"}}) {
                Path bin = TestPrograms.compile(work, "x86-" + n, src, flags);
                ElfSections s = ElfSections.read(bin);
                byte[] text = s.contents(s.find(".text"));
                for (int at = 0; at < text.length && at < 8192; at += 2048) {
                    byte[] piece = Arrays.copyOfRange(text, at, Math.min(text.length, at + 2048));
                    byte[] in = new byte[piece.length + 1];
                    System.arraycopy(piece, 0, in, 1, piece.length);
                    Files.write(dir.resolve("seed-text-" + n + "-" + at), in);
                }
                n++;
            }
            ElfSections libc = ElfSections.read(TestPrograms.LIBC); // hand-written and compiled code of every kind
            byte[] text = libc.contents(libc.find(".text"));
            for (int at : new int[] {0x10000, 0x40000, 0x90000}) {
                if (at + 2048 <= text.length) {
                    byte[] in = new byte[2049];
                    System.arraycopy(text, at, in, 1, 2048);
                    Files.write(dir.resolve("seed-libc-text-" + Integer.toHexString(at)), in);
                }
            }
        } finally {
            try (var files = Files.list(work)) {
                for (Path p : files.toList()) {
                    Files.delete(p);
                }
            }
            Files.delete(work);
        }
    }
}
