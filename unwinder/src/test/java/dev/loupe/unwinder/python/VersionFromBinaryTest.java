package dev.loupe.unwinder.python;

import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A CPython's version read from the binary, whatever its name: {@code Py_Version} (3.11+) or the {@code PY_VERSION}
 * string (3.9, 3.10), on Debian's own binaries copied under names that say nothing; and a renamed interpreter found by
 * its symbols, then its process opened and its frames named.
 */
class VersionFromBinaryTest {
    @TempDir
    Path dir;

    @Test
    void theVersionComesFromTheBinaryNotItsName() throws Exception {
        record Case(Path binary, int minor, boolean hasPyVersion) {}
        for (Case c : List.of(new Case(PythonTargets.PYTHON311, 11, true),
                new Case(PythonTargets.BULLSEYE.resolve("usr/bin/python3.9"), 9, false),
                new Case(PythonTargets.SID.resolve("usr/bin/python3.13"), 13, true),
                new Case(PythonTargets.SID.resolve("usr/bin/python3.14"), 14, true))) {
            assertTrue(Files.isReadable(c.binary()), c.binary() + " (installed by ./loupe test)");
            Path copy = Files.copy(c.binary(), dir.resolve("myapp" + c.minor()));
            PythonSymbols syms = PythonSymbols.read(copy);
            assertTrue(syms.interpreter(), copy.toString());
            assertEquals(c.hasPyVersion(), syms.vaddr(PythonSymbols.VERSION) >= 0, "Py_Version in " + c.binary());
            assertArrayEquals(new int[] {3, c.minor()}, PythonBinary.version(copy, syms), c.binary().toString());
            PythonBinary bin = PythonBinary.read(copy.toString(), copy);
            assertEquals(List.of(3, c.minor()), List.of(bin.major(), bin.minor()), c.binary().toString());
            assertEquals(c.minor(), bin.layout().minor());
        }
        // A name that says another version does not win over the binary.
        Path misnamed = Files.copy(PythonTargets.PYTHON311, dir.resolve("python3.9"));
        assertEquals(11, PythonBinary.read(misnamed.toString(), misnamed).minor());
    }

    @Test
    void versionStringsAreOnlyAnInterpretersOwn() {
        assertArrayEquals(new int[] {3, 9}, PythonBinary.versionString(bytes("\0ucd\0" + "3.2.0\0x\0" + "3.9.2\0(default)\0")));
        assertArrayEquals(new int[] {3, 10}, PythonBinary.versionString(bytes("\0" + "3.10.0rc2+\0" + "3.2.0\0")));
        assertArrayEquals(new int[] {3, 9}, PythonBinary.versionString(bytes("\0" + "3.9.2\0" + "3.9.2\0")), "the same twice");
        assertNull(PythonBinary.versionString(bytes("\0" + "3.2.0\0")), "only the Unicode database's");
        assertNull(PythonBinary.versionString(bytes("\0" + "3.9.2\0" + "3.10.1\0")), "two versions: neither");
        assertNull(PythonBinary.versionString(bytes("\0" + "13.9.2\0" + "v3.9.2\0" + "3.9.2.1\0")), "not whole strings");
    }

    /** python3.11 copied as {@code myapp}: not detected by its name, found by its symbols, then opened and named. */
    @Test
    void aRenamedInterpreterIsFoundByItsSymbols() throws Exception {
        Path myapp = Files.copy(PythonTargets.PYTHON311, dir.resolve("myapp"));
        assertTrue(myapp.toFile().setExecutable(true));
        Path script = dir.resolve("spin.py");
        Files.writeString(script, """
                import sys
                def spin():
                    print("ready", flush=True)
                    sys.stdin.readline()
                spin()
                """);
        ProcessBuilder pb = new ProcessBuilder(myapp.toString(), script.toString());
        pb.environment().put("PYTHONHOME", "/usr"); // its standard library, from where the copy is not
        Process p = pb.redirectErrorStream(true).start();
        try {
            assertEquals("ready", new BufferedReader(new InputStreamReader(p.getInputStream())).readLine());
            PythonRuntime runtime = PythonRuntime.reading(Path.of("/proc"));
            List<MapEntry> exec = ProcMaps.read(Path.of("/proc"), (int) p.pid()).stream().filter(MapEntry::executable).toList();
            assertFalse(runtime.detect(exec), "nothing in its mappings' names says CPython");
            MapEntry libc = exec.stream().filter(m -> m.path().contains("libc.so")).findFirst().orElseThrow();
            assertFalse(runtime.detectFile(libc, Path.of(libc.path())), "libc is no interpreter");
            MapEntry m = exec.stream().filter(e -> e.path().equals(myapp.toString())).findFirst().orElseThrow();
            assertTrue(runtime.detectFile(m, myapp), "its symbols: _PyRuntime and _PyEval_EvalFrameDefault");
            assertTrue(runtime.detect(exec), "known by its identity from then on");
            assertTrue(runtime.fileTable(m, myapp, dev.loupe.unwinder.ehframe.UnwindTableBuilder.build(myapp)).isPresent(),
                    "the interpreter's table");
            assertTrue(runtime.open((int) p.pid(), "myapp").isPresent(), "opened");
            assertEquals(1L, runtime.counters().get("found_by_content"));
            assertEquals(1L, runtime.counters().get("binaries_read"));
        } finally {
            p.destroyForcibly();
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    /** Overwrites the {@code Py_Version} constant of a copy of a 3.11+ binary with {@code hex}. */
    static void patchPyVersion(Path binary, int hex) throws Exception {
        PythonSymbols syms = PythonSymbols.read(binary);
        long at = syms.vaddr(PythonSymbols.VERSION);
        assertTrue(at >= 0, binary + " has Py_Version");
        for (LoadSegment s : syms.loadSegments()) {
            if (at >= s.vaddr() && at + 4 <= s.vaddr() + s.fileSize()) {
                try (FileChannel ch = FileChannel.open(binary, StandardOpenOption.WRITE)) {
                    ch.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, hex), s.offset() + (at - s.vaddr()));
                }
                return;
            }
        }
        throw new AssertionError("Py_Version not in a segment's file part");
    }
}
