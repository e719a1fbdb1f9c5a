package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.TestPrograms;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Hand-picked encodings for each length rule, with their lengths as written and as objdump decodes them. */
class X86InstructionLengthTest {
    @TempDir
    Path tmp;

    /** {hex bytes, what it is}; the length is the byte count. */
    private static final String[][] CASES = {
            {"f6c001", "test al, imm8: group 3 /0 has an imm8"},
            {"f6d0", "not al: group 3 /2 has none"},
            {"f7c078563412", "test eax, imm32"},
            {"66f7c03412", "test ax, imm16 (66)"},
            {"48f7c078563412", "test rax, imm32 (REX.W keeps imm32)"},
            {"f7d8", "neg eax"},
            {"48f70578563412efbeadde", "test [rip+d32], imm32"},
            {"f6050000000001", "test byte [rip+d32], imm8"},
            {"48b88877665544332211", "mov rax, imm64"},
            {"66b83412", "mov ax, imm16"},
            {"b878563412", "mov eax, imm32"},
            {"41b878563412", "mov r8d, imm32"},
            {"a18877665544332211", "mov eax, moffs64"},
            {"67a178563412", "mov eax, moffs32 (67)"},
            {"48a38877665544332211", "mov moffs64, rax"},
            {"c3", "ret"},
            {"f3c3", "repz ret"},
            {"c20800", "ret imm16"},
            {"cb", "far ret"},
            {"ca1000", "far ret imm16"},
            {"c8100001", "enter imm16, imm8"},
            {"c5fc77", "vzeroall: VEX map 1 opcode 77 has no ModRM"},
            {"c5f877", "vzeroupper"},
            {"c4e37d18c101", "vinsertf128: VEX map 3 has an imm8"},
            {"c5f970c01b", "vpshufd: VEX map 1 opcode 70 has an imm8"},
            {"c4e27900c1", "vpshufb: VEX map 2, no imm"},
            {"c4e279f7c1", "shlx (VEX map 2)"},
            {"c4e37914c000", "vpextrb"},
            {"62f17c481000", "vmovups zmm0, [rax] (EVEX)"},
            {"62f17c48104001", "vmovups zmm0, [rax+disp8*N]"},
            {"62f37d481ec100", "vpcmpud k0, zmm0, zmm1, imm8 (EVEX map 3)"},
            {"62f27d487cc0", "vpbroadcastd zmm0, eax"},
            {"0f1f840000000000", "nopl 0x0(%rax,%rax,1)"},
            {"662e0f1f840000000000", "cs nopw"},
            {"66660f1f840000000000", "data16 nopw"},
            {"0f3a0fc108", "palignr mm, imm8 (0F3A)"},
            {"660f3a0fc108", "palignr xmm, imm8"},
            {"660f3800c1", "pshufb (0F38)"},
            {"f20f38f1c1", "crc32"},
            {"0f0b", "ud2"},
            {"0f05", "syscall"},
            {"0fa2", "cpuid"},
            {"0fc8", "bswap eax"},
            {"0f8478563412", "je rel32"},
            {"0fbae005", "bt eax, 5"},
            {"0fa4c003", "shld eax, eax, 3"},
            {"0fc2c101", "cmpps imm8"},
            {"0f7002c1", "pshufw mm0, [rdx], 0xc1"},
            {"e878563412", "call rel32"},
            {"eb00", "jmp rel8"},
            {"7000", "jo rel8"},
            {"e300", "jrcxz rel8"},
            {"81c078563412", "add eax, imm32"},
            {"6681c03412", "add ax, imm16"},
            {"83c001", "add eax, imm8"},
            {"69c078563412", "imul eax, eax, imm32"},
            {"6bc001", "imul eax, eax, imm8"},
            {"6878563412", "push imm32"},
            {"6a01", "push imm8"},
            {"c6050000000001", "mov byte [rip+d32], imm8"},
            {"c7050000000078563412", "mov dword [rip+d32], imm32"},
            {"66c70500000000c3c3", "mov word [rip+d32], imm16"},
            {"8b042578563412", "mov eax, [abs32] (SIB without base)"},
            {"8b442408", "mov eax, [rsp+8]"},
            {"8b84247856c312", "mov eax, [rsp+d32]"},
            {"8b4500", "mov eax, [rbp+0]"},
            {"f0480fb10a", "lock cmpxchg"},
            {"64488b0425f8ffffff", "mov rax, fs:[-8] (Go's g before the register ABI)"},
            {"d9ee", "fldz"},
            {"dd0578563412", "fld qword [rip+d32]"},
            {"8fc0", "pop rax via 8F /0"},
            {"4c8d3dc3c3c3c3", "lea r15, [rip+d32] with C3 bytes inside"},
            {"f30f1efa", "endbr64"},
            {"0f01d0", "xgetbv"},
            {"0faee8", "lfence"},
            {"480fc7f0", "rdrand rax"},
            {"f3480fb8c1", "popcnt rax, rcx"},
            {"a878", "test al, imm8"},
            {"a978563412", "test eax, imm32"},
            {"e460", "in al, imm8"},
            {"cd80", "int 0x80"},
            {"c1e005", "shl eax, 5"},
            {"d1e0", "shl eax, 1"},
            {"90", "nop"},
            {"cc", "int3"},
    };

    @Test
    void everyRuleAgreesWithItsLengthAndWithObjdump() throws Exception {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (String[] c : CASES) {
            byte[] b = HexFormat.of().parseHex(c[0]);
            assertEquals(b.length, X86InstructionLength.length(b, 0, b.length), c[1] + " (" + c[0] + ")");
            // Cut short by one byte, it does not decode.
            assertEquals(-1, X86InstructionLength.length(b, 0, b.length - 1), c[1] + " truncated");
            all.writeBytes(b);
        }
        Path raw = tmp.resolve("cases.bin");
        Files.write(raw, all.toByteArray());
        String out = TestPrograms.run(List.of("objdump", "-D", "-b", "binary", "-m", "i386:x86-64", "-w", "--insn-width=16", raw.toString()));
        List<Integer> objdump = new ArrayList<>();
        for (String line : out.split("\n")) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("^\\s*[0-9a-f]+:\\t((?:[0-9a-f]{2} )+)").matcher(line);
            if (m.find()) {
                objdump.add(m.group(1).length() / 3);
            }
        }
        List<Integer> expected = new ArrayList<>();
        for (String[] c : CASES) {
            expected.add(c[0].length() / 2);
        }
        assertEquals(expected, objdump);
    }

    @Test
    void returnsAreFoundOnlyAtInstructionStarts() {
        // lea r15,[rip+0xc3c3c3c3]; mov word [rip], 0xc3c3; repz ret; ret 8; nop; ret
        byte[] code = HexFormat.of().parseHex("4c8d3dc3c3c3c3" + "66c70500000000c3c3" + "f3c3" + "c20800" + "90" + "c3");
        ReturnFinder.Returns r = ReturnFinder.find(code, 0, code.length);
        assertArrayEquals(new int[] {16, 18, 22}, r.returnOffsets());
        assertEquals(6, r.instructions());
        assertTrue(r.probeable());
        ReturnFinder.Returns tail = ReturnFinder.find(HexFormat.of().parseHex("4883ec08e900000000"), 0, 9);
        assertTrue(tail.problem().orElseThrow().contains("no return instruction"), tail.toString());
        ReturnFinder.Returns cut = ReturnFinder.find(HexFormat.of().parseHex("c348b8"), 0, 3);
        assertTrue(cut.problem().orElseThrow().contains("runs past the function's end"), cut.toString());
    }

    @Test
    void randomBytesAlwaysDecodeToAPlausibleLength() {
        Random rnd = new Random(7);
        byte[] b = new byte[64];
        for (int i = 0; i < 200_000; i++) {
            rnd.nextBytes(b);
            int lim = 1 + rnd.nextInt(b.length);
            int len = X86InstructionLength.length(b, 0, lim);
            assertTrue(len == -1 || (len >= 1 && len <= Math.min(lim, 15)), "length " + len);
        }
        assertNull(X86InstructionLength.decode(new byte[0], 0, 0));
        // 15 prefixes and no opcode: longer than the architectural limit.
        byte[] prefixes = HexFormat.of().parseHex("66666666666666666666666666666690");
        assertEquals(-1, X86InstructionLength.length(prefixes, 0, prefixes.length));
    }
}
