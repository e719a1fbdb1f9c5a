package dev.loupe.unwinder.python;

import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static dev.loupe.unwinder.python.TableVersionsTest.concat;
import static dev.loupe.unwinder.python.TableVersionsTest.name;
import static dev.loupe.unwinder.python.TableVersionsTest.noColumns;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A code object in the interpreter binary's own data (a deep-frozen module's) is read from the first process that
 * shows it and named for every later process of that binary from the binary's {@link StaticCodes}, at that process's
 * load bias, without reading its memory; a code object elsewhere (the heap) is read per process.
 */
class StaticCodesTest {
    static final String FILE = "<frozen importlib._bootstrap>";

    @Test
    void aStaticCodeObjectIsReadOncePerBinaryAndAHeapOneOncePerProcess() throws Exception {
        PythonLayout l = PythonLayout.forVersion(3, 12).orElseThrow();
        FakeInterpreter first = new FakeInterpreter(l);
        long find = first.code("_find_and_load", FILE, 1165, concat(noColumns(1, 0), noColumns(4, 2)));
        long firstBias = 0x7f00_0000_0000L;
        long dataVaddr = FakeInterpreter.BASE - firstBias; // the binary's writable data holds the fake's whole region
        StaticCodes statics = new StaticCodes(List.of(
                new LoadSegment(0x1000, 0x400000, 0x2000, 0x2000, 5), // text: not data
                new LoadSegment(0x3000, dataVaddr, 1 << 16, 1 << 16, 6))); // RW, file-initialized
        assertTrue(statics.holds(find - firstBias));
        assertFalse(statics.holds(0x400100), "the text segment");
        PythonRuntime runtime = PythonRuntime.reading(Path.of("/proc"));
        String m = "[python] python3.12";
        RuntimeFrame expected = RuntimeFrame.at("_find_and_load", FILE, 1167, 1165, m);

        PythonProcess p1 = PythonProcess.over(runtime, l, first, FakeInterpreter.CODE_TYPE, "python3.12", 0, firstBias, statics);
        assertEquals(expected, name(p1, PythonFrameStep.value(find, 2)));
        assertEquals(1L, runtime.counters().get("code_reads"));

        // A later process of the binary, loaded 1 MiB higher: the same object at the same place in the file, and
        // nothing readable in its memory (it has exited, say).
        long secondBias = firstBias + (1 << 20);
        FakeInterpreter empty = new FakeInterpreter(l);
        PythonProcess p2 = PythonProcess.over(runtime, l, empty, FakeInterpreter.CODE_TYPE, "python3.12", 0, secondBias, statics);
        assertEquals(expected, name(p2, PythonFrameStep.value(find + (1 << 20), 2)));
        assertEquals(1L, runtime.counters().get("code_reads"), "not read again");
        assertEquals(1L, runtime.counters().get("static_code_hits"));

        // Outside the binary's data (heap memory): each process's own, read from it.
        PythonProcess p3 = PythonProcess.over(runtime, l, empty, FakeInterpreter.CODE_TYPE, "python3.12", 0, secondBias,
                new StaticCodes(List.of()));
        assertEquals(RuntimeFrame.of("[python: not a code object]", m), name(p3, PythonFrameStep.value(find + (1 << 20), 2)));
        assertEquals(2L, runtime.counters().get("code_reads"));
        assertEquals(1, statics.size());
    }
}
