package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.ehframe.EhFrameException.Problem;
import dev.loupe.unwinder.elf.SectionHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Exact decoding of hand-assembled CFI (every pointer encoding, old "eh" augmentation), and bad input: it
 * ends in a typed, counted problem, never an unchecked exception, a hang, an OOM or a wrong row.
 */
class CfiParserTest {
    static final long RSP8 = UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 8, 0, 0);
    static final long RSP16 = UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 16, 0, 0);
    static final long NO_INFO = UnwindRule.stop(StopReason.NO_UNWIND_INFO);
    static final long MALFORMED = UnwindRule.stop(StopReason.MALFORMED_FDE);

    @TempDir
    Path tmp;

    static UnwindTable eh(byte[] section) throws EhFrameException {
        UnwindTable t = UnwindTableBuilder.buildFromSection("test", section, true, 0x1000);
        t.verify();
        return t;
    }

    /** Two good FDEs: push at +1 (CFA rsp+16) then a gap. */
    static CfiBytes good() {
        return new CfiBytes(true).standardCie()
                .fde(0, 0x401000, 0x20, 0x41, 0x0e, 16)
                .fde(0, 0x401040, 0x10, 0x41, 0x0e, 16);
    }

    @Test
    void wellFormedBaseline() throws Exception {
        UnwindTable t = eh(good().bytes());
        assertEquals(RSP8, t.lookup(0x401000));
        assertEquals(RSP16, t.lookup(0x401001));
        assertEquals(RSP16, t.lookup(0x40101f));
        assertEquals(NO_INFO, t.lookup(0x401020));
        assertEquals(RSP8, t.lookup(0x401040));
        assertEquals(NO_INFO, t.lookup(0x401050));
        assertEquals(NO_INFO, t.lookup(0x400fff), "before the first FDE, in its page");
        assertEquals(UnwindRule.NOT_COVERED, t.lookup(0x3fffff));
        assertEquals(UnwindRule.NOT_COVERED, t.lookup(0x411000));
        assertEquals(2, t.stats().fdes());
    }

    /**
     * Each prefix of {@link #good()} (the section whole included): every FDE that ends within it is kept with
     * exactly its rows (CFA rsp+8 at its first byte, rsp+16 after the push), a cut one is dropped (its range reads
     * as having no unwind info, or as not covered when no FDE is left), never half-read.
     */
    @Test
    void everyTruncationKeepsIntactFdesExact() throws Exception {
        CfiBytes c = new CfiBytes(true).standardCie();
        c.fde(0, 0x401000, 0x20, 0x41, 0x0e, 16);
        int firstEnd = c.offset();
        c.fde(0, 0x401040, 0x10, 0x41, 0x0e, 16);
        byte[] full = c.bytes();
        long[][] ranges = {{0x401000, 0x401020}, {0x401040, 0x401050}};
        int[] ends = {firstEnd, full.length};
        for (int cut = 0; cut <= full.length; cut++) {
            UnwindTable t = eh(Arrays.copyOf(full, cut));
            int complete = cut >= full.length ? 2 : cut >= firstEnd ? 1 : 0;
            assertEquals(complete, t.stats().fdes(), "cut " + cut);
            for (long pc = 0x401000; pc < 0x401050; pc++) {
                long want = complete == 0 ? UnwindRule.NOT_COVERED : NO_INFO;
                for (int f = 0; f < 2; f++) {
                    if (cut >= ends[f] && pc >= ranges[f][0] && pc < ranges[f][1]) {
                        want = pc == ranges[f][0] ? RSP8 : RSP16;
                    }
                }
                assertEquals(want, t.lookup(pc), "cut " + cut + " pc " + Long.toHexString(pc) + ": got "
                        + UnwindRule.toString(t.lookup(pc)) + ", want " + UnwindRule.toString(want));
            }
        }
    }

    @Test
    void everyPointerEncodingDecodes() throws Exception {
        int[] encodings = {0x00, 0x01, 0x02, 0x03, 0x04, 0x09, 0x0a, 0x0b, 0x0c, 0x10, 0x1b, 0x1c, 0x19, 0x50};
        for (int enc : encodings) {
            CfiBytes c = new CfiBytes(true).cie(1, "zR", new byte[] {(byte) enc}, 1, -8, 16, 0x0c, 7, 8, 0x90, 1);
            c.fdeEncoded(0, enc, 0x1000, 0x1200, 0x40, 0x41, 0x0e, 16);
            UnwindTable t = eh(c.bytes());
            assertEquals(Map.of(), t.stats().problems(), "encoding 0x" + Integer.toHexString(enc) + ": " + t.stats().firstProblems());
            assertEquals(RSP8, t.lookup(0x1200), "encoding 0x" + Integer.toHexString(enc));
            assertEquals(RSP16, t.lookup(0x123f), "encoding 0x" + Integer.toHexString(enc));
            assertEquals(NO_INFO, t.lookup(0x1240), "encoding 0x" + Integer.toHexString(enc));
        }
    }

    @Test
    void oldGccEhAugmentation() throws Exception {
        // version 1, "eh", an 8-byte EH data pointer, code 1, data -8, ra 16; FDE addresses are absptr
        CfiBytes.Buf body = new CfiBytes.Buf().u32(0).u8(1).u8('e').u8('h').u8(0).u64(0xdeadbeefL).uleb(1).sleb(-8).u8(16)
                .bytes(CfiBytes.bytes(0x0c, 7, 8, 0x90, 1));
        while ((body.size() + 4) % 8 != 0) {
            body.u8(0);
        }
        CfiBytes c = new CfiBytes(true).raw(le32(body.size()), body.toByteArray());
        CfiBytes.Buf fde = new CfiBytes.Buf().u32(c.offset() + 4).u64(0x1200).u64(0x40).bytes(CfiBytes.bytes(0x41, 0x0e, 16, 0));
        c.raw(le32(fde.size()), fde.toByteArray());
        UnwindTable t = eh(c.bytes());
        assertEquals(Map.of(), t.stats().problems(), t.stats().firstProblems().toString());
        assertEquals(RSP16, t.lookup(0x1201));
    }

    @Test
    void hugeAndReservedLengthsEndTheScan() throws Exception {
        for (int len : new int[] {0x7fffffff, 0xfffffff0, 0xfffffffe, 3}) {
            byte[] b = new CfiBytes(true).standardCie().raw(le32(len)).raw(new byte[16]).bytes();
            UnwindTable t = eh(b);
            assertEquals(0, t.stats().fdes());
            assertEquals(1, t.stats().skippedEntries(), Integer.toHexString(len));
            Problem want = len == 0x7fffffff ? Problem.TRUNCATED : Problem.BAD_LENGTH;
            assertEquals(Map.of(want, 1), t.stats().problems(), Integer.toHexString(len));
        }
        // 64-bit length far beyond the section
        byte[] b = new CfiBytes(true).raw(le32(0xffffffff)).raw(le32(0x10), le32(0x10)).bytes();
        assertEquals(Map.of(Problem.TRUNCATED, 1), eh(b).stats().problems());
    }

    @Test
    void cyclicOrWrongCiePointers() throws Exception {
        CfiBytes c = new CfiBytes(true).standardCie();
        int fde1 = c.offset();
        c.fde(0, 0x401000, 0x10);
        c.fde(fde1, 0x401010, 0x10); // points at an FDE, not a CIE
        int self = c.offset();
        c.fde(self, 0x401020, 0x10); // points at itself
        c.fde(-4096, 0x401030, 0x10); // points past the section's end
        UnwindTable t = eh(c.bytes());
        assertEquals(1, t.stats().fdes());
        assertEquals(Map.of(Problem.BAD_CIE_POINTER, 3), t.stats().problems());
        assertEquals(NO_INFO, t.lookup(0x401010));
    }

    @Test
    void badCieVersionAugmentationAndEncodings() throws Exception {
        byte[][] cies = {
                new CfiBytes(true).cie(2, "zR", new byte[] {3}, 1, -8, 16).bytes(), // version 2
                new CfiBytes(true).cie(1, "xR", new byte[] {3}, 1, -8, 16).bytes(), // letter without 'z'
                new CfiBytes(true).cie(1, "zR", new byte[] {0x0f}, 1, -8, 16).bytes(), // format 0xf
                new CfiBytes(true).cie(1, "zR", new byte[] {0x63}, 1, -8, 16).bytes(), // application 0x60
                new CfiBytes(true).cie(1, "zR", new byte[] {(byte) 0x9b}, 1, -8, 16).bytes(), // indirect FDE address
                new CfiBytes(true).cie(1, "zR", new byte[] {(byte) 0xff}, 1, -8, 16).bytes(), // omit
                new CfiBytes(true).cie(1, "zR", new byte[] {0x33}, 1, -8, 16).bytes(), // datarel: no base in eh_frame
                new CfiBytes(true).cie(1, "zR", new byte[] {3}, 0, -8, 16).bytes(), // code alignment 0
                new CfiBytes(true).cie(1, "zPR", new byte[] {0x1b}, 1, -8, 16).bytes(), // personality runs past data
        };
        Problem[] want = {Problem.BAD_VERSION, Problem.BAD_AUGMENTATION, Problem.BAD_POINTER_ENCODING, Problem.BAD_POINTER_ENCODING,
                Problem.BAD_POINTER_ENCODING, Problem.BAD_POINTER_ENCODING, Problem.BAD_POINTER_ENCODING, Problem.BAD_VERSION,
                Problem.TRUNCATED};
        for (int i = 0; i < cies.length; i++) {
            CfiBytes c = new CfiBytes(true).raw(cies[i]);
            c.fde(0, 0x401000, 0x10).fde(0, 0x401010, 0x10);
            UnwindTable t = eh(c.bytes());
            assertEquals(0, t.stats().fdes(), "case " + i);
            // the CIE itself and both FDEs that use it (datarel is a valid encoding, with no base only when used)
            assertEquals(Map.of(want[i], i == 6 ? 2 : 3), t.stats().problems(), "case " + i + ": " + t.stats().firstProblems());
            assertEquals(UnwindRule.NOT_COVERED, t.lookup(0x401000));
        }
    }

    @Test
    void badProgramsBecomeOneMalformedStopOverTheirRange() throws Exception {
        byte[] deep = new byte[CfaInterpreter.MAX_STATE_DEPTH + 1];
        Arrays.fill(deep, (byte) 0x0a); // remember_state x 65
        byte[][] programs = {
                deep,
                {0x0b}, // restore_state without remember_state
                {0x3f}, // unknown opcode (DW_CFA_hi_user)
                {0x2d}, // DW_CFA_GNU_window_save: SPARC only
                {0x41, 0x01, 0x00, 0x10, 0x40, 0x00}, // set_loc backwards
                {0x0f, 0x7f}, // expression block longer than the FDE
                {0x11, 0x06, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff,
                        (byte) 0xff, (byte) 0xff, 0x01}, // LEB128 longer than 10 bytes
        };
        Problem[] want = {Problem.STATE_STACK_OVERFLOW, Problem.BAD_CFA_PROGRAM, Problem.BAD_CFA_PROGRAM, Problem.BAD_CFA_PROGRAM,
                Problem.BAD_CFA_PROGRAM, Problem.TRUNCATED, Problem.BAD_CFA_PROGRAM};
        for (int i = 0; i < programs.length; i++) {
            byte[] b = new CfiBytes(true).standardCie()
                    .fde(0, 0x401000, 0x20, programs[i])
                    .fde(0, 0x401020, 0x10, 0x41, 0x0e, 16).bytes();
            UnwindTable t = eh(b);
            assertEquals(1, t.stats().malformedFdes(), "case " + i);
            assertEquals(Map.of(want[i], 1), t.stats().problems(), "case " + i + ": " + t.stats().firstProblems());
            for (long pc = 0x401000; pc < 0x401020; pc++) {
                assertEquals(MALFORMED, t.lookup(pc), "case " + i);
            }
            assertEquals(RSP16, t.lookup(0x401021), "the next FDE is intact");
        }
    }

    @Test
    void fdesOutsideTextAndOverlapsAreCountedNotMixed() throws Exception {
        byte[] b = new CfiBytes(true).standardCie()
                .fde(0, 0x401000, 0x40, 0x41, 0x0e, 16)
                .fde(0, 0x401020, 0x10, 0x41, 0x0e, 24).bytes(); // starts inside the first
        UnwindTable t = eh(b);
        assertEquals(1, t.stats().overlapping());
        assertEquals(RSP16, t.lookup(0x40101f));
        assertEquals(UnwindRule.cfa(UnwindRule.KIND_CFA_RSP, 24, 0, 0), t.lookup(0x401021));
        assertEquals(NO_INFO, t.lookup(0x401030), "after the later FDE ends, as a lookup through .eh_frame_hdr finds nothing");

        byte[] dup = new CfiBytes(true).standardCie()
                .fde(0, 0x401000, 0x10, 0x41, 0x0e, 16)
                .fde(0, 0x401000, 0x20, 0x41, 0x0e, 24).bytes(); // the same start twice: the first wins
        t = eh(dup);
        assertEquals(1, t.stats().overlapping());
        assertEquals(1, t.stats().fdes());
        assertEquals(RSP16, t.lookup(0x40100f));
        assertEquals(NO_INFO, t.lookup(0x401010));
    }

    @Test
    void elfLevelProblemsAreTyped() throws Exception {
        byte[] elf = Files.readAllBytes(Path.of("/lib/x86_64-linux-gnu/libc.so.6"));
        for (int cut : new int[] {0, 10, 63, 64, 1000, elf.length / 2, elf.length - 1}) {
            byte[] b = Arrays.copyOf(elf, cut);
            EhFrameException e = assertThrows(EhFrameException.class, () -> UnwindTableBuilder.build("cut", ByteBuffer.wrap(b)));
            assertEquals(Problem.BAD_ELF, e.problem(), e.getMessage());
        }
        Path notElf = tmp.resolve("text");
        Files.writeString(notElf, "#!/bin/sh\necho not an ELF file at all, but long enough for a header ........................\n");
        assertEquals(Problem.BAD_ELF, assertThrows(EhFrameException.class, () -> UnwindTableBuilder.build(notElf)).problem());
    }

    @Test
    void badCompressedDebugFrameIsCountedAndEhFrameStillUsed() throws Exception {
        Path prog = dev.loupe.unwinder.TestPrograms.compile(tmp, "z", DebugFrameTest.PROGRAM, "-g", "-gz",
                "-fno-asynchronous-unwind-tables");
        SectionHeader df = ElfSections.read(prog).find(".debug_frame");
        byte[] good = Files.readAllBytes(prog);
        BuildStats whole = UnwindTableBuilder.build(prog).stats();
        int ehFrameFdes = whole.fdes() - whole.debugFrameFdes();
        assertTrue(ehFrameFdes > 0 && whole.debugFrameFdes() > 0, whole.toString());
        int at = (int) df.offset();
        // {what to change, expected problem}: zstd type, corrupt stream, a size claim of 500 MiB
        Object[][] cases = {
                {(java.util.function.Consumer<byte[]>) b -> b[at] = 2, Problem.BAD_COMPRESSION},
                {(java.util.function.Consumer<byte[]>) b -> Arrays.fill(b, at + 24, at + 40, (byte) 0x5a), Problem.BAD_COMPRESSION},
                {(java.util.function.Consumer<byte[]>) b -> { b[at + 8] = 0; b[at + 9] = 0; b[at + 10] = 0; b[at + 11] = 0x1f; },
                        Problem.BAD_COMPRESSION},
        };
        for (Object[] c : cases) {
            byte[] b = good.clone();
            @SuppressWarnings("unchecked")
            java.util.function.Consumer<byte[]> change = (java.util.function.Consumer<byte[]>) c[0];
            change.accept(b);
            Path bad = tmp.resolve("bad");
            Files.write(bad, b);
            UnwindTable t = UnwindTableBuilder.build(bad);
            t.verify();
            assertEquals(Map.of(c[1], 1), t.stats().problems(), t.stats().firstProblems().toString());
            assertEquals(0, t.stats().debugFrameFdes());
            assertEquals(ehFrameFdes, t.stats().fdes(), "crt's .eh_frame FDEs all still there");
        }
    }

    static byte[] le32(int v) {
        return new byte[] {(byte) v, (byte) (v >>> 8), (byte) (v >>> 16), (byte) (v >>> 24)};
    }
}
