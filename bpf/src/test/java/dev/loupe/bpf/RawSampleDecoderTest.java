package dev.loupe.bpf;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RawSampleDecoderTest {
    static byte[] record(int nk, int nu) {
        ByteBuffer b = ByteBuffer.allocate(88 + 8 * (nk + nu)).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, 1234).putInt(4, 1240).putInt(8, 1);
        b.putShort(12, (short) nk).putShort(14, (short) nu);
        b.put(16, "myproc".getBytes(StandardCharsets.US_ASCII));
        b.put(32, "worker-7".getBytes(StandardCharsets.US_ASCII));
        b.putLong(48, 987654321L).putInt(56, RawSample.USER_READ_ERROR).putLong(64, 5_550_000_000L);
        b.putInt(72, 401234).putInt(76, 401240);
        for (int i = 0; i < nk; i++) {
            b.putLong(88 + 8 * i, 0xffffffff81000000L + i);
        }
        for (int i = 0; i < nu; i++) {
            b.putLong(88 + 8 * (nk + i), 0x401000L + i);
        }
        return b.array();
    }

    @Test
    void decodesHeaderAndFrames() {
        RawSample s = RawSampleDecoder.decode(MemorySegment.ofArray(record(2, 3)));
        assertEquals(1234, s.pid());
        assertEquals(1240, s.tid());
        assertEquals(401234, s.hostPid());
        assertEquals(401240, s.hostTid());
        assertEquals(1, s.cpu());
        assertEquals("myproc", s.comm());
        assertEquals("worker-7", s.threadComm());
        assertEquals(987654321L, s.ktimeNs());
        assertEquals(RawSample.USER_READ_ERROR, s.flags());
        assertEquals(5_550_000_000L, s.processStartNs());
        assertArrayEquals(new long[] {0xffffffff81000000L, 0xffffffff81000001L}, s.kernelStack());
        assertArrayEquals(new long[] {0x401000L, 0x401001L, 0x401002L}, s.userStack());
    }

    /** The mappings the walk found follow the used frames, 48 bytes each; the record is no longer than they need. */
    @Test
    void decodesTheMappingsAfterTheFrames() {
        byte[] frames = record(1, 2);
        ByteBuffer b = ByteBuffer.allocate(frames.length + 2 * 48).order(ByteOrder.LITTLE_ENDIAN);
        b.put(0, frames);
        b.putShort(60, (short) 2);
        int at = frames.length;
        b.putLong(at, 0x555500001000L).putLong(at + 8, 0x555500005000L).putLong(at + 16, 0x1000L)
                .putLong(at + 24, (259L << 20) | 2).putLong(at + 32, 1311768L).putInt(at + 40, RawSample.MAPPING_FILE);
        at += 48;
        b.putLong(at, 0x7ffd0000L).putLong(at + 8, 0x7ffd2000L).putInt(at + 40, RawSample.MAPPING_VDSO);
        RawSample s = RawSampleDecoder.decode(MemorySegment.ofArray(b.array()));
        assertArrayEquals(new long[] {0x401000L, 0x401001L}, s.userStack());
        assertArrayEquals(new long[] {0x555500001000L, 0x555500005000L, 0x1000L, (259L << 20) | 2, 1311768L, RawSample.MAPPING_FILE,
                0x7ffd0000L, 0x7ffd2000L, 0, 0, 0, RawSample.MAPPING_VDSO}, s.mappings());
        byte[] cut = java.util.Arrays.copyOf(b.array(), b.capacity() - 1);
        assertThrows(IllegalArgumentException.class, () -> RawSampleDecoder.decode(MemorySegment.ofArray(cut)));
        byte[] tooMany = b.array().clone();
        ByteBuffer.wrap(tooMany).order(ByteOrder.LITTLE_ENDIAN).putShort(60, (short) 9);
        assertThrows(IllegalArgumentException.class, () -> RawSampleDecoder.decode(MemorySegment.ofArray(tooMany)));
    }

    @Test
    void rejectsShortOrInconsistentRecords() {
        assertThrows(IllegalArgumentException.class, () -> RawSampleDecoder.decode(MemorySegment.ofArray(new byte[10])));
        byte[] r = record(1, 1);
        byte[] cut = java.util.Arrays.copyOf(r, r.length - 8);
        assertThrows(IllegalArgumentException.class, () -> RawSampleDecoder.decode(MemorySegment.ofArray(cut)));
        byte[] tooMany = record(0, 0);
        ByteBuffer.wrap(tooMany).order(ByteOrder.LITTLE_ENDIAN).putShort(14, (short) 500);
        assertThrows(IllegalArgumentException.class, () -> RawSampleDecoder.decode(MemorySegment.ofArray(tooMany)));
    }

    /** The decoder's offsets are the compiled BPF object's: read struct sample from its BTF with bpftool. */
    @Test
    void layoutMatchesTheBtfOfTheShippedObject() throws Exception {
        Path obj = Path.of(RawSampleDecoderTest.class.getResource(PerfEventSampler.OBJECT_RESOURCE).toURI());
        String bpftool = java.nio.file.Files.isExecutable(Path.of("/usr/sbin/bpftool")) ? "/usr/sbin/bpftool" : "bpftool";
        Process p = new ProcessBuilder(bpftool, "btf", "dump", "file", obj.toString()).redirectErrorStream(true).start();
        String btf = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), btf);
        Matcher m = Pattern.compile("STRUCT 'sample' size=(\\d+) vlen=\\d+\\n((?:\\s+'.*\\n)+)").matcher(btf);
        assertTrue(m.find(), "struct sample in BTF");
        assertEquals(RawSampleDecoder.HEADER_SIZE + 8 * (RawSampleDecoder.MAX_KERNEL_FRAMES + RawSampleDecoder.MAX_USER_FRAMES)
                + 48 * KernelAbi.MAX_SAMPLE_MAPPINGS, Integer.parseInt(m.group(1)));
        Map<String, Integer> offsets = new HashMap<>();
        Matcher f = Pattern.compile("'(\\w+)' type_id=\\d+ bits_offset=(\\d+)").matcher(m.group(2));
        while (f.find()) {
            offsets.put(f.group(1), Integer.parseInt(f.group(2)) / 8);
        }
        Map<String, Integer> expected = Map.ofEntries(Map.entry("pid", 0), Map.entry("tid", 4), Map.entry("cpu", 8),
                Map.entry("kernel_frames", 12), Map.entry("user_frames", 14), Map.entry("comm", 16),
                Map.entry("thread_comm", 32), Map.entry("ktime_ns", 48), Map.entry("flags", 56), Map.entry("mappings", 60), Map.entry("off_cpu_state", 62),
                Map.entry("start_boottime", 64), Map.entry("host_pid", 72), Map.entry("host_tid", 76),
                Map.entry("off_cpu_ns", 80), Map.entry("frames", 88), Map.entry("mapping_room", 88 + 8 * 254));
        for (var e : expected.entrySet()) {
            assertEquals(e.getValue(), offsets.get(e.getKey()), e.getKey());
        }
    }
}
