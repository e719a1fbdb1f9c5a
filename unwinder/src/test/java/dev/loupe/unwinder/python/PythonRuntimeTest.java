package dev.loupe.unwinder.python;

import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.ehframe.UnwindTableBuilder;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.proc.ProcessMemory;
import dev.loupe.unwinder.runtime.CodeTable;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import dev.loupe.unwinder.runtime.RuntimeProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The package against a real python3.11 (Debian 12's), checked against the interpreter's own view printed by
 * code_view.py: the layout table (the walker's path from {@code _PyRuntime} to the waiting thread's frames, each
 * frame's code object and line), the names of code objects, a pointer that is not a code object, and the table the
 * walker gets (layout words first, the loop's rows re-kinded with their CFA rules kept).
 */
class PythonRuntimeTest {
    static final Path PROC = Path.of("/proc");

    @TempDir
    Path dir;

    @Test
    void layout311WalksFromTheRuntimeToTheWaitingThreadsFrames() throws Exception {
        PythonLayout layout = PythonLayout.forVersion(3, 11).orElseThrow();
        try (PythonTargets.Target t = PythonTargets.start(PythonTargets.PYTHON311, dir, "view");
             ProcessMemory mem = ProcessMemory.open(PROC, (int) t.pid())) {
            long[] rt = longs(only(t.lines(), "runtime"));
            long runtime = rt[0];
            long interp = rt[1];
            long tstate = rt[2];
            long threadId = rt[3];
            assertEquals(interp, mem.readLong(runtime + layout.interpretersHead()), "interpreters.head");
            long ts = mem.readLong(interp + layout.threadsHead());
            int hops = 0;
            while (ts != 0 && mem.readLong(ts + layout.threadId()) != threadId && hops++ < 64) {
                ts = mem.readLong(ts + layout.threadNext());
            }
            assertEquals(tstate, ts, "the thread state whose thread_id is the main thread's ident");
            long frame = mem.readLong(mem.readLong(ts + layout.frameHolder()) + layout.currentFrame());
            Map<String, long[]> expected = new HashMap<>(); // qualname -> {code id, line}
            for (String l : t.lines()) {
                if (l.startsWith("frame ")) {
                    String[] f = l.split(" ");
                    expected.put(f[2], new long[] {Long.parseLong(f[1]), Long.parseLong(f[3])});
                }
            }
            List<String> names = new ArrayList<>();
            CodeObjects codes = new CodeObjects(mem, layout.code(), codeType(t.pid()));
            for (int i = 0; i < 3; i++) {
                long code = mem.readLong(frame + layout.frameCode());
                int index = (int) ((mem.readLong(frame + layout.frameInstr()) - code - layout.codeAdaptive()) / 2);
                CodeObjects.Code c = codes.read(code);
                long[] want = expected.get(c.qualname());
                assertNotNull(want, c.qualname() + " is not in the interpreter's chain " + expected.keySet());
                assertEquals(want[0], code, c.qualname() + "'s code object");
                assertEquals(want[1], LineTable.line311(c.lineTable(), c.firstLine(), index), c.qualname() + "'s line");
                names.add(c.qualname());
                boolean entry = mem.read(frame + layout.frameEnd(), 1).get(0) != 0;
                assertEquals(i == 2, entry, "only <module>'s frame is a C call's entry (is_entry)");
                frame = mem.readLong(frame + layout.framePrevious());
            }
            assertEquals(List.of("wait_here", "outer", "<module>"), names);
            assertEquals(0, frame, "<module> is the thread's first frame");
        }
    }

    /**
     * The walker's path, followed in Java as {@code python.bpf.h} follows it, through each version's layout (3.9 and 3.11
     * by their tables, 3.13 and 3.14 by their {@code _Py_DebugOffsets}), from {@code _PyRuntime} to the main thread's
     * frames, each named: the chain and lines the interpreter printed ({@code wait_here}, {@code outer},
     * {@code <module>}).
     */
    @ParameterizedTest(name = "{1}")
    @CsvSource({"'', /usr/bin/python3.11", "/var/cache/loupe/bullseye-python, /usr/bin/python3.9",
            "/var/cache/loupe/sid-pythons, /usr/bin/python3.13", "/var/cache/loupe/sid-pythons, /usr/bin/python3.14"})
    void theWalkersPathReachesTheInterpretersOwnChain(String root, String python) throws Exception {
        try (PythonTargets.Target t = PythonTargets.start(root.isEmpty() ? null : Path.of(root), Path.of(python), dir, "view");
             ProcessMemory mem = ProcessMemory.open(PROC, (int) t.pid());
             RuntimeProcess rp = PythonRuntime.reading(PROC).open((int) t.pid(), Path.of(python).getFileName().toString()).orElseThrow()) {
            PythonProcess p = (PythonProcess) rp;
            PythonLayout l = p.layout();
            long[] rt = longs(only(t.lines(), "runtime"));
            assertEquals(rt[0], p.runtimeAddress(), "_PyRuntime found from the binary's symbols and the load bias");
            assertEquals(rt[1], mem.readLong(rt[0] + l.interpretersHead()), "interpreters.head");
            long ts = mem.readLong(rt[1] + l.threadsHead());
            for (int hops = 0; ts != 0 && mem.readLong(ts + l.threadId()) != rt[3] && hops < PythonFrameStep.MAX_THREADS; hops++) {
                ts = mem.readLong(ts + l.threadNext());
            }
            assertEquals(rt[2], ts, "the thread state whose thread_id is the main thread's ident");
            long holder = l.frameHolder() == PythonLayout.NO_HOLDER ? ts : mem.readLong(ts + l.frameHolder());
            List<String> walked = new ArrayList<>();
            for (long f = mem.readLong(holder + l.currentFrame()); f != 0 && walked.size() < 16; f = mem.readLong(f + l.framePrevious())) {
                int owner = l.variant() == PythonLayout.Variant.V39 ? 0 : mem.read(f + l.frameEnd(), 1).get(0);
                if (l.variant().code() >= PythonLayout.Variant.V312.code() && owner >= l.cstackOwner()) {
                    continue; // a C call's entry frame
                }
                long code = mem.readLong(f + l.frameCode()) & ~3L;
                int index = l.variant() == PythonLayout.Variant.V39 ? mem.readInt(f + l.frameInstr())
                        : (int) ((mem.readLong(f + l.frameInstr()) - code - l.codeAdaptive()) / 2);
                RuntimeFrame rf = p.taggedFrame(FrameType.PYTHON, PythonFrameStep.value(code, index));
                walked.add(rf.function() + ":" + rf.line());
            }
            List<String> expected = new ArrayList<>();
            for (String name : List.of("wait_here", "outer", "<module>")) {
                for (String line : t.lines()) {
                    String[] f = line.split(" ");
                    if (f[0].equals("frame") && f[2].equals(name)) {
                        expected.add(name + ":" + f[3]);
                    }
                }
            }
            assertEquals(List.of("wait_here", "outer", "<module>"), expected.stream().map(x -> x.split(":")[0]).toList());
            assertEquals(expected, walked, "the chain " + python + " printed");
        }
    }

    @Test
    void codeObjectsAreNamedAsTheInterpreterNamesThem() throws Exception {
        try (PythonTargets.Target t = PythonTargets.start(PythonTargets.PYTHON311, dir, "lines", "json.decoder");
             RuntimeProcess p = PythonRuntime.reading(PROC).open((int) t.pid(), "python3.11").orElseThrow()) {
            Map<Long, String[]> codes = new HashMap<>();
            int lines = 0;
            for (String l : t.lines()) {
                String[] f = l.split(" ", 5);
                if (f[0].equals("code")) {
                    codes.put(Long.parseLong(f[1]), f);
                } else if (f[0].equals("line")) {
                    long id = Long.parseLong(f[1]);
                    int index = Integer.parseInt(f[2]);
                    RuntimeFrame rf = p.taggedFrame(FrameType.PYTHON, PythonFrameStep.value(id, index));
                    String[] c = codes.get(id);
                    assertEquals(RuntimeFrame.at(c[2], c[4], Integer.parseInt(f[3]), Integer.parseInt(c[3]), "[python] python3.11"), rf);
                    lines++;
                }
            }
            assertTrue(codes.values().stream().anyMatch(c -> c[2].equals("Outer.method.<locals>.inner")),
                    "a nested function's qualified name");
            assertTrue(lines > 1000, lines + " code units named");
            long notCode = Long.parseLong(only(t.lines(), "notcode")[0]);
            assertEquals(RuntimeFrame.of("[python: not a code object]", "[python] python3.11"),
                    p.taggedFrame(FrameType.PYTHON, PythonFrameStep.value(notCode, 0)));
            assertEquals(RuntimeFrame.of("[python: no thread state]", "[python] python3.11"),
                    p.taggedFrame(FrameType.PYTHON, PythonFrameStep.Error.NO_THREAD.code));
            assertEquals(RuntimeFrame.of("[python: frame chain unreadable]", "[python] python3.11"),
                    p.taggedFrame(FrameType.PYTHON, PythonFrameStep.Error.READ.code));
        }
    }

    @Test
    void theWalkersTableKeepsTheBinarysRulesAndMarksTheLoop() throws Exception {
        try (PythonTargets.Target t = PythonTargets.start(PythonTargets.PYTHON311, dir, "view")) {
            PythonSymbols syms = PythonSymbols.read(PythonTargets.PYTHON311);
            long[] rt = longs(only(t.lines(), "runtime"));
            MapEntry exec = ProcMaps.read(PROC, (int) t.pid()).stream()
                    .filter(m -> m.executable() && m.path().equals(PythonTargets.PYTHON311.toString())).findFirst().orElseThrow();
            long bias = rt[0] - syms.vaddr(PythonSymbols.RUNTIME);
            assertEquals(0, bias, "Debian's python3.11 is not position-independent");
            PythonRuntime runtime = PythonRuntime.reading(PROC);
            UnwindTable binaryOwn = UnwindTableBuilder.build(PythonTargets.PYTHON311);
            UnwindTable table = runtime.fileTable(exec, PythonTargets.PYTHON311, binaryOwn).orElseThrow();
            assertEquals(1, runtime.counters().get("binaries_read"));
            long[] words = PythonLayout.forVersion(3, 11).orElseThrow().kernelWords(syms.vaddr(PythonSymbols.RUNTIME));
            long[] firstRules = java.util.Arrays.copyOf(table.ruleWords(), PythonFrameStep.DATA_WORDS);
            assertArrayEquals(words, firstRules, "the layout words are rules 0..4, with _PyRuntime's file address");
            try (RuntimeProcess p = runtime.open((int) t.pid(), "python3.11").orElseThrow()) {
                assertNull(p.codeTable(0), "no table per process: the binary's serves them all");
            }
            assertEquals(1, runtime.counters().get("binaries_read"), "the binary read once for its table and its process");
            UnwindTable file = binaryOwn;
            long eval = syms.vaddr(PythonSymbols.EVAL);
            long size = syms.size(PythonSymbols.EVAL);
            List<long[]> parts = EvalRanges.find(PythonTargets.PYTHON311, syms.loadSegments(), eval, eval + size,
                    dev.loupe.unwinder.ehframe.FdeRanges.read(PythonTargets.PYTHON311), file);
            System.out.println("python3.11's loop: " + parts.stream().map(r -> Long.toHexString(r[0]) + "-" + Long.toHexString(r[1])).toList());
            assertEquals(List.of(eval, eval + size), List.of(parts.get(0)[0], parts.get(0)[1]), "the symbol's range first");
            assertTrue(parts.size() >= 2, "gcc moved part of the loop apart (.cold): " + parts.size() + " part(s)");
            long loopBytes = 0;
            int loopRows = 0;
            for (long[] part : parts) {
                loopBytes += part[1] - part[0];
                for (long pc = part[0]; pc < part[1]; pc++) {
                    long own = file.lookup(pc);
                    long walked = table.lookup(pc + bias);
                    if (UnwindRule.kind(own) <= UnwindRule.KIND_CFA_RBP) {
                        assertEquals(UnwindRule.KIND_PYTHON_EVAL, UnwindRule.kind(walked), "at 0x" + Long.toHexString(pc));
                        assertEquals(own, UnwindRule.pythonNative(walked), "the native rule kept at 0x" + Long.toHexString(pc));
                        loopRows++;
                    } else {
                        assertEquals(own, walked);
                    }
                }
            }
            assertEquals(loopBytes, loopRows, "every byte of the loop has a CFA rule");
            for (long pc : new long[] {eval - 1, eval + size, parts.get(1)[0] - 1, parts.get(1)[1], exec.end() - bias - 1}) {
                assertEquals(file.lookup(pc), table.lookup(pc + bias), "outside the loop at 0x" + Long.toHexString(pc));
            }
        }
    }

    static long codeType(long pid) throws Exception {
        PythonSymbols syms = PythonSymbols.read(PythonTargets.PYTHON311);
        return syms.vaddr(PythonSymbols.CODE_TYPE); // Debian's python3.11 is not position-independent: bias 0
    }

    static String[] only(List<String> lines, String tag) {
        List<String> found = lines.stream().filter(l -> l.startsWith(tag + " ")).toList();
        assertEquals(1, found.size(), tag + " lines: " + found);
        return found.get(0).substring(tag.length() + 1).split(" ");
    }

    static long[] longs(String[] s) {
        long[] v = new long[s.length];
        for (int i = 0; i < s.length; i++) {
            v[i] = Long.parseLong(s[i]);
        }
        return v;
    }
}
