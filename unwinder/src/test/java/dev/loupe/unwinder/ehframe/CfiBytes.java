package dev.loupe.unwinder.ehframe;

import java.io.ByteArrayOutputStream;

/** Assembles small .eh_frame / .debug_frame sections byte by byte, for tests of exact and malformed input. */
final class CfiBytes {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final boolean eh;

    CfiBytes(boolean eh) {
        this.eh = eh;
    }

    int offset() {
        return out.size();
    }

    /** A CIE; for eh_frame with augmentation "zR" and FDE encoding udata4 (absolute 4-byte addresses). */
    CfiBytes cie(int version, String augmentation, byte[] augData, int codeAlign, int dataAlign, int ra, int... instr) {
        Buf b = new Buf();
        b.u32(eh ? 0 : 0xffffffff);
        b.u8(version);
        for (char c : augmentation.toCharArray()) {
            b.u8(c);
        }
        b.u8(0);
        if (version == 4) {
            b.u8(8).u8(0);
        }
        b.uleb(codeAlign).sleb(dataAlign);
        if (version == 1) {
            b.u8(ra);
        } else {
            b.uleb(ra);
        }
        if (augmentation.startsWith("z")) {
            b.uleb(augData.length).bytes(augData);
        }
        b.bytes(bytes(instr));
        entry(b);
        return this;
    }

    static byte[] bytes(int... v) {
        byte[] b = new byte[v.length];
        for (int i = 0; i < v.length; i++) {
            b[i] = (byte) v[i];
        }
        return b;
    }

    CfiBytes fde(int cieOffset, long pcBegin, long range, int... instr) {
        return fde(cieOffset, pcBegin, range, bytes(instr));
    }

    /** The usual x86-64 CIE: "zR" udata4, code 1, data -8, ra 16, CFA = rsp+8, ra at cfa-8. */
    CfiBytes standardCie() {
        return eh ? cie(1, "zR", new byte[] {0x03}, 1, -8, 16, 0x0c, 7, 8, 0x90, 1)
                : cie(1, "", new byte[0], 1, -8, 16, 0x0c, 7, 8, 0x90, 1);
    }

    /** An FDE using the CIE at {@code cieOffset}; addresses udata4 (eh_frame) or 8 bytes (debug_frame). */
    CfiBytes fde(int cieOffset, long pcBegin, long range, byte[] instr) {
        Buf b = new Buf();
        int idPos = out.size() + 4;
        b.u32(eh ? idPos - cieOffset : cieOffset);
        if (eh) {
            b.u32((int) pcBegin).u32((int) range).uleb(0);
        } else {
            b.u64(pcBegin).u64(range);
        }
        b.bytes(instr);
        entry(b);
        return this;
    }

    /**
     * An eh_frame FDE whose addresses use DW_EH_PE encoding {@code enc} (as its CIE's 'R' says); pcrel
     * values are relative to their own address in a section loaded at {@code sectionAddress}.
     */
    CfiBytes fdeEncoded(int cieOffset, int enc, long sectionAddress, long pcBegin, long range, int... instr) {
        Buf b = new Buf();
        int start = out.size();
        b.u32(start + 4 - cieOffset);
        int lenField = 4; // the length word comes before the body
        long at = sectionAddress + start + lenField + b.size();
        if ((enc & 0x70) == 0x50) { // aligned: pad to 8 first
            while ((start + lenField + b.size()) % 8 != 0) {
                b.u8(0);
            }
            at = sectionAddress + start + lenField + b.size();
        }
        encode(b, enc, (enc & 0x70) == 0x10 ? pcBegin - at : pcBegin);
        encode(b, enc & 0x0f, range);
        b.uleb(0);
        b.bytes(bytes(instr));
        entry(b);
        return this;
    }

    private static void encode(Buf b, int enc, long v) {
        switch (enc & 0x0f) {
            case 0x00, 0x04, 0x0c -> b.u64(v);
            case 0x01 -> b.uleb(v);
            case 0x02, 0x0a -> b.u8((int) v & 0xff).u8((int) (v >>> 8) & 0xff);
            case 0x03, 0x0b -> b.u32((int) v);
            case 0x09 -> b.sleb(v);
            default -> throw new IllegalArgumentException("encoding " + enc);
        }
    }

    CfiBytes raw(byte[]... parts) {
        for (byte[] p : parts) {
            out.writeBytes(p);
        }
        return this;
    }

    byte[] bytes() {
        return out.toByteArray();
    }

    private void entry(Buf body) {
        while ((body.size() + 4) % 8 != 0) {
            body.u8(0); // DW_CFA_nop padding
        }
        Buf len = new Buf().u32(body.size());
        out.writeBytes(len.toByteArray());
        out.writeBytes(body.toByteArray());
    }

    static final class Buf extends ByteArrayOutputStream {
        Buf u8(int v) {
            write(v);
            return this;
        }

        Buf u32(int v) {
            for (int i = 0; i < 4; i++) {
                write(v >>> (8 * i));
            }
            return this;
        }

        Buf u64(long v) {
            for (int i = 0; i < 8; i++) {
                write((int) (v >>> (8 * i)));
            }
            return this;
        }

        Buf uleb(long v) {
            do {
                int b = (int) (v & 0x7f);
                v >>>= 7;
                write(v != 0 ? b | 0x80 : b);
            } while (v != 0);
            return this;
        }

        Buf sleb(long v) {
            while (true) {
                int b = (int) (v & 0x7f);
                v >>= 7;
                if ((v == 0 && (b & 0x40) == 0) || (v == -1 && (b & 0x40) != 0)) {
                    write(b);
                    return this;
                }
                write(b | 0x80);
            }
        }

        Buf bytes(byte[] b) {
            writeBytes(b);
            return this;
        }
    }
}
