package dev.loupe.unwinder.python;

import dev.loupe.unwinder.ehframe.FdeRanges;
import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.golang.X86InstructionLength;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Where {@code _PyEval_EvalFrameDefault}'s code is: its symbol's range and the parts gcc moved apart from it
 * ({@code _PyEval_EvalFrameDefault.cold}, which stripped binaries name nowhere; Debian's 3.13 and 3.14 run most of the
 * loop there). A part is found as the FDE holding the target of a jump (never a call) from the function's code out of
 * it, and is one only if its first row is not a function's entry (CFA = RSP+8): it runs in the function's frame. Jumps
 * from parts found are followed too (at most {@link #MAX_PARTS}). A sample in a part not found would report its
 * frames at the next loop frame: so every part counts.
 */
final class EvalRanges {
    static final int MAX_PARTS = 8;
    private static final long ENTRY = UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 8, UnwindRule.RBP_UNCHANGED, 0);

    private EvalRanges() {}

    /** [low, high) file-address ranges, the symbol's first. */
    static List<long[]> find(Path file, List<LoadSegment> segments, long low, long high, FdeRanges fdes, UnwindTable table)
            throws IOException {
        List<long[]> parts = new ArrayList<>();
        parts.add(new long[] {low, high});
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            for (int p = 0; p < parts.size() && parts.size() < MAX_PARTS; p++) {
                long[] r = parts.get(p);
                byte[] code = read(ch, segments, r[0], (int) Math.min(r[1] - r[0], 1 << 20));
                for (long target : jumpTargets(code, r[0])) {
                    if (inside(parts, target)) {
                        continue;
                    }
                    long[] fde = fdes.covering(target);
                    if (fde != null && !inside(parts, fde[0]) && table.lookup(fde[0]) != ENTRY
                            && UnwindRule.kind(table.lookup(fde[0])) <= UnwindRule.KIND_CFA_RBP && parts.size() < MAX_PARTS) {
                        parts.add(fde);
                    }
                }
            }
        }
        return parts;
    }

    private static boolean inside(List<long[]> parts, long pc) {
        for (long[] r : parts) {
            if (pc >= r[0] && pc < r[1]) {
                return true;
            }
        }
        return false;
    }

    /** Targets of the direct jumps (jmp, jcc; rel8 or rel32) in {@code code} at file address {@code base}, by a linear sweep. */
    static List<Long> jumpTargets(byte[] code, long base) {
        List<Long> out = new ArrayList<>();
        int pos = 0;
        while (pos < code.length) {
            X86InstructionLength.Instruction in = X86InstructionLength.decode(code, pos, code.length);
            if (in == null) {
                break; // bytes that are not code: what was found so far stands
            }
            int end = pos + in.length();
            long next = base + end;
            if (!in.vex() && in.map() == 0 && (in.opcode() == 0xE9)) {
                out.add(next + ByteBuffer.wrap(code, end - 4, 4).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt());
            } else if (!in.vex() && in.map() == 0 && (in.opcode() == 0xEB || (in.opcode() >= 0x70 && in.opcode() <= 0x7F))) {
                out.add(next + code[end - 1]);
            } else if (!in.vex() && in.map() == 1 && in.opcode() >= 0x80 && in.opcode() <= 0x8F) {
                out.add(next + ByteBuffer.wrap(code, end - 4, 4).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt());
            }
            pos = end;
        }
        return out;
    }

    private static byte[] read(FileChannel ch, List<LoadSegment> segments, long vaddr, int length) throws IOException {
        for (LoadSegment s : segments) {
            if (vaddr >= s.vaddr() && vaddr + length <= s.vaddr() + s.fileSize()) {
                ByteBuffer b = ByteBuffer.allocate(length);
                long at = s.offset() + (vaddr - s.vaddr());
                while (b.hasRemaining()) {
                    if (ch.read(b, at + b.position()) < 0) {
                        throw new IOException("the file ends before 0x" + Long.toHexString(vaddr + length));
                    }
                }
                return b.array();
            }
        }
        throw new IOException("0x" + Long.toHexString(vaddr) + " is in no loaded segment");
    }
}
