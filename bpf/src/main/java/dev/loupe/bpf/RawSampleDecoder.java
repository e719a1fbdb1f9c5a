package dev.loupe.bpf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/** Decodes the ring-buffer record written by profiler.bpf.c ({@code struct sample}). */
final class RawSampleDecoder {
    static final int HEADER_SIZE = 72;
    static final int MAX_KERNEL_FRAMES = 127;
    static final int MAX_USER_FRAMES = 127;

    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private RawSampleDecoder() {}

    /** @throws IllegalArgumentException if the record is shorter than its header says */
    static RawSample decode(MemorySegment rec) {
        long size = rec.byteSize();
        if (size < HEADER_SIZE) {
            throw new IllegalArgumentException("sample record of " + size + " bytes is shorter than its header");
        }
        int pid = rec.get(U32, 0);
        int tid = rec.get(U32, 4);
        int cpu = rec.get(U32, 8);
        int nk = Short.toUnsignedInt(rec.get(U16, 12));
        int nu = Short.toUnsignedInt(rec.get(U16, 14));
        if (nk > MAX_KERNEL_FRAMES || nu > MAX_USER_FRAMES || HEADER_SIZE + 8L * (nk + nu) > size) {
            throw new IllegalArgumentException("sample record of " + size + " bytes cannot hold " + nk
                    + " kernel and " + nu + " user frames");
        }
        String comm = cString(rec, 16, 16);
        String threadComm = cString(rec, 32, 16);
        long ktime = rec.get(U64, 48);
        int flags = rec.get(U32, 56);
        long startBoottime = rec.get(U64, 64);
        long[] kernel = new long[nk];
        long[] user = new long[nu];
        // One bulk copy per stack: per-element segment reads are costly in C1-compiled code.
        MemorySegment.copy(rec, U64, HEADER_SIZE, kernel, 0, nk);
        MemorySegment.copy(rec, U64, HEADER_SIZE + 8L * nk, user, 0, nu);
        return new RawSample(pid, tid, cpu, comm, threadComm, ktime, startBoottime, flags, kernel, user);
    }

    private static String cString(MemorySegment rec, long offset, int max) {
        int len = 0;
        while (len < max && rec.get(ValueLayout.JAVA_BYTE, offset + len) != 0) {
            len++;
        }
        byte[] b = new byte[len];
        MemorySegment.copy(rec, ValueLayout.JAVA_BYTE, offset, b, 0, len);
        return new String(b, StandardCharsets.UTF_8);
    }
}
