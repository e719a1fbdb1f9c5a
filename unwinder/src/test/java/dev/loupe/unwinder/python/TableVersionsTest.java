package dev.loupe.unwinder.python;

import dev.loupe.unwinder.proc.ProcessMemory;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * CPython 3.10 (Ubuntu 22.04) and 3.12 (Ubuntu 24.04), which this host cannot run: a process's memory made from each
 * version's table ({@link FakeInterpreter}), with that version's frames, code objects and line tables, walked by the
 * kernel step's specification ({@link PythonFrameStep#walk}) and named by {@link PythonProcess}, down to exact lines.
 */
class TableVersionsTest {
    static final long FSBASE = 0x7f3a_1234_5640L;
    static final long OTHER_THREAD = 0x7f3a_9999_0640L;
    static final String FILE = "/srv/app/aviary.py";

    // ---------------- 3.12 ----------------

    /**
     * 3.12: {@code Aviary.tern} called by {@code c}, both run by one loop call whose entry frame (owned by the C stack)
     * follows them, then {@code <module>} by an outer loop call with its own entry frame. The sampled thread is the
     * second in the interpreter's list.
     */
    @Test
    void cpython312FramesAreWalkedPerLoopCallAndNamedWithExactLines() throws Exception {
        PythonLayout l = PythonLayout.forVersion(3, 12).orElseThrow();
        FakeInterpreter mem = new FakeInterpreter(l);
        // Aviary.tern: def at 5; RESUME (line 5), three units at 7, one without a location, two at 7 (one-line form
        // of columns), one at 8, two at 8 (short form), one back at 6 (long form).
        byte[] ternTable = concat(
                noColumns(1, 0), noColumns(3, 2), noLocation(1), oneLine(2, 0), oneLine(1, 1), shortForm(2), longForm(1, -2));
        long tern = mem.code("Aviary.tern", FILE, 5, ternTable);
        long c = mem.code("c", FILE, 20, concat(noColumns(1, 0), noColumns(6, 1), noColumns(4, 2)));
        long module = mem.code("<module>", FILE, 1, concat(noColumns(2, 0), noColumns(8, 39), noColumns(8, 0)));
        int cstack = l.cstackOwner();
        long outerEntry = mem.interpreterFrame(module, 0, 0, cstack);
        long moduleFrame = mem.interpreterFrame(module, 12, outerEntry, 0);
        long innerEntry = mem.interpreterFrame(c, 0, moduleFrame, cstack);
        long cFrame = mem.interpreterFrame(c, 8, innerEntry, 0);
        long ternFrame = mem.interpreterFrame(tern, 8, cFrame, 0);
        long runtime = mem.runtime(new long[] {OTHER_THREAD, FSBASE}, new long[] {moduleFrame, ternFrame});

        List<List<Long>> walked = PythonFrameStep.walk(mem, l, runtime, FSBASE, 2);
        assertEquals(List.of(
                List.of(PythonFrameStep.value(tern, 8), PythonFrameStep.value(c, 8)),
                List.of(PythonFrameStep.value(module, 12))), walked);

        PythonProcess p = PythonProcess.over(PythonRuntime.reading(Path.of("/proc")), l, mem, FakeInterpreter.CODE_TYPE,
                "python3.12", runtime);
        String m = "[python] python3.12";
        assertEquals(RuntimeFrame.at("Aviary.tern", FILE, 8, 5, m), name(p, walked.get(0).get(0)));
        assertEquals(RuntimeFrame.at("c", FILE, 23, 20, m), name(p, walked.get(0).get(1)));
        assertEquals(RuntimeFrame.at("<module>", FILE, 40, 1, m), name(p, walked.get(1).get(0)));
        // Every code unit of tern's table, as 3.12's co_positions() would give it.
        int[] lines = {5, 7, 7, 7, 0, 7, 7, 8, 8, 8, 6};
        for (int i = 0; i < lines.length; i++) {
            assertEquals(RuntimeFrame.at("Aviary.tern", FILE, lines[i], 5, m), name(p, PythonFrameStep.value(tern, i)), "unit " + i);
        }
        assertEquals(0, name(p, PythonFrameStep.value(tern, lines.length)).line(), "past the table: no line");
        // prev_instr one unit before the first instruction (a frame that has not started): the first instruction.
        long fresh = mem.interpreterFrame(tern, -1, 0, 0);
        long runtime2 = mem.runtime(new long[] {FSBASE}, new long[] {fresh});
        assertEquals(List.of(List.of(PythonFrameStep.value(tern, 0))), PythonFrameStep.walk(mem, l, runtime2, FSBASE, 1));
    }

    /**
     * 3.12: a 40-deep recursion in one data stack chunk (each frame pushed after its caller, 192 bytes apart here), run
     * by one loop call: the same 40 values, innermost first, as frame by frame, but read a block at a time: a 1024-byte
     * block ending at a frame's head holds it and its next four callers, and a block does not start below its frame's
     * page, so 40 frames take 8 blocks and at most one more per page crossed (the chain spans 2 pages here), where a
     * read per frame took 40.
     */
    @Test
    void cpython312DeepChainIsReadABlockAtATime() throws Exception {
        PythonLayout l = PythonLayout.forVersion(3, 12).orElseThrow();
        FakeInterpreter mem = new FakeInterpreter(l);
        long r = mem.code("r", FILE, 4, noColumns(8, 0));
        long runtime = mem.runtime(new long[] {FSBASE}, new long[] {0}); // its frame is set below
        long f = mem.interpreterFrame(r, 0, 0, l.cstackOwner());
        List<Long> expected = new ArrayList<>();
        long first = 0;
        for (int i = 0; i < 40; i++) {
            long callee = mem.interpreterFrame(r, i % 8, f, 0);
            assertEquals(f + PythonFrameStep.FRAME_BYTES + 64, callee, "frames pushed one after another");
            if (i == 0) {
                first = callee;
            }
            f = callee;
            expected.add(0, PythonFrameStep.value(r, i % 8));
        }
        long innermost = f;
        assertEquals(2, (innermost + PythonFrameStep.FRAME_BYTES - 1) / PythonFrameStep.PAGE_BYTES
                - first / PythonFrameStep.PAGE_BYTES, "the chain crosses two page boundaries");
        // The thread state's current frame: the innermost.
        long ts = mem.readLong(mem.readLong(runtime + l.interpretersHead()) + l.threadsHead());
        mem.putLong(mem.readLong(ts + l.frameHolder()) + l.currentFrame(), innermost);

        List<long[]> reads = new ArrayList<>();
        ProcessMemory counting = new ProcessMemory() {
            @Override
            public void read(long address, ByteBuffer dst) throws IOException {
                reads.add(new long[] {address, dst.remaining()});
                mem.read(address, dst);
            }

            @Override
            public void close() {}
        };
        assertEquals(List.of(expected, List.of()), PythonFrameStep.walk(counting, l, runtime, FSBASE, 2));
        long frameReads = reads.stream().filter(a -> a[1] >= PythonFrameStep.FRAME_BYTES).count(); // not the thread's 8-byte reads
        assertTrue(frameReads >= 8 && frameReads <= 10, "frame reads: " + frameReads);
        assertTrue(reads.stream().allMatch(a -> a[1] <= PythonFrameStep.BLOCK_BYTES
                && (a[0] + a[1] - 1) / PythonFrameStep.PAGE_BYTES - a[0] / PythonFrameStep.PAGE_BYTES <= 1),
                "a read spans at most its frame's page and the next");
    }

    /** 3.12: what goes wrong is said, and the frames read before it stay. */
    @Test
    void cpython312BadInputGivesErrorFrames() throws Exception {
        PythonLayout l = PythonLayout.forVersion(3, 12).orElseThrow();
        FakeInterpreter mem = new FakeInterpreter(l);
        long tern = mem.code("Aviary.tern", FILE, 5, noColumns(4, 0));
        long torn = mem.interpreterFrame(tern, 1, 0x10, 0); // previous: not mapped
        long ternFrame = mem.interpreterFrame(tern, 2, torn, 0);
        long notCode = mem.str("not a code object");
        long strange = mem.interpreterFrame(notCode, 0, 0, 0);
        long misaligned = mem.interpreterFrame(tern + 8, 0, 0, 0);
        long runtime = mem.runtime(new long[] {OTHER_THREAD, FSBASE, FSBASE + 0x1000, FSBASE + 0x2000},
                new long[] {0, ternFrame, strange, misaligned});

        long read = PythonFrameStep.Error.READ.code;
        assertEquals(List.of(List.of(PythonFrameStep.value(tern, 2), PythonFrameStep.value(tern, 1), read), List.of()),
                PythonFrameStep.walk(mem, l, runtime, FSBASE, 2), "a torn chain: the frames read, then the error");
        assertEquals(List.of(List.of((long) PythonFrameStep.Error.NO_THREAD.code), List.of()),
                PythonFrameStep.walk(mem, l, runtime, 0x7f3a_0bad_0640L, 2), "a thread with no thread state");
        assertEquals(List.of(List.of((long) PythonFrameStep.Error.BAD_CODE.code)),
                PythonFrameStep.walk(mem, l, runtime, FSBASE + 0x2000, 1), "a code pointer that is no object's");
        PythonProcess p = PythonProcess.over(PythonRuntime.reading(Path.of("/proc")), l, mem, FakeInterpreter.CODE_TYPE,
                "python3.12", runtime);
        List<List<Long>> s = PythonFrameStep.walk(mem, l, runtime, FSBASE + 0x1000, 1);
        assertEquals(RuntimeFrame.of("[python: not a code object]", "[python] python3.12"), name(p, s.get(0).get(0)));
        assertEquals(RuntimeFrame.of("[python: frame chain unreadable]", "[python] python3.12"), name(p, read));
    }

    // ---------------- 3.10 ----------------

    /** 3.10: one frame object per loop call, linked by f_back, f_lasti in code units, the 3.10 co_linetable. */
    @Test
    void cpython310FramesAreWalkedOnePerLoopCallAndNamedWithExactLines() throws Exception {
        PythonLayout l = PythonLayout.forVersion(3, 10).orElseThrow();
        FakeInterpreter mem = new FakeInterpreter(l);
        // tern, def at 5: bytes [0,6) line 6; an empty range (+1) then [6,10) line 8; [10,12) no line; [12,266) line 9
        // and [266,312) line 9 (a long range split as the compiler splits it); [312,320) line 7.
        byte[] ternTable = {6, 1, 0, 1, 4, 1, 2, -128, (byte) 254, 1, 46, 0, 8, -2};
        long tern = mem.code("tern", FILE, 5, ternTable);
        long c = mem.code("c", FILE, 20, new byte[] {8, 3, 8, 1});
        long module = mem.code("<module>", FILE, 1, new byte[] {10, 0, 20, 39});
        long moduleFrame = mem.frameObject(module, 7, 0);
        long cFrame = mem.frameObject(c, 5, moduleFrame);
        long ternFrame = mem.frameObject(tern, 140, cFrame);
        long runtime = mem.runtime(new long[] {OTHER_THREAD, FSBASE}, new long[] {moduleFrame, ternFrame});

        List<List<Long>> walked = PythonFrameStep.walk(mem, l, runtime, FSBASE, 4);
        assertEquals(List.of(List.of(PythonFrameStep.value(tern, 140)), List.of(PythonFrameStep.value(c, 5)),
                List.of(PythonFrameStep.value(module, 7)), List.of((long) PythonFrameStep.Error.NO_FRAMES.code)), walked,
                "one frame a loop call; a fourth loop frame finds none left");

        PythonProcess p = PythonProcess.over(PythonRuntime.reading(Path.of("/proc")), l, mem, FakeInterpreter.CODE_TYPE,
                "python3.10", runtime);
        String m = "[python] python3.10";
        assertEquals(RuntimeFrame.at("tern", FILE, 9, 5, m), name(p, walked.get(0).get(0)), "unit 140: byte 280");
        assertEquals(RuntimeFrame.at("c", FILE, 24, 20, m), name(p, walked.get(1).get(0)), "unit 5: byte 10");
        assertEquals(RuntimeFrame.at("<module>", FILE, 40, 1, m), name(p, walked.get(2).get(0)), "unit 7: byte 14");
        int[][] unitLines = {{0, 6}, {2, 6}, {3, 8}, {4, 8}, {5, 0}, {6, 9}, {132, 9}, {133, 9}, {155, 9}, {156, 7},
                {159, 7}, {160, 0}};
        for (int[] u : unitLines) {
            assertEquals(RuntimeFrame.at("tern", FILE, u[1], 5, m), name(p, PythonFrameStep.value(tern, u[0])), "unit " + u[0]);
        }
        // f_lasti -1: the frame has not run an instruction yet; no line rather than a guess.
        long fresh = mem.frameObject(tern, -1, 0);
        long runtime2 = mem.runtime(new long[] {FSBASE}, new long[] {fresh});
        List<List<Long>> s = PythonFrameStep.walk(mem, l, runtime2, FSBASE, 1);
        assertEquals(List.of(List.of(PythonFrameStep.value(tern, -1))), s);
        assertEquals(RuntimeFrame.at("tern", FILE, 0, 5, m), name(p, s.get(0).get(0)));
    }

    @Test
    void linetable310AgreesWithTheRangesItDescribes() {
        byte[] t = {6, 1, 0, 1, 4, 1, 2, -128, (byte) 254, 1, 46, 0, 8, -2};
        assertEquals(6, LineTable.linetable310(t, 5, 0));
        assertEquals(6, LineTable.linetable310(t, 5, 5));
        assertEquals(8, LineTable.linetable310(t, 5, 6));
        assertEquals(0, LineTable.linetable310(t, 5, 10));
        assertEquals(9, LineTable.linetable310(t, 5, 12));
        assertEquals(9, LineTable.linetable310(t, 5, 311));
        assertEquals(7, LineTable.linetable310(t, 5, 312));
        assertEquals(0, LineTable.linetable310(t, 5, 320), "past the table");
        assertEquals(0, LineTable.linetable310(new byte[] {6}, 5, 0), "a table cut in a pair");
        assertEquals(0, LineTable.linetable310(t, 5, -1));
    }

    // ---------------- 3.11+ location table entries (Objects/locations.md) ----------------

    /** An entry's first byte: 1, the code, then its length in code units less one (1 to 8 units). */
    static byte first(int code, int units) {
        if (units < 1 || units > 8) {
            throw new IllegalArgumentException(units + " code units in one entry");
        }
        return (byte) (0x80 | code << 3 | (units - 1));
    }

    static byte[] noColumns(int units, int lineDelta) {
        return concat(new byte[] {first(13, units)}, signedVarint(lineDelta));
    }

    static byte[] noLocation(int units) {
        return new byte[] {first(15, units)};
    }

    static byte[] oneLine(int units, int lineDelta) {
        return new byte[] {first(10 + lineDelta, units), 4, 9};
    }

    static byte[] shortForm(int units) {
        return new byte[] {first(3, units), 0x25};
    }

    static byte[] longForm(int units, int lineDelta) {
        return concat(new byte[] {first(14, units)}, signedVarint(lineDelta), varint(1), varint(5), varint(70));
    }

    static byte[] signedVarint(int v) {
        return varint(v < 0 ? (-v) << 1 | 1 : v << 1);
    }

    static byte[] varint(int v) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        while (v >= 64) {
            b.write(64 | (v & 63));
            v >>>= 6;
        }
        b.write(v);
        return b.toByteArray();
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            b.writeBytes(p);
        }
        return b.toByteArray();
    }

    static RuntimeFrame name(PythonProcess p, long value) {
        return p.taggedFrame(FrameType.PYTHON, value);
    }
}
