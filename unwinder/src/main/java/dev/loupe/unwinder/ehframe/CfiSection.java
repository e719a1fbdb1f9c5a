package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.ehframe.EhFrameException.Problem;

import java.util.HashMap;
import java.util.Map;

/**
 * One {@code .eh_frame} or {@code .debug_frame} section: its entries (CIEs and FDEs) decoded on demand.
 *
 * <p>The two sections differ in small ways that all live here: the CIE id (0 in eh_frame; 0xffffffff, or
 * all ones in the 64-bit form, in debug_frame), the CIE pointer (relative to the pointer's own position
 * in eh_frame; an offset from the section start in debug_frame), and addresses (DW_EH_PE_* encoded per
 * the CIE's 'R' augmentation in eh_frame; plain address-size values in debug_frame). Every read is
 * bounded by its entry, so a corrupt length or count ends in {@link EhFrameException}, never a read past
 * the section or a loop that does not advance.
 */
final class CfiSection {
    // DW_EH_PE_* (LSB 4.1, "DWARF Extensions")
    static final int PE_ABSPTR = 0x00, PE_ULEB128 = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03, PE_UDATA8 = 0x04;
    static final int PE_SLEB128 = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c;
    static final int PE_PCREL = 0x10, PE_TEXTREL = 0x20, PE_DATAREL = 0x30, PE_FUNCREL = 0x40, PE_ALIGNED = 0x50;
    static final int PE_INDIRECT = 0x80, PE_OMIT = 0xff;
    /** Entries longer than this are corrupt (the largest real FDEs are a few KiB). */
    private static final long MAX_ENTRY = 16 << 20;

    /** A decoded CIE. The interpreter caches its initial state here. */
    static final class Cie {
        final long offset;
        int version;
        String augmentation;
        long codeAlign;
        long dataAlign;
        int raRegister;
        int fdeEncoding = PE_ABSPTR;
        int lsdaEncoding = PE_OMIT;
        boolean hasAugmentationData; // 'z'
        boolean signalFrame; // 'S'
        int addressSize = 8;
        int initialStart;
        int initialEnd;
        CfaInterpreter.State initialState; // set by the interpreter on first use
        EhFrameException initialError; // or why the initial instructions failed

        Cie(long offset) {
            this.offset = offset;
        }
    }

    /** A decoded FDE header: where its program is and the PC range it covers. */
    record Fde(int offset, Cie cie, long pcBegin, long pcEnd, int instructionStart, int instructionEnd) {}

    /** Receives each FDE, or the problem that made an entry unreadable. */
    interface Visitor {
        void fde(Fde fde);

        /** An entry that was skipped; scanning goes on with the next entry. */
        void skipped(int offset, EhFrameException problem);
    }

    final String name;
    final byte[] data;
    final boolean eh;
    /** The virtual address of data[0] (sh_addr), for DW_EH_PE_pcrel. */
    final long address;
    private final Map<Long, Cie> cies = new HashMap<>();
    /** CIEs that failed, so that many FDEs naming one bad CIE cost one decode, not one each. */
    private final Map<Long, EhFrameException> badCies = new HashMap<>();

    CfiSection(String name, byte[] data, boolean eh, long address) {
        this.name = name;
        this.data = data;
        this.eh = eh;
        this.address = address;
    }

    int size() {
        return data.length;
    }

    /**
     * Visits every FDE in section order. An FDE with a bad CIE or bad pointers is reported and skipped;
     * a bad entry length ends the scan (nothing after it can be found), reported as one skipped entry.
     */
    void scan(Visitor visitor) {
        int pos = 0;
        while (pos < data.length) {
            int start = pos;
            long end;
            int idPos;
            int offsetSize;
            try {
                if (data.length - pos < 4) {
                    throw error(Problem.TRUNCATED, start, "entry length truncated");
                }
                long len = u32(pos) & 0xffffffffL;
                pos += 4;
                offsetSize = 4;
                if (len == 0xffffffffL) {
                    if (data.length - pos < 8) {
                        throw error(Problem.TRUNCATED, start, "64-bit entry length truncated");
                    }
                    len = u64(pos);
                    pos += 8;
                    offsetSize = 8;
                } else if (len >= 0xfffffff0L) {
                    throw error(Problem.BAD_LENGTH, start, "reserved entry length 0x" + Long.toHexString(len));
                }
                if (len == 0) {
                    // eh_frame's terminator (or padding): nothing to decode here; the next word may start more entries.
                    continue;
                }
                if (len < 0 || len > MAX_ENTRY || len > data.length - pos) {
                    throw error(Problem.TRUNCATED, start, "entry length " + Long.toUnsignedString(len) + " runs past the section end ("
                            + (data.length - pos) + " bytes left)");
                }
                if (len < offsetSize) {
                    throw error(Problem.BAD_LENGTH, start, "entry length " + len + " shorter than its CIE id");
                }
                end = pos + len;
                idPos = pos;
            } catch (EhFrameException e) {
                visitor.skipped(start, e);
                return;
            }
            pos = (int) end;
            try {
                long id = offsetSize == 4 ? u32(idPos) & 0xffffffffL : u64(idPos);
                if (isCieId(id, offsetSize)) {
                    cie(start); // decoded once, reported through the FDEs that use it
                    continue;
                }
                long ciePos = eh ? idPos - id : id;
                if (eh && (id > idPos)) {
                    throw error(Problem.BAD_CIE_POINTER, start, "CIE pointer " + id + " points before the section");
                }
                Cie cie = cie(ciePos);
                visitor.fde(fde(start, idPos + offsetSize, (int) end, cie));
            } catch (EhFrameException e) {
                visitor.skipped(start, e);
            }
        }
    }

    /** Decodes the FDE at {@code offset} (e.g. one found through .eh_frame_hdr). */
    Fde fdeAt(long offset) throws EhFrameException {
        if (offset < 0 || offset > data.length - 8) {
            throw error(Problem.TRUNCATED, offset, "FDE offset outside the section");
        }
        int start = (int) offset;
        long len = u32(start) & 0xffffffffL;
        int pos = start + 4;
        int offsetSize = 4;
        if (len == 0xffffffffL) {
            if (data.length - pos < 8) {
                throw error(Problem.TRUNCATED, start, "64-bit entry length truncated");
            }
            len = u64(pos);
            pos += 8;
            offsetSize = 8;
        }
        if (len < offsetSize || len > MAX_ENTRY || len > data.length - pos) {
            throw error(Problem.BAD_LENGTH, start, "bad FDE length " + Long.toUnsignedString(len));
        }
        long id = offsetSize == 4 ? u32(pos) & 0xffffffffL : u64(pos);
        if (isCieId(id, offsetSize)) {
            throw error(Problem.BAD_CIE_POINTER, start, "entry is a CIE, not an FDE");
        }
        if (eh && id > pos) {
            throw error(Problem.BAD_CIE_POINTER, start, "CIE pointer points before the section");
        }
        return fde(start, pos + offsetSize, (int) (pos + len), cie(eh ? pos - id : id));
    }

    private boolean isCieId(long id, int offsetSize) {
        if (eh) {
            return id == 0;
        }
        return offsetSize == 4 ? id == 0xffffffffL : id == -1L;
    }

    private Fde fde(int start, int pos, int end, Cie cie) throws EhFrameException {
        Cursor c = new Cursor(pos, end);
        long pcBegin;
        long range;
        if (eh) {
            pcBegin = readEncoded(c, cie.fdeEncoding, start, "FDE initial location");
            range = readEncoded(c, cie.fdeEncoding & 0x0f, start, "FDE address range");
        } else {
            pcBegin = readAddress(c, cie.addressSize, start);
            range = readAddress(c, cie.addressSize, start);
        }
        if (cie.hasAugmentationData) {
            long augLen = c.uleb(this, start);
            c.skip(augLen, this, start, "FDE augmentation data");
        }
        long pcEnd = pcBegin + range;
        if (Long.compareUnsigned(pcEnd, pcBegin) < 0) {
            throw error(Problem.BAD_LENGTH, start, "FDE range wraps around the address space");
        }
        return new Fde(start, cie, pcBegin, pcEnd, c.pos, end);
    }

    private long readAddress(Cursor c, int size, int entry) throws EhFrameException {
        return switch (size) {
            case 8 -> {
                c.need(8, this, entry);
                long v = u64(c.pos);
                c.pos += 8;
                yield v;
            }
            case 4 -> {
                c.need(4, this, entry);
                long v = u32(c.pos) & 0xffffffffL;
                c.pos += 4;
                yield v;
            }
            default -> throw error(Problem.BAD_VERSION, entry, "address size " + size);
        };
    }

    /** The CIE at {@code offset}, decoded once (a failure too). */
    Cie cie(long offset) throws EhFrameException {
        Cie cached = cies.get(offset);
        if (cached != null) {
            return cached;
        }
        EhFrameException bad = badCies.get(offset);
        if (bad != null) {
            throw new EhFrameException(bad.problem(), bad.getMessage());
        }
        try {
            Cie c = decodeCie(offset);
            cies.put(offset, c);
            return c;
        } catch (EhFrameException e) {
            badCies.put(offset, e);
            throw e;
        }
    }

    private Cie decodeCie(long offset) throws EhFrameException {
        if (offset < 0 || offset > data.length - 4) {
            throw error(Problem.BAD_CIE_POINTER, offset, "CIE pointer outside the section");
        }
        int start = (int) offset;
        long len = u32(start) & 0xffffffffL;
        int pos = start + 4;
        int offsetSize = 4;
        if (len == 0xffffffffL) {
            if (data.length - pos < 8) {
                throw error(Problem.TRUNCATED, start, "64-bit CIE length truncated");
            }
            len = u64(pos);
            pos += 8;
            offsetSize = 8;
        }
        if (len < offsetSize + 1 || len > MAX_ENTRY || len > data.length - pos) {
            throw error(Problem.BAD_CIE_POINTER, start, "no CIE here (length " + Long.toUnsignedString(len) + ")");
        }
        int end = (int) (pos + len);
        long id = offsetSize == 4 ? u32(pos) & 0xffffffffL : u64(pos);
        if (!isCieId(id, offsetSize)) {
            throw error(Problem.BAD_CIE_POINTER, start, "entry is not a CIE (id 0x" + Long.toHexString(id) + ")");
        }
        Cursor c = new Cursor(pos + offsetSize, end);
        Cie cie = new Cie(offset);
        c.need(1, this, start);
        cie.version = data[c.pos++] & 0xff;
        if (cie.version != 1 && cie.version != 3 && cie.version != 4) {
            throw error(Problem.BAD_VERSION, start, "CIE version " + cie.version);
        }
        int augStart = c.pos;
        while (true) {
            c.need(1, this, start);
            if (data[c.pos++] == 0) {
                break;
            }
        }
        String aug = new String(data, augStart, c.pos - 1 - augStart, java.nio.charset.StandardCharsets.ISO_8859_1);
        cie.augmentation = aug;
        int augIndex = 0;
        if (aug.startsWith("eh")) {
            // Old GCC: an address-size pointer to exception data follows the string.
            c.skip(8, this, start, "'eh' augmentation pointer");
            augIndex = 2;
        }
        if (cie.version == 4) {
            c.need(2, this, start);
            cie.addressSize = data[c.pos++] & 0xff;
            int segmentSize = data[c.pos++] & 0xff;
            if (cie.addressSize != 8 && cie.addressSize != 4 || segmentSize != 0) {
                throw error(Problem.BAD_VERSION, start, "address size " + cie.addressSize + ", segment selector size " + segmentSize);
            }
        }
        cie.codeAlign = c.uleb(this, start);
        cie.dataAlign = c.sleb(this, start);
        if (cie.codeAlign < 1 || cie.codeAlign > 1 << 16 || cie.dataAlign == 0 || Math.abs(cie.dataAlign) > 1 << 16) {
            throw error(Problem.BAD_VERSION, start, "alignment factors out of range (code " + Long.toUnsignedString(cie.codeAlign)
                    + ", data " + cie.dataAlign + ")");
        }
        if (cie.version == 1) {
            c.need(1, this, start);
            cie.raRegister = data[c.pos++] & 0xff;
        } else {
            long ra = c.uleb(this, start);
            if (ra < 0 || ra > 0xffff) {
                throw error(Problem.BAD_VERSION, start, "return address register " + Long.toUnsignedString(ra));
            }
            cie.raRegister = (int) ra;
        }
        if (augIndex < aug.length()) {
            if (aug.charAt(augIndex) != 'z') {
                throw error(Problem.BAD_AUGMENTATION, start, "augmentation \"" + printable(aug) + "\" cannot be parsed without 'z'");
            }
            cie.hasAugmentationData = true;
            long augLen = c.uleb(this, start);
            if (augLen < 0 || augLen > c.end - c.pos) {
                throw error(Problem.TRUNCATED, start, "augmentation data length " + Long.toUnsignedString(augLen) + " runs past the CIE");
            }
            int augEnd = c.pos + (int) augLen;
            Cursor a = new Cursor(c.pos, augEnd);
            scanLetters:
            for (int i = augIndex + 1; i < aug.length(); i++) {
                switch (aug.charAt(i)) {
                    case 'L' -> {
                        a.need(1, this, start);
                        cie.lsdaEncoding = checkEncoding(data[a.pos++] & 0xff, start, "LSDA", true);
                    }
                    case 'P' -> {
                        a.need(1, this, start);
                        int enc = checkEncoding(data[a.pos++] & 0xff, start, "personality", false);
                        readEncoded(a, enc, start, "personality pointer"); // indirect: a GOT slot; not needed here
                    }
                    case 'R' -> {
                        a.need(1, this, start);
                        int enc = checkEncoding(data[a.pos++] & 0xff, start, "FDE", false);
                        if ((enc & PE_INDIRECT) != 0) {
                            throw error(Problem.BAD_POINTER_ENCODING, start, "FDE address encoding 0x" + Integer.toHexString(enc) + " is indirect");
                        }
                        cie.fdeEncoding = enc;
                    }
                    case 'S' -> cie.signalFrame = true;
                    case 'B', 'G' -> { } // AArch64 BTI / MTE markers: no data
                    default -> {
                        break scanLetters; // unknown: 'z' lets us skip the rest of the data
                    }
                }
            }
            c.pos = augEnd;
        }
        cie.initialStart = c.pos;
        cie.initialEnd = end;
        return cie;
    }

    private int checkEncoding(int enc, long entry, String what, boolean omitAllowed) throws EhFrameException {
        if (enc == PE_OMIT) {
            if (omitAllowed) {
                return enc;
            }
            throw error(Problem.BAD_POINTER_ENCODING, entry, what + " encoding is DW_EH_PE_omit");
        }
        int format = enc & 0x0f;
        int app = enc & 0x70;
        boolean formatOk = format <= PE_UDATA8 || (format >= PE_SLEB128 && format <= PE_SDATA8);
        boolean appOk = app == 0 || app == PE_PCREL || app == PE_DATAREL || app == PE_ALIGNED || app == PE_TEXTREL || app == PE_FUNCREL;
        if (!formatOk || !appOk) {
            throw error(Problem.BAD_POINTER_ENCODING, entry, what + " encoding 0x" + Integer.toHexString(enc) + " is invalid");
        }
        return enc;
    }

    /**
     * Reads a DW_EH_PE_* encoded pointer at the cursor. pcrel is relative to the value's own address;
     * aligned rounds the position up to 8 first. datarel, textrel and funcrel have no base in a
     * x86-64 eh_frame (GCC and LLVM never emit them there), so they are errors rather than guesses.
     * DW_EH_PE_indirect values are returned as the address of the pointer (they are never dereferenced here).
     */
    long readEncoded(Cursor c, int enc, long entry, String what) throws EhFrameException {
        if (enc == PE_OMIT) {
            throw error(Problem.BAD_POINTER_ENCODING, entry, what + ": encoding DW_EH_PE_omit");
        }
        int app = enc & 0x70;
        if (app == PE_ALIGNED) {
            int aligned = (c.pos + 7) & ~7;
            c.skip(aligned - c.pos, this, entry, what);
        }
        long fieldAddress = address + c.pos;
        long v = readFormat(c, enc & 0x0f, entry, what, enc);
        return switch (app) {
            case 0, PE_ALIGNED -> v;
            case PE_PCREL -> v + fieldAddress;
            default -> throw error(Problem.BAD_POINTER_ENCODING, entry, what + ": encoding 0x" + Integer.toHexString(enc)
                    + " has no base in " + name);
        };
    }

    long readFormat(Cursor c, int format, long entry, String what, int enc) throws EhFrameException {
        switch (format) {
            case PE_ABSPTR, PE_UDATA8, PE_SDATA8 -> {
                c.need(8, this, entry);
                long v = u64(c.pos);
                c.pos += 8;
                return v;
            }
            case PE_UDATA4 -> {
                c.need(4, this, entry);
                long v = u32(c.pos) & 0xffffffffL;
                c.pos += 4;
                return v;
            }
            case PE_SDATA4 -> {
                c.need(4, this, entry);
                long v = u32(c.pos);
                c.pos += 4;
                return v;
            }
            case PE_UDATA2 -> {
                c.need(2, this, entry);
                long v = (data[c.pos] & 0xff) | (data[c.pos + 1] & 0xff) << 8;
                c.pos += 2;
                return v;
            }
            case PE_SDATA2 -> {
                c.need(2, this, entry);
                long v = (short) ((data[c.pos] & 0xff) | (data[c.pos + 1] & 0xff) << 8);
                c.pos += 2;
                return v;
            }
            case PE_ULEB128 -> {
                return c.uleb(this, entry);
            }
            case PE_SLEB128 -> {
                return c.sleb(this, entry);
            }
            default -> throw error(Problem.BAD_POINTER_ENCODING, entry, what + ": encoding 0x" + Integer.toHexString(enc) + " is invalid");
        }
    }

    EhFrameException error(Problem p, long entry, String what) {
        return new EhFrameException(p, name + " at offset 0x" + Long.toHexString(entry) + ": " + what);
    }

    int u32(int o) {
        byte[] b = data;
        return (b[o] & 0xff) | (b[o + 1] & 0xff) << 8 | (b[o + 2] & 0xff) << 16 | (b[o + 3] & 0xff) << 24;
    }

    long u64(int o) {
        return (u32(o) & 0xffffffffL) | (long) u32(o + 4) << 32;
    }

    private static String printable(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length() && i < 32; i++) {
            char ch = s.charAt(i);
            b.append(ch >= 0x20 && ch < 0x7f ? String.valueOf(ch) : String.format("\\x%02x", (int) ch));
        }
        return b.toString();
    }

    /** A read position bounded by the end of the current entry (or block). */
    static final class Cursor {
        int pos;
        final int end;

        Cursor(int pos, int end) {
            this.pos = pos;
            this.end = end;
        }

        void need(int n, CfiSection s, long entry) throws EhFrameException {
            if (end - pos < n) {
                throw s.error(Problem.TRUNCATED, entry, "entry ends inside a field (" + n + " bytes needed, " + (end - pos) + " left)");
            }
        }

        void skip(long n, CfiSection s, long entry, String what) throws EhFrameException {
            if (n < 0 || n > end - pos) {
                throw s.error(Problem.TRUNCATED, entry, what + " of " + Long.toUnsignedString(n) + " bytes runs past the entry");
            }
            pos += (int) n;
        }

        long uleb(CfiSection s, long entry) throws EhFrameException {
            byte[] d = s.data;
            long v = 0;
            int shift = 0;
            while (true) {
                if (pos >= end) {
                    throw s.error(Problem.TRUNCATED, entry, "LEB128 runs past the entry");
                }
                int b = d[pos++];
                if (shift < 64) {
                    v |= (long) (b & 0x7f) << shift;
                }
                shift += 7;
                if ((b & 0x80) == 0) {
                    return v;
                }
                if (shift >= 70) {
                    throw s.error(Problem.BAD_CFA_PROGRAM, entry, "LEB128 longer than 10 bytes");
                }
            }
        }

        long sleb(CfiSection s, long entry) throws EhFrameException {
            byte[] d = s.data;
            long v = 0;
            int shift = 0;
            int b;
            do {
                if (pos >= end) {
                    throw s.error(Problem.TRUNCATED, entry, "LEB128 runs past the entry");
                }
                b = d[pos++];
                if (shift < 64) {
                    v |= (long) (b & 0x7f) << shift;
                }
                shift += 7;
                if (shift >= 70 && (b & 0x80) != 0) {
                    throw s.error(Problem.BAD_CFA_PROGRAM, entry, "LEB128 longer than 10 bytes");
                }
            } while ((b & 0x80) != 0);
            if (shift < 64 && (b & 0x40) != 0) {
                v |= -1L << shift;
            }
            return v;
        }
    }
}
