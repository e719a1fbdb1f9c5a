package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.ehframe.EhFrameException.Problem;

/**
 * {@code .eh_frame_hdr} (LSB 4.1): the address of .eh_frame and a table of (initial location, FDE
 * address) pairs sorted by location, which finds the FDE for one PC by binary search without scanning
 * .eh_frame. Only the table encoding every linker emits (DW_EH_PE_datarel | sdata4, relative to the
 * header's start) is searchable; with any other, {@link #count()} is 0.
 */
final class EhFrameHdr {
    private final byte[] data;
    private final long address;
    private final long ehFramePtr;
    private final int count;
    private final int tableStart;

    private EhFrameHdr(byte[] data, long address, long ehFramePtr, int count, int tableStart) {
        this.data = data;
        this.address = address;
        this.ehFramePtr = ehFramePtr;
        this.count = count;
        this.tableStart = tableStart;
    }

    static EhFrameHdr parse(String name, byte[] data, long address) throws EhFrameException {
        CfiSection s = new CfiSection(name, data, true, address);
        if (data.length < 4) {
            throw new EhFrameException(Problem.BAD_HEADER, name + ": .eh_frame_hdr shorter than its header");
        }
        int version = data[0] & 0xff;
        int ptrEnc = data[1] & 0xff;
        int countEnc = data[2] & 0xff;
        int tableEnc = data[3] & 0xff;
        if (version != 1) {
            throw new EhFrameException(Problem.BAD_HEADER, name + ": .eh_frame_hdr version " + version);
        }
        CfiSection.Cursor c = new CfiSection.Cursor(4, data.length);
        long ehFramePtr = readHdrPointer(s, c, ptrEnc, address, "eh_frame_ptr");
        if (countEnc == CfiSection.PE_OMIT || tableEnc != (CfiSection.PE_DATAREL | CfiSection.PE_SDATA4)) {
            return new EhFrameHdr(data, address, ehFramePtr, 0, c.pos);
        }
        long count = readHdrPointer(s, c, countEnc, address, "fde_count");
        if (count < 0 || count > (data.length - c.pos) / 8) {
            throw new EhFrameException(Problem.BAD_HEADER, name + ": .eh_frame_hdr claims " + Long.toUnsignedString(count)
                    + " entries, more than its " + data.length + " bytes hold");
        }
        return new EhFrameHdr(data, address, ehFramePtr, (int) count, c.pos);
    }

    /** Pointers in the header: absptr/udata/sdata, pcrel, or datarel (relative to the header's start). */
    private static long readHdrPointer(CfiSection s, CfiSection.Cursor c, int enc, long hdrAddress, String what)
            throws EhFrameException {
        if (enc == CfiSection.PE_OMIT || (enc & CfiSection.PE_INDIRECT) != 0) {
            throw new EhFrameException(Problem.BAD_HEADER, s.name + ": .eh_frame_hdr " + what + " encoding 0x" + Integer.toHexString(enc));
        }
        int app = enc & 0x70;
        long at = hdrAddress + c.pos;
        long v = s.readFormat(c, enc & 0x0f, 0, what, enc);
        return switch (app) {
            case 0 -> v;
            case CfiSection.PE_PCREL -> v + at;
            case CfiSection.PE_DATAREL -> v + hdrAddress;
            default -> throw new EhFrameException(Problem.BAD_HEADER, s.name + ": .eh_frame_hdr " + what + " encoding 0x"
                    + Integer.toHexString(enc));
        };
    }

    /** The address of .eh_frame the header names. */
    long ehFrameAddress() {
        return ehFramePtr;
    }

    int count() {
        return count;
    }

    long initialLocation(int i) {
        return address + u32s(tableStart + 8 * i);
    }

    long fdeAddress(int i) {
        return address + u32s(tableStart + 8 * i + 4);
    }

    /** The address of the FDE with the greatest initial location &lt;= pc, or -1 (the caller checks its range). */
    long find(long pc) {
        int lo = 0;
        int hi = count; // invariant: answer in [lo - 1, hi)
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(initialLocation(mid), pc) <= 0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo == 0 ? -1 : fdeAddress(lo - 1);
    }

    private long u32s(int o) {
        return (data[o] & 0xff) | (data[o + 1] & 0xff) << 8 | (data[o + 2] & 0xff) << 16 | (data[o + 3]) << 24;
    }
}
