package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.proc.ProcessRegistry;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.ManagedRuntime;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import dev.loupe.unwinder.runtime.RuntimeProcess;
import dev.loupe.unwinder.runtime.RuntimeRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/**
 * The runtime seam as the symbolizer uses it, with a runtime of the test's own (what a new runtime plugs in): it is
 * detected from the mappings and opened once per process start, whoever asks; it names tagged frames and code in
 * anonymous memory with file, line, inlined callers and a mapping of its naming; it drops the native frames it
 * replaces; and the symbolizer's hints say when code was left unnamed.
 */
class RuntimeSeamTest {
    private static final long JIT = JitPerfMapTest.JIT;
    private static final String JIT_LINE = JitPerfMapTest.JIT_LINE;
    private static final String VM_LINE = "7f2000000000-7f2000010000 r-xp 00000000 08:01 4242 /opt/vm/libfakevm.so";

    @TempDir
    Path dir;

    /** A runtime present in processes that map libfakevm.so; it knows JIT code in [JIT, JIT + 0x1000) only. */
    static final class FakeVm implements ManagedRuntime {
        final List<String> opened = new ArrayList<>();
        final List<Integer> closed = new ArrayList<>();
        final Set<String> replaced;
        final boolean fromSamples;
        String detectedSuffix = "/libfakevm.so";

        FakeVm(Set<String> replaced) {
            this(replaced, false);
        }

        FakeVm(Set<String> replaced, boolean fromSamples) {
            this.replaced = replaced;
            this.fromSamples = fromSamples;
        }

        @Override
        public boolean opensFromSampledMappings() {
            return fromSamples;
        }

        @Override
        public String name() {
            return "fakevm";
        }

        @Override
        public boolean detect(List<MapEntry> executable) {
            return ManagedRuntime.anyMapping(executable, m -> m.path().endsWith(detectedSuffix) || m.path().endsWith("/libc.so.6"));
        }

        @Override
        public Set<FrameType> frameTypes() {
            return Set.of(FrameType.HOTSPOT_METHOD);
        }

        @Override
        public Optional<RuntimeProcess> open(int pid, String exe) {
            opened.add(pid + ":" + exe);
            return Optional.of(new RuntimeProcess() {
                @Override
                public RuntimeFrame taggedFrame(FrameType type, long value) {
                    if (value == 0xbeef) { // an interpreter's frame that knows its function's first line (CPython's)
                        return RuntimeFrame.at("vm.started", "/srv/vm.src", 12, 9, "[interpreted] vm");
                    }
                    return value == 0xdead ? new RuntimeFrame(null, null, 0, List.of(), "[interpreted] vm")
                            : new RuntimeFrame("vm.method_" + Long.toHexString(value), "/srv/vm.src", (int) value & 0xff, List.of(),
                            "[interpreted] vm");
                }

                @Override
                public RuntimeFrame code(long address, boolean callSite, long now) {
                    return address - JIT < 0x1000 ? new RuntimeFrame("jit.outer", "/srv/jit.src", callSite ? 11 : 10,
                            List.of("jit.inner"), "[jit] vm") : null;
                }

                @Override
                public boolean replacesNative(String function) {
                    return replaced.contains(function);
                }

                @Override
                public void close() {
                    closed.add(pid);
                }
            });
        }
    }

    private static long address(List<Object[]> nm, String name) {
        return (Long) nm.stream().filter(x -> x[1].equals(name)).findFirst().orElseThrow(() -> new AssertionError(name))[0];
    }

    private static List<Frame> stack(Symbolizer s, int pid, long startTicks, List<Integer> hints, long... addrs) {
        List<Frame> out = new ArrayList<>();
        hints.add(s.symbolizeUser(pid, startTicks * ProcessRegistry.NANOS_PER_TICK, addrs, addrs.length, out));
        return out;
    }

    @Test
    void aRuntimeNamesItsFramesWithFileLineInlinedCallersAndAMappingOfItsOwn() throws Exception {
        Path proc = dir.resolve("proc");
        ProcSymbolizerTest.fakeProcess(proc, 500, 1000, VM_LINE, JIT_LINE);
        Files.createSymbolicLink(proc.resolve("500/exe"), dir.resolve("usr/bin/vm"));
        ProcSymbolizerTest.Clock clock = new ProcSymbolizerTest.Clock();
        ProcessRegistry registry = new ProcessRegistry(proc, 1 << 10);
        FakeVm vm = new FakeVm(Set.of());
        RuntimeRegistry runtimes = new RuntimeRegistry(List.of(vm), registry, clock);
        Symbolizer.Options o = new Symbolizer.Options(proc, dir.resolve("none"), 1 << 20, clock);
        List<Integer> hints = new ArrayList<>();
        try (Symbolizer cpu = Symbolizer.create(o, registry, runtimes); Symbolizer latency = Symbolizer.create(o, registry, runtimes)) {
            long tagged = FrameType.HOTSPOT_METHOD.frame(0x7f30_0000_1234L);
            List<Frame> f = stack(cpu, 500, 1000, hints, JIT + 0x10, tagged, JIT + 0x2000, FrameType.HOTSPOT_METHOD.frame(0xbeef),
                    FrameType.HOTSPOT_METHOD.frame(0xdead));
            assertEquals("jit.outer", f.get(0).function());
            assertEquals(List.of("jit.inner"), f.get(0).inlined());
            assertEquals("/srv/jit.src", f.get(0).file());
            assertEquals(10, f.get(0).line(), "the leaf is a sampled pc, not a call site");
            assertEquals("[jit] vm", f.get(0).mapping().path());
            assertEquals(JIT, f.get(0).mapping().start());

            assertEquals("vm.method_7f3000001234", f.get(1).function());
            assertEquals(0x34, f.get(1).line());
            assertEquals("[interpreted] vm", f.get(1).mapping().path());
            assertEquals(FrameType.HOTSPOT_METHOD.rangeStart(), f.get(1).mapping().start());
            assertEquals(FrameType.HOTSPOT_METHOD.rangeEnd(), f.get(1).mapping().limit());

            assertNull(f.get(2).function(), "code the runtime does not know");
            assertSame(f.get(0).mapping(), f.get(2).mapping(), "the mapping keeps the runtime's name");
            assertEquals(List.of(), f.get(1).sourceLines(), "no start line given: the file and line alone");
            assertEquals("/srv/vm.src", f.get(3).file());
            assertEquals(12, f.get(3).line());
            assertEquals(List.of(new dev.loupe.unwinder.lines.SourceLine("vm.started", "/srv/vm.src", 12, 9)), f.get(3).sourceLines(),
                    "the function's first line goes to the profile as the one source line that carries it");
            assertEquals("[interpreted Java method]", f.get(4).function(), "a tagged frame the runtime cannot name");
            assertSame(f.get(1).mapping(), f.get(4).mapping(), "one mapping per process and frame type");
            assertEquals(0, hints.get(0), "unnamed code in a mapping the runtime names is its own to read again; the last frame is tagged");

            List<Frame> g = stack(latency, 500, 1000, hints, JIT + 0x2000, JIT + 0x21);
            assertEquals(11, g.get(1).line(), "a caller's return address is looked up as a call site");
            assertEquals(Symbolizer.UNNAMED_CODE | Symbolizer.ENDS_IN_RUNTIME_CODE, hints.get(1),
                    "this symbolizer had not seen the runtime name that mapping when it met the unnamed frame; the last is the runtime's code");
            assertEquals(List.of("500:vm"), vm.opened, "one open for both symbolizers");

            // The pid is reused: the old process's runtime is closed, the new one's opened.
            ProcSymbolizerTest.fakeProcess(proc, 500, 2000, VM_LINE, JIT_LINE);
            clock.advance(Duration.ofMillis(10));
            assertEquals("jit.outer", stack(cpu, 500, 2000, hints, JIT + 0x10).get(0).function());
            assertEquals(List.of("500:vm", "500:vm"), vm.opened);
            assertEquals(List.of(500), vm.closed);
            // It exits: the registry's exit closes it.
            runtimes.exited(500, 2000);
            assertEquals(List.of(500, 500), vm.closed);
        }
    }

    /**
     * JIT code in memory the process's maps as last read do not have (a code heap that grew since: maps are re-read at
     * most every 2 s) is named by the runtime when the sample carries the anonymous mapping the walk found it in.
     */
    @Test
    void codeInAMappingNewerThanTheMapsIsNamedByTheRuntimeFromTheSamplesMapping() throws Exception {
        Path proc = dir.resolve("proc");
        ProcSymbolizerTest.fakeProcess(proc, 501, 1000, VM_LINE); // no JIT mapping in its maps
        Files.createSymbolicLink(proc.resolve("501/exe"), dir.resolve("usr/bin/vm"));
        ProcSymbolizerTest.Clock clock = new ProcSymbolizerTest.Clock();
        ProcessRegistry registry = new ProcessRegistry(proc, 1 << 10);
        RuntimeRegistry runtimes = new RuntimeRegistry(List.of(new FakeVm(Set.of())), registry, clock);
        Symbolizer.Options o = new Symbolizer.Options(proc, dir.resolve("none"), 1 << 20, clock);
        try (Symbolizer s = Symbolizer.create(o, registry, runtimes)) {
            long[] anon = {JIT, JIT + 0x1000, 0, 0, 0, SampledMappings.ANONYMOUS};
            long[] addrs = {JIT + 0x10, JIT + 0x21};
            List<Frame> out = new ArrayList<>();
            s.symbolizeUser(501, 1000 * ProcessRegistry.NANOS_PER_TICK, addrs, 2, anon, out);
            assertEquals("jit.outer", out.get(0).function());
            assertEquals("[jit] vm", out.get(0).mapping().path());
            assertEquals(JIT, out.get(0).mapping().start());
            assertEquals(11, out.get(1).line(), "a caller's return address is a call site");
            assertEquals(2, s.stats().framesFromSampledMappings());

            // The same addresses without the walk's mapping: in no mapping, unnamed.
            out.clear();
            clock.advance(Duration.ofSeconds(3));
            s.symbolizeUser(501, 1000 * ProcessRegistry.NANOS_PER_TICK, addrs, 2, new long[0], out);
            assertNull(out.get(0).function());
            assertNull(out.get(0).mapping());
            // A file's mapping the walk found is not anonymous code: the runtime is not asked.
            out.clear();
            long[] file = {JIT, JIT + 0x1000, 0, 0x801, 4243, SampledMappings.FILE};
            s.symbolizeUser(501, 1000 * ProcessRegistry.NANOS_PER_TICK, addrs, 2, file, out);
            assertNull(out.get(0).function());
        }
    }

    /**
     * Issue 25: a short-lived process nobody read /proc for (gone now) has its tagged frames named by a runtime that
     * opens from the sample's mappings (its interpreter binary, cached by an earlier process, found by device and
     * inode), with no read of its maps; a runtime that does not say so is not opened from them (the frame stays
     * "[interpreted Java method]" once /proc, asked then, cannot be read).
     */
    @Test
    void aGoneProcessTaggedFramesAreNamedByARuntimeOpenedFromTheSamplesMappings() throws Exception {
        Path bin = TestPrograms.compile(dir, "interp", TestPrograms.LOOPER);
        Process earlier = new ProcessBuilder(bin.toString()).start();
        try {
            List<MapEntry> maps = List.of();
            for (int i = 0; i < 200 && maps.stream().noneMatch(m -> m.path().contains("libc.so")); i++) {
                Thread.sleep(10); // exec'd, libraries mapped
                maps = ProcMaps.read(Path.of("/proc"), (int) earlier.pid());
            }
            MapEntry text = maps.stream().filter(e -> e.executable() && e.path().equals(bin.toString())).findFirst().orElseThrow();
            long spin = TestPrograms.runtimeAddress(bin, TestPrograms.loads(bin), maps, TestPrograms.nmAddress(bin, "spin_here"));
            long kernelDevice = ((long) text.devMajor() << 20) | text.devMinor();
            long[] sampled = {text.start(), text.end(), text.offset(), kernelDevice, text.inode(), SampledMappings.FILE};
            for (boolean fromSamples : new boolean[] {true, false}) {
                ProcSymbolizerTest.Clock clock = new ProcSymbolizerTest.Clock();
                ProcessRegistry registry = new ProcessRegistry(Path.of("/proc"), 1 << 10);
                FakeVm vm = new FakeVm(Set.of(), fromSamples);
                vm.detectedSuffix = "/interp";
                try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(Path.of("/proc"), Path.of("/proc/kallsyms"), 8 << 20,
                        clock), registry, new RuntimeRegistry(List.of(vm), registry, clock))) {
                    List<Frame> first = new ArrayList<>();
                    s.symbolizeUser((int) earlier.pid(), new long[] {spin}, 1, first); // the earlier process caches the binary
                    assertEquals("spin_here", first.get(0).function());
                    vm.opened.clear();
                    long reads = s.stats().mapsReads();
                    int gone = 4_194_002; // no such process: its /proc cannot be read
                    List<Frame> out = new ArrayList<>();
                    s.symbolizeUser(gone, 77 * ProcessRegistry.NANOS_PER_TICK,
                            new long[] {FrameType.HOTSPOT_METHOD.frame(0x1234), spin + 1}, 2, sampled, out);
                    assertEquals("spin_here", out.get(1).function(), out.toString());
                    if (fromSamples) {
                        assertEquals("vm.method_1234", out.get(0).function(), out.toString());
                        assertEquals("[interpreted] vm", out.get(0).mapping().path());
                        assertEquals(List.of(gone + ":?"), vm.opened, "opened once, from the sample (no exe to read)");
                        assertEquals(reads, s.stats().mapsReads(), "no /proc/PID/maps read");
                    } else {
                        assertEquals("[interpreted Java method]", out.get(0).function(), out.toString());
                        assertEquals(List.of(), vm.opened);
                        assertEquals(reads + 1, s.stats().mapsReads(), "the tagged frame asked /proc, which is gone");
                    }
                }
            }
        } finally {
            earlier.destroyForcibly();
            earlier.waitFor();
        }
    }

    @Test
    void aProcessWithoutTheRuntimeNeverOpensIt() throws Exception {
        Path proc = dir.resolve("proc");
        ProcSymbolizerTest.fakeProcess(proc, 600, 1000, JIT_LINE);
        ProcSymbolizerTest.Clock clock = new ProcSymbolizerTest.Clock();
        ProcessRegistry registry = new ProcessRegistry(proc, 1 << 10);
        FakeVm vm = new FakeVm(Set.of());
        List<Integer> hints = new ArrayList<>();
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 1 << 20, clock), registry,
                new RuntimeRegistry(List.of(vm), registry, clock))) {
            List<Frame> f = stack(s, 600, 1000, hints, JIT + 0x10, FrameType.HOTSPOT_METHOD.frame(0x1000));
            assertNull(f.get(0).function());
            assertEquals("", f.get(0).mapping().path());
            assertEquals("[interpreted Java method]", f.get(1).function());
            assertNull(f.get(1).mapping(), "no runtime to name its mapping");
            assertEquals(List.of(), vm.opened);
            assertEquals(Symbolizer.UNNAMED_CODE, hints.get(0));
        }
    }

    /** A native frame the runtime's frames stand for is left out (a real process: libc's symbols name it). */
    @Test
    void nativeFramesARuntimeReplacesAreLeftOut() throws Exception {
        Process sleep = new ProcessBuilder("/bin/sleep", "30").start();
        try {
            Path procRoot = Path.of("/proc");
            int pid = (int) sleep.pid();
            List<MapEntry> maps = List.of();
            for (int i = 0; i < 200 && maps.stream().noneMatch(m -> m.path().endsWith("/libc.so.6")); i++) {
                maps = ProcMaps.read(procRoot, pid); // exec'd and libc mapped: a few milliseconds
                TimeUnit.MILLISECONDS.sleep(5);
            }
            Path libc = Path.of(maps.stream().filter(m -> m.path().endsWith("/libc.so.6")).findFirst().orElseThrow().path());
            List<long[]> loads = TestPrograms.loads(libc);
            List<Object[]> dynamic = TestPrograms.nmFunctions(libc, true);
            long getpid = TestPrograms.runtimeAddress(libc, loads, maps, address(dynamic, "getpid") + 1);
            long getppid = TestPrograms.runtimeAddress(libc, loads, maps, address(dynamic, "getppid") + 1);
            ProcessRegistry registry = new ProcessRegistry(procRoot, 1 << 10);
            Set<String> replaced = new java.util.HashSet<>();
            FakeVm vm = new FakeVm(replaced);
            List<Integer> hints = new ArrayList<>();
            try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults(), registry,
                    new RuntimeRegistry(List.of(vm), registry, System::nanoTime))) {
                List<String> all = stack(s, pid, 0, hints, getpid, getppid + 1, getpid + 1).stream().map(Frame::function).toList();
                assertEquals(3, all.size(), all.toString());
                assertEquals(all.get(0), all.get(2), all.toString());
                assertEquals(false, all.get(0).equals(all.get(1)), "two functions (or their aliases): " + all);
                replaced.add(all.get(1));
                List<String> f = stack(s, pid, 0, hints, getpid, getppid + 1, getpid + 1).stream().map(Frame::function).toList();
                assertEquals(List.of(all.get(0), all.get(0)), f, all.get(1) + " is left out");
                assertEquals(1, vm.opened.size());
            }
        } finally {
            sleep.destroyForcibly().waitFor();
        }
    }
}
