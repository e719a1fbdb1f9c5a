package dev.loupe.unwinder.golang;

/**
 * Lengths of x86-64 (64-bit mode) instructions, decoded from their encoding: legacy prefixes, REX,
 * VEX (C4/C5), EVEX (62), XOP (8F with map ≥ 8), the one-byte map and the 0F, 0F38 and 0F3A maps, ModRM,
 * SIB, displacement and immediate rules. Only the length is decoded, not the operation; an invalid
 * opcode counts as one byte (as objdump's "(bad)" does for those it meets in code).
 *
 * <p>Why a decoder and not a byte search: a RET opcode (C3) appears inside other instructions' ModRM,
 * displacement and immediate bytes, and a uprobe placed mid-instruction corrupts the target.
 */
public final class X86InstructionLength {
    /** The architectural limit: a longer instruction is #GP, so decoding stops there. */
    public static final int MAX_LENGTH = 15;

    /** The decoded shape of one instruction. */
    public record Instruction(int length, int map, int opcode, boolean vex) {
        /** Map 0 is the one-byte map; 1 = 0F, 2 = 0F38, 3 = 0F3A (also the VEX/EVEX map numbers). */
        public boolean isReturn() {
            return !vex && map == 0 && (opcode == 0xC3 || opcode == 0xC2 || opcode == 0xCB || opcode == 0xCA);
        }
    }

    // One-byte map: has a ModRM byte.
    private static final boolean[] MODRM1 = new boolean[256];
    // One-byte map: immediate kind.
    private static final byte[] IMM1 = new byte[256];
    // 0F map: has a ModRM byte / has an imm8 (rel32 for Jcc handled apart).
    private static final boolean[] MODRM2 = new boolean[256];
    private static final boolean[] IMM8_2 = new boolean[256];

    private static final byte NONE = 0;
    private static final byte I8 = 1;
    private static final byte I16 = 2;
    private static final byte IZ = 3; // 16 with 66, else 32
    private static final byte IV = 4; // MOV r, imm: 64 with REX.W
    private static final byte I16_8 = 5; // ENTER
    private static final byte MOFFS = 6; // 8 bytes (4 with 67)
    private static final byte GROUP3 = 7; // F6/F7: imm only for /0 and /1

    static {
        for (int op = 0; op < 0x40; op++) {
            int lo = op & 7;
            if (lo < 4) {
                MODRM1[op] = true;
            } else if (lo == 4) {
                IMM1[op] = I8;
            } else if (lo == 5) {
                IMM1[op] = IZ;
            }
        }
        IMM1[0x0F] = NONE; // escape
        for (int op : new int[] {0x62, 0x63, 0x69, 0x6B, 0xC0, 0xC1, 0xC4, 0xC5, 0xC6, 0xC7, 0xD0, 0xD1, 0xD2, 0xD3, 0xF6, 0xF7,
                0xFE, 0xFF}) {
            MODRM1[op] = true;
        }
        for (int op = 0x80; op <= 0x8F; op++) {
            MODRM1[op] = true;
        }
        for (int op = 0xD8; op <= 0xDF; op++) {
            MODRM1[op] = true;
        }
        IMM1[0x68] = IZ;
        IMM1[0x69] = IZ;
        IMM1[0x6A] = I8;
        IMM1[0x6B] = I8;
        for (int op = 0x70; op <= 0x7F; op++) {
            IMM1[op] = I8; // Jcc rel8
        }
        IMM1[0x80] = I8;
        IMM1[0x81] = IZ;
        IMM1[0x82] = I8; // invalid in 64-bit mode, decoded as in 32-bit
        IMM1[0x83] = I8;
        for (int op = 0xA0; op <= 0xA3; op++) {
            IMM1[op] = MOFFS;
        }
        IMM1[0xA8] = I8;
        IMM1[0xA9] = IZ;
        for (int op = 0xB0; op <= 0xB7; op++) {
            IMM1[op] = I8;
        }
        for (int op = 0xB8; op <= 0xBF; op++) {
            IMM1[op] = IV;
        }
        IMM1[0xC0] = I8;
        IMM1[0xC1] = I8;
        IMM1[0xC2] = I16;
        IMM1[0xC6] = I8;
        IMM1[0xC7] = IZ;
        IMM1[0xC8] = I16_8;
        IMM1[0xCA] = I16;
        IMM1[0xCD] = I8;
        IMM1[0xD4] = I8; // invalid in 64-bit mode
        IMM1[0xD5] = I8;
        for (int op = 0xE0; op <= 0xE7; op++) {
            IMM1[op] = I8; // loop/jrcxz rel8, in/out imm8
        }
        IMM1[0xE8] = IZ; // call rel32 (66 is ignored by Intel in 64-bit mode; see below)
        IMM1[0xE9] = IZ;
        IMM1[0xEB] = I8;
        IMM1[0xF6] = GROUP3;
        IMM1[0xF7] = GROUP3;

        // 0F map: ModRM everywhere except these.
        for (int op = 0; op < 256; op++) {
            MODRM2[op] = true;
        }
        for (int op : new int[] {0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0E, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35,
                0x36, 0x37, 0x77, 0xA0, 0xA1, 0xA2, 0xA8, 0xA9, 0xAA}) {
            MODRM2[op] = false;
        }
        for (int op = 0x80; op <= 0x8F; op++) {
            MODRM2[op] = false; // Jcc rel32
        }
        for (int op = 0xC8; op <= 0xCF; op++) {
            MODRM2[op] = false; // BSWAP
        }
        for (int op : new int[] {0x70, 0x71, 0x72, 0x73, 0xA4, 0xAC, 0xBA, 0xC2, 0xC4, 0xC5, 0xC6, 0x0F}) {
            IMM8_2[op] = true; // 0F 0F is 3DNow! (ModRM, then an imm8 that selects the operation)
        }
    }

    private X86InstructionLength() {}

    /**
     * The length of the instruction at {@code code[pos]}, at most {@code limit - pos}; -1 if the bytes
     * end before it does or it is longer than 15 bytes.
     */
    public static int length(byte[] code, int pos, int limit) {
        Instruction i = decode(code, pos, limit);
        return i == null ? -1 : i.length();
    }

    /** The instruction at {@code code[pos]}, or null if the bytes up to {@code limit} end inside it. */
    public static Instruction decode(byte[] code, int pos, int limit) {
        if (pos < 0 || limit > code.length || pos >= limit) {
            return null;
        }
        int end = Math.min(limit, pos + MAX_LENGTH);
        int p = pos;
        boolean opsize16 = false;
        boolean addr32 = false;
        int rex = 0;
        // Legacy prefixes, any order; a REX only counts when the opcode follows it directly.
        while (true) {
            if (p >= end) {
                return null;
            }
            int b = code[p] & 0xff;
            if (b == 0x66) {
                opsize16 = true;
            } else if (b == 0x67) {
                addr32 = true;
            } else if (b == 0xF0 || b == 0xF2 || b == 0xF3 || b == 0x2E || b == 0x36 || b == 0x3E || b == 0x26 || b == 0x64
                    || b == 0x65) {
                // lock/rep/segment: no effect on length
            } else if ((b & 0xF0) == 0x40) {
                rex = b;
                p++;
                if (p >= end) {
                    return null;
                }
                int next = code[p] & 0xff;
                if (isLegacyPrefix(next) || (next & 0xF0) == 0x40) {
                    rex = 0; // a prefix after REX cancels it
                    continue;
                }
                break;
            } else {
                break;
            }
            p++;
        }
        boolean rexW = (rex & 8) != 0;
        int op = code[p] & 0xff;
        p++;
        switch (op) {
            case 0xC5: { // VEX, 2 bytes: map 0F
                if (p + 2 > end) {
                    return null;
                }
                int opc = code[p + 1] & 0xff;
                return vexTail(code, p + 2, end, pos, 1, opc);
            }
            case 0xC4: { // VEX, 3 bytes
                if (p + 3 > end) {
                    return null;
                }
                int map = code[p] & 0x1F;
                int opc = code[p + 2] & 0xff;
                return vexTail(code, p + 3, end, pos, map, opc);
            }
            case 0x62: { // EVEX (BOUND is invalid in 64-bit mode)
                if (p + 4 > end) {
                    return null;
                }
                int map = code[p] & 0x07;
                int opc = code[p + 3] & 0xff;
                return vexTail(code, p + 4, end, pos, map, opc);
            }
            case 0x8F: { // XOP when the map field is >= 8, else POP r/m
                if (p >= end) {
                    return null;
                }
                int map = code[p] & 0x1F;
                if (map >= 8) {
                    if (p + 3 > end) {
                        return null;
                    }
                    int opc = code[p + 2] & 0xff;
                    int q = modrm(code, p + 3, end);
                    if (q < 0) {
                        return null;
                    }
                    int imm = map == 8 ? 1 : map == 0x0A ? 4 : 0;
                    return finish(q + imm, end, pos, 0x80 | map, opc, true);
                }
                break;
            }
            case 0x0F:
                return twoByte(code, p, end, pos);
            default:
                break;
        }
        if (MODRM1[op]) {
            int modrmAt = p;
            p = modrm(code, p, end);
            if (p < 0) {
                return null;
            }
            if (IMM1[op] == GROUP3) {
                int reg = (code[modrmAt] >> 3) & 7;
                if (reg <= 1) {
                    p += op == 0xF6 ? 1 : (opsize16 && !rexW ? 2 : 4);
                }
                return finish(p, end, pos, 0, op, false);
            }
        }
        p += switch (IMM1[op]) {
            case I8 -> 1;
            case I16 -> 2;
            case IZ -> (op == 0xE8 || op == 0xE9) ? 4 : (opsize16 && !rexW ? 2 : 4);
            case IV -> rexW ? 8 : opsize16 ? 2 : 4;
            case I16_8 -> 3;
            case MOFFS -> addr32 ? 4 : 8;
            default -> 0;
        };
        return finish(p, end, pos, 0, op, false);
    }

    private static boolean isLegacyPrefix(int b) {
        return b == 0x66 || b == 0x67 || b == 0xF0 || b == 0xF2 || b == 0xF3 || b == 0x2E || b == 0x36 || b == 0x3E || b == 0x26
                || b == 0x64 || b == 0x65;
    }

    private static Instruction twoByte(byte[] code, int p, int end, int pos) {
        if (p >= end) {
            return null;
        }
        int op = code[p++] & 0xff;
        if (op == 0x38 || op == 0x3A) {
            if (p >= end) {
                return null;
            }
            int opc = code[p++] & 0xff;
            p = modrm(code, p, end);
            if (p < 0) {
                return null;
            }
            return finish(p + (op == 0x3A ? 1 : 0), end, pos, op == 0x38 ? 2 : 3, opc, false);
        }
        if (op >= 0x80 && op <= 0x8F) {
            return finish(p + 4, end, pos, 1, op, false); // Jcc rel32
        }
        if (MODRM2[op]) {
            p = modrm(code, p, end);
            if (p < 0) {
                return null;
            }
        }
        if (IMM8_2[op]) {
            p++;
        }
        return finish(p, end, pos, 1, op, false);
    }

    /** After the VEX/EVEX payload and opcode byte: ModRM (except VZEROUPPER/ALL), then imm8 by map. */
    private static Instruction vexTail(byte[] code, int p, int end, int pos, int map, int opc) {
        if (!(map == 1 && opc == 0x77)) {
            p = modrm(code, p, end);
            if (p < 0) {
                return null;
            }
        }
        boolean imm8 = map == 3 || (map == 1 && ((opc >= 0x70 && opc <= 0x73) || opc == 0xC2 || (opc >= 0xC4 && opc <= 0xC6)));
        return finish(p + (imm8 ? 1 : 0), end, pos, map, opc, true);
    }

    /** Skips ModRM, SIB and displacement at {@code p}; the position after them, or -1 if cut off. */
    private static int modrm(byte[] code, int p, int end) {
        if (p >= end) {
            return -1;
        }
        int m = code[p++] & 0xff;
        int mod = m >> 6;
        int rm = m & 7;
        if (mod == 3) {
            return p;
        }
        if (rm == 4) { // SIB
            if (p >= end) {
                return -1;
            }
            int sib = code[p++] & 0xff;
            if (mod == 0 && (sib & 7) == 5) {
                p += 4; // no base: disp32
            }
        } else if (mod == 0 && rm == 5) {
            p += 4; // RIP-relative disp32
        }
        if (mod == 1) {
            p += 1;
        } else if (mod == 2) {
            p += 4;
        }
        return p <= end ? p : -1;
    }

    private static Instruction finish(int p, int end, int pos, int map, int opcode, boolean vex) {
        if (p > end) {
            return null;
        }
        return new Instruction(p - pos, map, opcode, vex);
    }
}
