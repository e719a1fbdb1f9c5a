package dev.loupe.bpf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

import static dev.loupe.bpf.KernelAbi.SAMPLE;
import static dev.loupe.bpf.KernelAbi.offset;

/** Decodes the ring-buffer record {@code struct sample} at the offsets of {@link KernelAbi#SAMPLE}. */
final class RawSampleDecoder {
    static final int HEADER_SIZE = (int) KernelAbi.SAMPLE_HEADER_SIZE;
    static final int MAX_KERNEL_FRAMES = KernelAbi.MAX_KERNEL_FRAMES;
    static final int MAX_USER_FRAMES = KernelAbi.MAX_USER_FRAMES;

    private static final long PID = offset(SAMPLE, "pid");
    private static final long TID = offset(SAMPLE, "tid");
    private static final long CPU = offset(SAMPLE, "cpu");
    private static final long KERNEL_FRAMES = offset(SAMPLE, "kernel_frames");
    private static final long USER_FRAMES = offset(SAMPLE, "user_frames");
    private static final long COMM = offset(SAMPLE, "comm");
    private static final long THREAD_COMM = offset(SAMPLE, "thread_comm");
    private static final long KTIME = offset(SAMPLE, "ktime_ns");
    private static final long FLAGS = offset(SAMPLE, "flags");
    private static final long START = offset(SAMPLE, "start_boottime");
    private static final long HOST_PID = offset(SAMPLE, "host_pid");
    private static final long HOST_TID = offset(SAMPLE, "host_tid");
    private static final long MAPPINGS = offset(SAMPLE, "mappings");
    private static final long OFF_CPU_STATE = offset(SAMPLE, "off_cpu_state");
    private static final long OFF_CPU_NS = offset(SAMPLE, "off_cpu_ns");
    private static final long MAPPING_SIZE = KernelAbi.SAMPLED_MAPPING.byteSize();
    private static final long M_START = offset(KernelAbi.SAMPLED_MAPPING, "start");
    private static final long M_END = offset(KernelAbi.SAMPLED_MAPPING, "end");
    private static final long M_OFFSET = offset(KernelAbi.SAMPLED_MAPPING, "offset");
    private static final long M_DEV = offset(KernelAbi.SAMPLED_MAPPING, "dev");
    private static final long M_INO = offset(KernelAbi.SAMPLED_MAPPING, "ino");
    private static final long M_KIND = offset(KernelAbi.SAMPLED_MAPPING, "kind");

    // Unaligned reads: records are aligned in the ring buffer, but tests decode byte arrays.
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
        int nk = Short.toUnsignedInt(rec.get(U16, KERNEL_FRAMES));
        int nu = Short.toUnsignedInt(rec.get(U16, USER_FRAMES));
        int nm = Short.toUnsignedInt(rec.get(U16, MAPPINGS));
        long mappingsAt = HEADER_SIZE + 8L * (nk + nu);
        if (nk > MAX_KERNEL_FRAMES || nu > MAX_USER_FRAMES || nm > KernelAbi.MAX_SAMPLE_MAPPINGS
                || mappingsAt + MAPPING_SIZE * nm > size) {
            throw new IllegalArgumentException("sample record of " + size + " bytes cannot hold " + nk
                    + " kernel and " + nu + " user frames and " + nm + " mappings");
        }
        long[] mappings = nm == 0 ? RawSample.NO_MAPPINGS : new long[nm * RawSample.MAPPING_WORDS];
        for (int i = 0; i < nm; i++) {
            long at = mappingsAt + MAPPING_SIZE * i;
            int w = i * RawSample.MAPPING_WORDS;
            mappings[w] = rec.get(U64, at + M_START);
            mappings[w + 1] = rec.get(U64, at + M_END);
            mappings[w + 2] = rec.get(U64, at + M_OFFSET);
            mappings[w + 3] = rec.get(U64, at + M_DEV);
            mappings[w + 4] = rec.get(U64, at + M_INO);
            mappings[w + 5] = Integer.toUnsignedLong(rec.get(U32, at + M_KIND));
        }
        long[] kernel = new long[nk];
        long[] user = new long[nu];
        // One bulk copy per stack: per-element segment reads are costly in C1-compiled code.
        MemorySegment.copy(rec, U64, HEADER_SIZE, kernel, 0, nk);
        MemorySegment.copy(rec, U64, HEADER_SIZE + 8L * nk, user, 0, nu);
        return new RawSample(rec.get(U32, PID), rec.get(U32, TID), rec.get(U32, HOST_PID), rec.get(U32, HOST_TID), rec.get(U32, CPU),
                cString(rec, COMM, KernelAbi.TASK_COMM_LEN), cString(rec, THREAD_COMM, KernelAbi.TASK_COMM_LEN),
                rec.get(U64, KTIME), rec.get(U64, START), rec.get(U32, FLAGS), kernel, user, mappings,
                Short.toUnsignedInt(rec.get(U16, OFF_CPU_STATE)), rec.get(U64, OFF_CPU_NS));
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
