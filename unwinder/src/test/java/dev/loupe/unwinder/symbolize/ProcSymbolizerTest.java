package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.proc.ProcessRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcSymbolizerTest {
    static final Path PROC = Path.of("/proc");

    @TempDir
    Path dir;
    private final List<Process> started = new ArrayList<>();

    @AfterEach
    void kill() throws InterruptedException {
        for (Process p : started) {
            p.destroyForcibly();
            p.waitFor();
        }
    }

    private Process start(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        started.add(p);
        // Wait until the program is exec'd and its libraries are mapped.
        for (int i = 0; i < 200; i++) {
            try {
                if (ProcMaps.read(PROC, (int) p.pid()).stream().anyMatch(m -> m.path().contains("libc.so"))) {
                    return p;
                }
            } catch (java.io.IOException ignored) {
                // not there yet
            }
            Thread.sleep(10);
        }
        throw new AssertionError("process " + p.pid() + " did not start");
    }

    private static Frame frame(Symbolizer s, int pid, long addr) {
        List<Frame> out = new ArrayList<>();
        s.symbolizeUser(pid, new long[] {addr}, 1, out);
        assertEquals(1, out.size());
        return out.get(0);
    }

    private static String symbolize(Symbolizer s, int pid, long addr) {
        return frame(s, pid, addr).function();
    }

    /** Every function of a gcc-built program, symbolized in the running process, as addr2line names it. */
    @ParameterizedTest
    @CsvSource({"pie,-O0", "pie,-O2", "nopie,-O0", "nopie,-O2"})
    void programMatchesAddr2line(String kind, String opt) throws Exception {
        String[] pic = kind.equals("pie") ? new String[] {"-fPIE", "-pie"} : new String[] {"-fno-pie", "-no-pie"};
        Path bin = TestPrograms.compile(dir, "looper-" + kind, TestPrograms.LOOPER, pic[0], pic[1], opt, "-g");
        assertEquals(kind.equals("pie") ? ElfFile.ET_DYN : ElfFile.ET_EXEC, ElfFile.open(bin).type());
        Process p = start(bin.toString());
        int pid = (int) p.pid();
        List<MapEntry> maps = ProcMaps.read(PROC, pid);
        List<long[]> loads = TestPrograms.loads(bin);
        List<Object[]> fns = TestPrograms.functions(bin);
        List<Long> vaddrs = new ArrayList<>();
        for (Object[] sym : fns) {
            vaddrs.add((Long) sym[0] + Math.min(3, Math.max(0, (Long) sym[1] - 1)));
        }
        List<String> a2l = TestPrograms.addr2line(bin, vaddrs);
        try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
            for (int i = 0; i < vaddrs.size(); i++) {
                long runtime = TestPrograms.runtimeAddress(bin, loads, maps, vaddrs.get(i));
                if (kind.equals("pie")) {
                    assertTrue(runtime != vaddrs.get(i), "PIE is loaded at a bias");
                } else {
                    assertEquals((long) vaddrs.get(i), runtime, "non-PIE runs at its link address");
                }
                assertEquals(a2l.get(i), symbolize(s, pid, runtime), kind + opt + " " + fns.get(i)[2]);
            }
            long spin = TestPrograms.runtimeAddress(bin, loads, maps, TestPrograms.nmAddress(bin, "spin_here"));
            List<Frame> frames = new ArrayList<>();
            s.symbolizeUser(pid, new long[] {spin + 4, spin + 5}, 2, frames);
            assertEquals(spin + 4, frames.get(0).address(), "leaf: exact address");
            assertEquals(spin + 4, frames.get(1).address(), "caller: return address - 1");
            assertEquals("spin_here", frames.get(1).function());
            assertFalse(frames.get(0).kernel());
            MappingRef m = frames.get(0).mapping();
            MapEntry line = maps.stream().filter(e -> e.executable() && e.path().equals(bin.toString())).findFirst().orElseThrow();
            assertEquals(bin.toString(), m.path());
            assertEquals(line.start(), m.start());
            assertEquals(line.end(), m.limit());
            assertEquals(line.offset(), m.fileOffset());
            assertEquals(ElfFile.open(bin).buildId().orElseThrow(), m.buildId());
            assertTrue(m.hasFunctions());
            assertSame(m, frames.get(1).mapping(), "one MappingRef instance per mapping");
            assertEquals(0, s.stats().binaryFailures());
        }
    }

    /**
     * libc in a running process: every nm -D function resolves to one of its aliases; getpid and a static
     * function (_int_malloc, only in the debug file /usr/lib/debug/.build-id/xx/rest.debug of libc6-dbg)
     * agree with addr2line on libc at the same address.
     */
    @Test
    void libcMatchesNmAndAddr2line() throws Exception {
        Path bin = TestPrograms.compile(dir, "looper", TestPrograms.LOOPER);
        Process p = start(bin.toString());
        int pid = (int) p.pid();
        List<MapEntry> maps = ProcMaps.read(PROC, pid);
        Path libc = Path.of(maps.stream().filter(m -> m.path().contains("libc.so")).findFirst().orElseThrow().path());
        List<long[]> loads = TestPrograms.loads(libc);
        Path debug = TestPrograms.buildIdPath(Path.of("/usr/lib/debug"), ElfFile.open(libc).buildId().orElseThrow());
        assertTrue(Files.exists(debug), "no debug file for " + libc + " at " + debug + " (package libc6-dbg; ./loupe test installs it)");
        Map<Long, Set<String>> aliases = new HashMap<>();
        for (Object[] sym : TestPrograms.nmFunctions(debug, false)) {
            aliases.computeIfAbsent((Long) sym[0], k -> new HashSet<>()).add((String) sym[1]);
        }
        try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
            int n = 0;
            for (Object[] sym : TestPrograms.nmFunctions(libc, true)) {
                long vaddr = (Long) sym[0];
                String got = symbolize(s, pid, TestPrograms.runtimeAddress(libc, loads, maps, vaddr));
                assertTrue(aliases.get(vaddr).contains(got), got + " not in " + aliases.get(vaddr));
                n++;
            }
            assertTrue(n > 1000, "checked " + n);
            long getpid = TestPrograms.nmFunctions(libc, true).stream().filter(x -> x[1].equals("getpid"))
                    .map(x -> (Long) x[0]).findFirst().orElseThrow();
            String ours = symbolize(s, pid, TestPrograms.runtimeAddress(libc, loads, maps, getpid + 2));
            assertEquals("getpid", ours, "preferred alias");
            String a2l = TestPrograms.addr2line(libc, List.of(getpid + 2)).get(0);
            assertTrue(aliases.get(getpid).contains(a2l), "addr2line's " + a2l + " names the same function as our " + ours);
            long intMalloc = TestPrograms.nmAddress(debug, "_int_malloc");
            assertEquals("_int_malloc", TestPrograms.addr2line(libc, List.of(intMalloc + 20)).get(0));
            assertEquals("_int_malloc", symbolize(s, pid, TestPrograms.runtimeAddress(libc, loads, maps, intMalloc + 20)));
            assertEquals(1, s.stats().debugFiles());
        }
    }

    /**
     * A stripped library (built and split here) in a container: its static function is named from the debug
     * file under the process's root, found by build id; without that file it stays unnamed.
     */
    @Test
    void strippedLibraryIsNamedFromDebugFileInProcessRoot() throws Exception {
        Path lib = TestPrograms.compile(dir, "libsplit.so", TestPrograms.STATIC_IN_LIBRARY, TestPrograms.LIBRARY_FLAGS);
        long middle = TestPrograms.nmAddress(lib, "static_middle");
        long after = TestPrograms.nmAddress(lib, "exported_after");
        String id = ElfFile.open(lib).buildId().orElseThrow();
        Path proc = dir.resolve("proc");
        Path debug = TestPrograms.buildIdPath(proc.resolve("90/root/usr/lib/debug"), id);
        Files.createDirectories(debug.getParent());
        TestPrograms.splitDebugFile(lib, debug, "--strip-unneeded");
        long[] text = TestPrograms.loads(lib).stream().filter(l -> l[4] == 1).findFirst().orElseThrow();
        assertEquals(text[0], text[1], "the text segment's vaddr is its file offset");
        long base = 0x7f0000000000L;
        for (int pid : new int[] {90, 91}) {
            Files.createDirectories(proc.resolve(pid + "/root/opt"));
            Files.copy(lib, proc.resolve(pid + "/root/opt/libsplit.so"));
            // Another inode each: two files, each parsed (and its debug file looked up in its own root).
            fakeProcess(proc, pid, 100, Long.toHexString(base + text[0]) + "-" + Long.toHexString(base + text[0] + 0x1000)
                    + " r-xp " + Long.toHexString(text[0]) + " 08:01 " + (880 + pid) + " /opt/libsplit.so");
        }
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 1 << 20, new Clock()))) {
            assertEquals("static_middle", symbolize(s, 90, base + middle + 1));
            assertEquals("exported_after", symbolize(s, 90, base + after + 1));
            assertEquals(1, s.stats().debugFiles());
            assertNull(symbolize(s, 91, base + middle + 1), "no debug file in 91's root: .dynsym does not name it");
            assertEquals("exported_after", symbolize(s, 91, base + after + 1));
            assertEquals(1, s.stats().debugFiles());
            assertEquals(2, s.stats().binaries());
        }
    }

    @Test
    void deletedBinaryResolvesThroughMapFiles() throws Exception {
        Path bin = TestPrograms.compile(dir, "doomed", TestPrograms.LOOPER);
        long vaddr = TestPrograms.nmAddress(bin, "spin_here");
        List<long[]> loads = TestPrograms.loads(bin);
        Process p = start(bin.toString());
        List<MapEntry> maps = ProcMaps.read(PROC, (int) p.pid());
        long addr = TestPrograms.runtimeAddress(bin, loads, maps, vaddr);
        Files.delete(bin);
        Files.writeString(bin, "a different file under the old name"); // the root/ fallback must not be used
        assertTrue(ProcMaps.read(PROC, (int) p.pid()).stream().anyMatch(MapEntry::deleted));
        try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
            Frame f = frame(s, (int) p.pid(), addr);
            assertEquals("spin_here", f.function());
            assertEquals(bin.toString(), f.mapping().path(), "no \" (deleted)\" in the mapping name");
            assertEquals(0, s.stats().binaryFailures());
        }
    }

    static final String MAPPER = """
            #include <fcntl.h>
            #include <stdio.h>
            #include <sys/mman.h>
            #include <unistd.h>
            int main(int argc, char **argv) {
                int fd = open(argv[1], O_RDONLY);
                void *p = mmap(0, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
                printf("%lx\\n", (unsigned long)p);
                fflush(stdout);
                pause();
            }
            """;

    /** Captures this class's log records (WARNING and, when enabled, DEBUG = FINE). */
    static final class Captured extends Handler implements AutoCloseable {
        final List<LogRecord> records = new CopyOnWriteArrayList<>();
        private final Logger log = Logger.getLogger(ProcSymbolizer.class.getName());
        private final Level before = log.getLevel();

        Captured(Level level) {
            log.setLevel(level);
            setLevel(level);
            log.addHandler(this);
        }

        List<String> messages(Level atLeast) {
            return records.stream().filter(r -> r.getLevel().intValue() >= atLeast.intValue()).map(LogRecord::getMessage).toList();
        }

        @Override
        public void publish(LogRecord r) {
            records.add(r);
        }

        @Override
        public void flush() {}

        @Override
        public void close() {
            log.removeHandler(this);
            log.setLevel(before);
        }
    }

    /** A text file, a truncated ELF and ELF-magic garbage mapped executable: frames kept, one warning each. */
    @Test
    void badFilesInMappingsAreLoggedOnceAndFramesKept() throws Exception {
        Path mapper = TestPrograms.compile(dir, "mapper", MAPPER);
        Path text = dir.resolve("not-elf.txt");
        Files.writeString(text, "hello ".repeat(1000));
        Path truncated = dir.resolve("truncated.so");
        Files.write(truncated, java.util.Arrays.copyOf(Files.readAllBytes(TestPrograms.LIBC), 4096));
        Path garbage = dir.resolve("garbage.so");
        byte[] g = new byte[8192];
        new java.util.Random(3).nextBytes(g);
        System.arraycopy(new byte[] {0x7f, 'E', 'L', 'F', 2, 1, 1, 0}, 0, g, 0, 8);
        g[18] = 62;
        g[19] = 0;
        Files.write(garbage, g);
        try (Captured log = new Captured(Level.INFO);
             Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
            List<Path> files = List.of(text, truncated, garbage);
            for (Path f : files) {
                // Two processes map the same bad file: it is parsed and logged once.
                for (int proc = 0; proc < 2; proc++) {
                    Process p = new ProcessBuilder(mapper.toString(), f.toString()).start();
                    started.add(p);
                    long base = Long.parseUnsignedLong(new BufferedReader(new InputStreamReader(p.getInputStream())).readLine(), 16);
                    for (int i = 0; i < 3; i++) {
                        Frame fr = frame(s, (int) p.pid(), base + 16 + i);
                        assertNull(fr.function());
                        assertEquals(base + 16 + i, fr.address());
                        assertEquals(f.toString(), fr.mapping().path());
                        assertFalse(fr.mapping().hasFunctions());
                    }
                }
                List<String> about = log.messages(Level.WARNING).stream().filter(w -> w.contains(f.toString())).toList();
                assertEquals(1, about.size(), log.messages(Level.WARNING).toString());
                assertFalse(about.get(0).contains("map_files"), "names the file, not our way of reading it: " + about.get(0));
            }
            List<String> w = log.messages(Level.WARNING);
            assertTrue(w.stream().anyMatch(x -> x.contains(text + " (pid ") && x.contains("not an ELF file")), w.toString());
            assertTrue(w.stream().anyMatch(x -> x.contains(truncated.toString()) && x.contains("section header table beyond end of file")), w.toString());
            assertTrue(w.stream().anyMatch(x -> x.contains(garbage.toString())), w.toString());
            assertEquals(3, s.stats().binaryFailures());
        }
    }

    /** A process that exits keeps its cached mappings: samples still in flight resolve. */
    @Test
    void exitedProcessStillResolvesLateSamples() throws Exception {
        Path bin = TestPrograms.compile(dir, "shortlived", TestPrograms.LOOPER);
        Process p = start(bin.toString());
        int pid = (int) p.pid();
        long addr = TestPrograms.runtimeAddress(bin, TestPrograms.loads(bin), ProcMaps.read(PROC, pid), TestPrograms.nmAddress(bin, "spin_here"));
        Clock clock = new Clock();
        try (Captured log = new Captured(Level.FINE);
             Symbolizer s = Symbolizer.create(new Symbolizer.Options(PROC, Path.of("/proc/kallsyms"), 8 << 20, clock))) {
            assertEquals("spin_here", symbolize(s, pid, addr));
            p.destroyForcibly();
            p.waitFor();
            assertFalse(Files.exists(PROC.resolve(Integer.toString(pid))), "reaped");
            assertEquals("spin_here", symbolize(s, pid, addr), "late sample");
            clock.advance(Duration.ofSeconds(16)); // a refresh is due, but the process is gone
            for (int i = 0; i < 50; i++) {
                assertEquals("spin_here", symbolize(s, pid, addr), "late sample after the refresh");
            }
            assertEquals(2, s.stats().mapsReads(), "one read, one failed refresh; not one per sample");
            assertEquals(1, s.stats().mapsReadFailures());
            assertEquals(1, log.messages(Level.FINE).stream().filter(m -> m.contains("/proc/" + pid)).count());
        }
    }

    /**
     * Issue 25: a short process nobody read /proc for, which has exited, is named from the mappings the kernel's walk
     * found (device, inode, offset) by the binary an earlier process of the same file left in the cache, without a
     * read of its /proc; a file never seen (an unknown inode) is the one frame /proc is asked for, and stays unnamed.
     */
    @Test
    void anExitedProcessNobodyReadIsNamedFromTheMappingsItsSampleCarries() throws Exception {
        Path bin = TestPrograms.compile(dir, "churner", TestPrograms.LOOPER);
        Process earlier = start(bin.toString());
        int earlierPid = (int) earlier.pid();
        List<MapEntry> maps = ProcMaps.read(PROC, earlierPid);
        MapEntry text = maps.stream().filter(e -> e.executable() && e.path().equals(bin.toString())).findFirst().orElseThrow();
        long spin = TestPrograms.runtimeAddress(bin, TestPrograms.loads(bin), maps, TestPrograms.nmAddress(bin, "spin_here"));
        long helper = TestPrograms.runtimeAddress(bin, TestPrograms.loads(bin), maps, TestPrograms.nmAddress(bin, "helper_two"));
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(PROC, Path.of("/proc/kallsyms"), 8 << 20, new Clock()))) {
            assertEquals("spin_here", symbolize(s, earlierPid, spin)); // the earlier process, read through /proc
            earlier.destroyForcibly();
            earlier.waitFor();
            long reads = s.stats().mapsReads();
            int gone = 4_194_000; // no such process (pid_max is 4194304): its /proc cannot be read
            assertFalse(Files.exists(PROC.resolve(Integer.toString(gone))));
            long kernelDevice = ((long) text.devMajor() << 20) | text.devMinor();
            long[] sampled = {
                    text.start(), text.end(), text.offset(), kernelDevice, text.inode(), SampledMappings.FILE,
                    0x10000, 0x20000, 0, kernelDevice, text.inode() + 999_999, SampledMappings.FILE}; // a file never seen
            List<Frame> out = new ArrayList<>();
            s.symbolizeUser(gone, 1234 * ProcessRegistry.NANOS_PER_TICK, new long[] {spin + 2, helper + 5}, 2, sampled, out);
            assertEquals(List.of("spin_here", "helper_two"), out.stream().map(Frame::function).toList());
            assertEquals(bin.toString(), out.get(0).mapping().path(), "the path the file was last mapped from");
            assertEquals(text.start(), out.get(0).mapping().start());
            assertEquals(reads, s.stats().mapsReads(), "no /proc read for it");
            assertEquals(2, s.stats().framesFromSampledMappings());

            out.clear();
            s.symbolizeUser(gone, 1234 * ProcessRegistry.NANOS_PER_TICK, new long[] {0x10010, spin + 2}, 2, sampled, out);
            assertNull(out.get(0).function(), "an unknown file names nothing");
            assertEquals("spin_here", out.get(1).function());
            assertEquals(reads + 1, s.stats().mapsReads(), "its frame, and only it, asked /proc (which failed)");
            out.clear();
            s.symbolizeUser(gone, 1234 * ProcessRegistry.NANOS_PER_TICK, new long[] {spin + 2}, 1, sampled, out);
            assertEquals("spin_here", out.get(0).function(), "a failed read does not stop the next sample's naming");

            // The vdso, which the kernel reports without a file: the host's image, named from our own.
            MapEntry vdso = dev.loupe.unwinder.proc.Vdso.mapping(Path.of("/proc/self")).orElseThrow();
            ElfFile image = ElfFile.parse("[vdso]", java.nio.ByteBuffer.wrap(dev.loupe.unwinder.proc.Vdso.read(Path.of("/proc/self"), vdso)));
            dev.loupe.unwinder.elf.SymbolTable syms = image.symbols();
            int fn = -1;
            for (int i = 0; i < syms.size() && fn < 0; i++) {
                if (syms.name(i).contains("clock_gettime") && syms.symbolSize(i) > 4) {
                    fn = i;
                }
            }
            assertTrue(fn >= 0, "the vdso has clock_gettime");
            long inVdso = vdso.start() + syms.start(fn) + 2; // the vdso image is linked at vaddr 0
            long[] withVdso = {vdso.start(), vdso.end(), 0, 0, 0, SampledMappings.VDSO};
            out.clear();
            s.symbolizeUser(gone + 1, 1234 * ProcessRegistry.NANOS_PER_TICK, new long[] {inVdso}, 1, withVdso, out);
            assertEquals(syms.name(fn), out.get(0).function());
            assertEquals("[vdso]", out.get(0).mapping().path());
        }
    }

    /** A pid we never saw and cannot read: bare frames, /proc retried at most every 2 s, logged once. */
    @Test
    void unreadableProcessGivesBareFramesAndIsNotReReadPerSample() {
        Clock clock = new Clock();
        int pid = Integer.MAX_VALUE - 1; // above pid_max: never exists
        try (Captured log = new Captured(Level.FINE);
             Symbolizer s = Symbolizer.create(new Symbolizer.Options(PROC, Path.of("/proc/kallsyms"), 8 << 20, clock))) {
            for (int i = 0; i < 100; i++) {
                List<Frame> out = new ArrayList<>();
                s.symbolizeUser(pid, new long[] {0x401000, 0x401234}, 2, out);
                assertEquals(List.of(new Frame(0x401000, null, null, false), new Frame(0x401233, null, null, false)), out);
            }
            assertEquals(1, s.stats().mapsReads());
            clock.advance(Duration.ofSeconds(3));
            frame(s, pid, 0x401000);
            frame(s, pid, 0x401000);
            assertEquals(2, s.stats().mapsReads());
            assertEquals(2, s.stats().mapsReadFailures());
            assertEquals(202, s.stats().unresolvedFrames());
            assertEquals(1, log.messages(Level.FINE).stream().filter(m -> m.contains("/proc/" + pid)).count(), "logged once per pid");
        }
    }

    @Test
    void missingProcRootAndKallsymsGiveBareFrames() {
        try (Symbolizer none = Symbolizer.create(new Symbolizer.Options(dir.resolve("no-proc"), dir.resolve("no-kallsyms"),
                1 << 20, System::nanoTime))) {
            List<Frame> out = new ArrayList<>();
            none.symbolizeUser(1, new long[] {0x401000, 0x401234}, 2, out);
            assertEquals(2, out.size(), "never dropped");
            assertNull(out.get(0).mapping());
            assertEquals(0x401000, out.get(0).address());
            out.clear();
            none.symbolizeKernel(new long[] {0xffffffff81000000L, 0xffffffff81000010L}, 2, out);
            assertEquals(List.of(new Frame(0xffffffff81000000L, null, null, true), new Frame(0xffffffff8100000fL, null, null, true)), out);
            assertEquals(1, none.stats().mapsReadFailures());
            assertEquals(0, none.stats().kernelSymbols());
        }
    }

    /** A time source the test moves. */
    static final class Clock implements java.util.function.LongSupplier {
        final AtomicLong nanos = new AtomicLong(1_000_000_000_000L);

        @Override
        public long getAsLong() {
            return nanos.get();
        }

        void advance(Duration d) {
            nanos.addAndGet(d.toNanos());
        }
    }

    static void fakeProcess(Path proc, int pid, long startTime, String... mapsLines) throws Exception {
        Path d = Files.createDirectories(proc.resolve(Integer.toString(pid)));
        Files.writeString(d.resolve("stat"), pid + " (odd) name) S 1 1 1 0 -1 4194304 100 0 0 0 5 1 0 0 20 0 1 0 "
                + startTime + " 1000000 100 18446744073709551615\n");
        Files.writeString(d.resolve("maps"), String.join("\n", mapsLines) + "\n");
    }

    private static String symbolize(Symbolizer s, int pid, long startTicks, long addr) {
        List<Frame> out = new ArrayList<>();
        s.symbolizeUser(pid, startTicks * ProcessRegistry.NANOS_PER_TICK, new long[] {addr}, 1, out);
        return out.get(0).function();
    }

    @Test
    void idleProcessesAreDroppedAndBusyOnesKept() throws Exception {
        Path bin = TestPrograms.compile(dir, "idle", TestPrograms.LOOPER, "-fno-pie", "-no-pie");
        long spin = TestPrograms.nmAddress(bin, "spin_here");
        Path proc = dir.resolve("proc");
        for (int pid : new int[] {50, 51}) {
            Files.createDirectories(proc.resolve(pid + "/root/opt"));
            Files.copy(bin, proc.resolve(pid + "/root/opt/app"));
            fakeProcess(proc, pid, 1000, "401000-402000 r-xp 00001000 08:01 777 /opt/app");
        }
        Clock clock = new Clock();
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 8 << 20, clock))) {
            assertEquals("spin_here", symbolize(s, 50, 1000, spin));
            assertEquals("spin_here", symbolize(s, 51, 1000, spin));
            assertEquals(2, s.stats().processes());
            // 51 is sampled every 10 s for 70 s, 50 not at all: the sweep drops 50 and keeps 51.
            for (int i = 0; i < 7; i++) {
                clock.advance(Duration.ofSeconds(10));
                assertEquals("spin_here", symbolize(s, 51, 1000, spin));
            }
            assertEquals(1, s.stats().processes(), "the idle process is gone, the busy one kept");
            assertEquals("spin_here", symbolize(s, 50, 1000, spin), "a dropped process resolves when it shows up again");
            assertEquals(2, s.stats().processes());
        }
    }

    /**
     * A process whose files can no longer be opened (it exited after its maps were read) has its frames named by the
     * binary another process mapped from the same device and inode; a file never opened stays an address.
     */
    @Test
    void aProcessGoneBeforeItsFilesWereOpenedIsNamedByTheSameFileOfAnother() throws Exception {
        Path bin = TestPrograms.compile(dir, "gone", TestPrograms.LOOPER, "-fno-pie", "-no-pie");
        long spin = TestPrograms.nmAddress(bin, "spin_here");
        Path proc = dir.resolve("proc");
        Files.createDirectories(proc.resolve("70/root/opt"));
        Files.copy(bin, proc.resolve("70/root/opt/app"));
        fakeProcess(proc, 70, 1000, "401000-402000 r-xp 00001000 08:01 779 /opt/app");
        // 71 and 72 exited: their maps were read, their files cannot be opened (no root/ left).
        fakeProcess(proc, 71, 1001, "401000-402000 r-xp 00001000 08:01 779 /opt/app");
        fakeProcess(proc, 72, 1002, "401000-402000 r-xp 00001000 08:01 780 /opt/other");
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 8 << 20, new Clock()))) {
            assertEquals("spin_here", symbolize(s, 70, 1000, spin));
            assertEquals("spin_here", symbolize(s, 71, 1001, spin), "the same inode's binary, mapped by 70");
            assertNull(symbolize(s, 72, 1002, spin), "an inode nobody could open");
            assertEquals(1, s.stats().binaries());
            assertEquals(1, s.stats().unreadableBinaries());
        }
    }

    /**
     * Issue 25: a process whose maps were read (by the unwind tables, through the shared registry) but which exited
     * before the symbolizer opened its files (a churn's ls lives 2 ms) is named by the same file in the agent's own
     * root, checked by device and inode; a later process of that file is then named from its sample's mappings alone.
     * A name that is now another file (same path, another inode) names nothing.
     */
    @Test
    void aProcessGoneBeforeItsFilesWereOpenedIsNamedByTheSameFileInTheAgentsRoot() throws Exception {
        Path bin = TestPrograms.compile(dir, "brief", TestPrograms.LOOPER);
        ProcessRegistry registry = new ProcessRegistry(PROC, 1024);
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(PROC, Path.of("/proc/kallsyms"), 8 << 20, new Clock()), registry)) {
            Process p = start(bin.toString());
            int pid = (int) p.pid();
            List<MapEntry> maps = registry.read(pid).executable(); // the unwind tables read it: pushed to the symbolizer
            MapEntry text = maps.stream().filter(e -> e.path().equals(bin.toString())).findFirst().orElseThrow();
            long spin = TestPrograms.runtimeAddress(bin, TestPrograms.loads(bin), maps, TestPrograms.nmAddress(bin, "spin_here"));
            p.destroyForcibly();
            p.waitFor();
            assertFalse(Files.exists(PROC.resolve(pid + "/map_files")), "its files cannot be opened through /proc");
            Frame named = frame(s, pid, spin);
            assertEquals("spin_here", named.function(), named + " " + s.stats());
            assertEquals(bin.toString(), named.mapping().path());
            assertEquals(1, s.stats().mappingsFromOwnRoot());
            assertEquals(0, s.stats().unreadableBinaries());
            assertEquals(1, s.stats().mapsReadFailures(), "its own read failed: the registry's view of it named it");
            int gone = 4_194_001; // a later process of the same binary, never read, gone
            long kernelDevice = ((long) text.devMajor() << 20) | text.devMinor();
            long[] sampled = {text.start(), text.end(), text.offset(), kernelDevice, text.inode(), SampledMappings.FILE};
            List<Frame> out = new ArrayList<>();
            s.symbolizeUser(gone, 1234 * ProcessRegistry.NANOS_PER_TICK, new long[] {spin + 2}, 1, sampled, out);
            assertEquals("spin_here", out.get(0).function());
            assertEquals(1, s.stats().mapsReads(), "named without /proc");

            Process q = start(bin.toString());
            int qPid = (int) q.pid();
            List<MapEntry> qMaps = registry.read(qPid).executable();
            long qSpin = TestPrograms.runtimeAddress(bin, TestPrograms.loads(bin), qMaps, TestPrograms.nmAddress(bin, "spin_here"));
            q.destroyForcibly();
            q.waitFor();
            Path other = TestPrograms.compile(dir, "other", TestPrograms.LOOPER, "-DOTHER");
            Files.move(other, bin, java.nio.file.StandardCopyOption.REPLACE_EXISTING); // the name is another inode now
            try (Symbolizer fresh = Symbolizer.create(new Symbolizer.Options(PROC, Path.of("/proc/kallsyms"), 8 << 20, new Clock()),
                    registry)) {
                registry.processExited(qPid, registry.cached(qPid).orElseThrow().startTicks() + 1); // (not this one: kept)
                Frame f = frame(fresh, qPid, qSpin);
                assertNull(f.function(), "the path names another file now: " + f);
                assertEquals(0, fresh.stats().mappingsFromOwnRoot());
            }
        }
    }

    /** An exit the registry hears of (the kernel's exit event) drops that process's state at once, and only its. */
    @Test
    void anExitReportedToTheRegistryDropsThatProcessAtOnce() throws Exception {
        Path bin = TestPrograms.compile(dir, "exits", TestPrograms.LOOPER, "-fno-pie", "-no-pie");
        long spin = TestPrograms.nmAddress(bin, "spin_here");
        Path proc = dir.resolve("proc");
        for (int pid : new int[] {60, 61}) {
            Files.createDirectories(proc.resolve(pid + "/root/opt"));
            Files.copy(bin, proc.resolve(pid + "/root/opt/app"));
            fakeProcess(proc, pid, 1000, "401000-402000 r-xp 00001000 08:01 778 /opt/app");
        }
        ProcessRegistry registry = new ProcessRegistry(proc, 1024);
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 8 << 20, new Clock()), registry)) {
            assertEquals("spin_here", symbolize(s, 60, 1000, spin));
            assertEquals("spin_here", symbolize(s, 61, 1000, spin));
            assertEquals(2, s.stats().processes());
            registry.processExited(60, 1000);
            assertEquals(1, s.stats().processes(), "60's state went with its exit, no idle expiry waited for");
            registry.processExited(61, 999); // an earlier process with pid 61
            assertEquals(1, s.stats().processes(), "61's process runs on");
            assertEquals(1, registry.size());
        }
    }

    @Test
    void processReadBeforeItsExecResolvesWithinItsFirstMoments() throws Exception {
        Path bin = TestPrograms.compile(dir, "execd", TestPrograms.LOOPER, "-fno-pie", "-no-pie");
        long spin = TestPrograms.nmAddress(bin, "spin_here");
        Path proc = dir.resolve("proc");
        Files.createDirectories(proc.resolve("43/root/opt"));
        Files.copy(bin, proc.resolve("43/root/opt/app"));
        // First read between fork and exec: the parent's (here: no) executable mappings, same pid and start.
        fakeProcess(proc, 43, 1000, "7f0000001000-7f0000002000 r-xp 00001000 08:01 999 /opt/shell");
        Clock clock = new Clock();
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 1 << 20, clock))) {
            assertNull(symbolize(s, 43, 1000, spin), "before the exec: not in the parent's mappings");
            fakeProcess(proc, 43, 1000, "401000-402000 r-xp 00001000 08:01 777 /opt/app"); // exec: same start time
            clock.advance(Duration.ofMillis(50));
            assertNull(symbolize(s, 43, 1000, spin), "no re-read within 100 ms of a read");
            clock.advance(Duration.ofMillis(100));
            assertEquals("spin_here", symbolize(s, 43, 1000, spin), "resolved 150 ms in, not 2 s");
            assertEquals(0, s.stats().pidReuses(), "an exec is not a pid reuse");
        }
    }

    @Test
    void pidReuseIsDetectedThroughStartTimeWithInjectedClock() throws Exception {
        Path bin = TestPrograms.compile(dir, "reuse", TestPrograms.LOOPER, "-fno-pie", "-no-pie");
        long spin = TestPrograms.nmAddress(bin, "spin_here");
        long helper = TestPrograms.nmAddress(bin, "helper_two");
        Path proc = dir.resolve("proc");
        Path root = Files.createDirectories(proc.resolve("42/root/opt"));
        Files.copy(bin, root.resolve("app"));
        Files.copy(bin, root.resolve("app2"));
        // Non-PIE: the text segment is mapped at its link address, offset 0x1000 in the file.
        fakeProcess(proc, 42, 1000, "401000-402000 r-xp 00001000 08:01 777 /opt/app");
        Clock clock = new Clock();
        long shift = 0x100000;
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 1 << 20, clock))) {
            assertEquals("spin_here", symbolize(s, 42, 1000, spin));
            // The pid is reused by a process running app2, its text mapped 0x100000 higher. The sample's
            // start time differs from the cached one: maps are re-read at once, no waiting.
            fakeProcess(proc, 42, 2000, "501000-502000 r-xp 00001000 08:01 778 /opt/app2");
            clock.advance(Duration.ofMillis(1));
            assertEquals("helper_two", symbolize(s, 42, 2000, helper + shift));
            assertNull(symbolize(s, 42, 2000, spin), "the old process's mapping is gone");
            // A late sample of the first process must not be symbolized with the new one's mappings.
            assertNull(symbolize(s, 42, 1000, helper + shift));
            assertEquals(1, s.stats().pidReuses());

            // Without a start time, only a miss re-reads: once soon after a read, then not more often than every 2 s.
            clock.advance(Duration.ofMillis(150));
            assertNull(symbolize(s, 42, spin), "the quick re-read finds app2 still there");
            fakeProcess(proc, 42, 3000, "401000-402000 r-xp 00001000 08:01 777 /opt/app");
            clock.advance(Duration.ofMillis(500));
            assertNull(symbolize(s, 42, spin), "within the re-read limit");
            clock.advance(Duration.ofMillis(2500));
            assertEquals("spin_here", symbolize(s, 42, spin));
            assertTrue(s.stats().mapsReads() <= 5, "maps reads: " + s.stats().mapsReads());
            assertEquals(2, s.stats().pidReuses());
        }
    }

    /** Maps are re-read after 15 s (dlopen): new mappings appear, unchanged ones keep their MappingRef. */
    @Test
    void periodicRefreshFindsNewMappingsAndKeepsUnchangedRefs() throws Exception {
        Path bin = TestPrograms.compile(dir, "app", TestPrograms.LOOPER, "-fno-pie", "-no-pie");
        long spin = TestPrograms.nmAddress(bin, "spin_here");
        Path proc = dir.resolve("proc");
        Files.createDirectories(proc.resolve("77/root/opt"));
        Files.copy(bin, proc.resolve("77/root/opt/app"));
        Files.copy(TestPrograms.LIBC, proc.resolve("77/root/opt/libc.so"));
        String appLine = "401000-402000 r-xp 00001000 08:01 777 /opt/app";
        fakeProcess(proc, 77, 500, appLine, "garbage that is not a maps line");
        long getpid = TestPrograms.nmFunctions(TestPrograms.LIBC, true).stream().filter(x -> x[1].equals("getpid"))
                .map(x -> (Long) x[0]).findFirst().orElseThrow();
        long libcText = TestPrograms.loads(TestPrograms.LIBC).stream().filter(l -> l[4] == 1).findFirst().orElseThrow()[0];
        long libcBase = 0x7f0000000000L;
        // libc mapped like ld.so does: its executable segment's pages at base + offset.
        String libcLine = Long.toHexString(libcBase + libcText) + "-" + Long.toHexString(libcBase + libcText + 0x200000)
                + " r-xp " + Long.toHexString(libcText) + " 08:01 778 /opt/libc.so";
        Clock clock = new Clock();
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 8 << 20, clock))) {
            Frame first = frame(s, 77, spin);
            assertEquals("spin_here", first.function());
            assertEquals(1, s.stats().malformedMapsLines());
            clock.advance(Duration.ofMillis(150));
            assertNull(symbolize(s, 77, libcBase + getpid), "the one quick re-read after a read finds nothing new");
            fakeProcess(proc, 77, 500, appLine, libcLine); // dlopen
            clock.advance(Duration.ofSeconds(1));
            assertNull(symbolize(s, 77, libcBase + getpid), "not re-read yet (misses are rate-limited to every 2 s)");
            clock.advance(Duration.ofSeconds(15));
            assertEquals("getpid", symbolize(s, 77, libcBase + getpid));
            Frame again = frame(s, 77, spin);
            assertEquals("spin_here", again.function());
            assertSame(first.mapping(), again.mapping(), "unchanged mapping: same MappingRef across the refresh");
            assertEquals(0, s.stats().pidReuses());
        }
    }

    /** A process that exits before its binary is read must not spoil the binary for everyone else. */
    @Test
    void unopenableBinaryIsNotCachedAsBad() throws Exception {
        Path bin = TestPrograms.compile(dir, "shared", TestPrograms.LOOPER, "-fno-pie", "-no-pie");
        long spin = TestPrograms.nmAddress(bin, "spin_here");
        Path proc = dir.resolve("proc");
        String line = "401000-402000 r-xp 00001000 08:01 999 /opt/shared";
        fakeProcess(proc, 50, 100, line); // gone: neither map_files nor root holds the file
        fakeProcess(proc, 51, 200, line);
        Files.createDirectories(proc.resolve("51/root/opt"));
        Files.copy(bin, proc.resolve("51/root/opt/shared"));
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 1 << 20, new Clock()))) {
            Frame f = frame(s, 50, spin);
            assertNull(f.function());
            assertEquals("/opt/shared", f.mapping().path(), "the mapping is still known");
            assertEquals("spin_here", symbolize(s, 51, spin));
            assertEquals(0, s.stats().binaryFailures(), "not a defective file");
            assertEquals(1, s.stats().unreadableBinaries());
        }
    }

    /**
     * Without map_files (fake /proc here; no CAP_SYS_ADMIN in real life) binaries come from root/ by name:
     * one parse for a file seen by two processes, and never by name for a deleted file.
     */
    @Test
    void rootFallbackSharesParsesAndSkipsDeletedFiles() throws Exception {
        Path bin = TestPrograms.compile(dir, "shared", TestPrograms.LOOPER, "-fno-pie", "-no-pie");
        long spin = TestPrograms.nmAddress(bin, "spin_here");
        Path proc = dir.resolve("proc");
        String line = "401000-402000 r-xp 00001000 08:01 999 /opt/shared";
        for (int pid : new int[] {61, 62, 63}) {
            fakeProcess(proc, pid, 100, pid == 63 ? line + " (deleted)" : line);
            Files.createDirectories(proc.resolve(pid + "/root/opt"));
        }
        Files.copy(bin, proc.resolve("61/root/opt/shared"));
        Files.createLink(proc.resolve("62/root/opt/shared"), proc.resolve("61/root/opt/shared")); // the same file
        Files.createLink(proc.resolve("63/root/opt/shared"), proc.resolve("61/root/opt/shared")); // "now another file"
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 1 << 20, new Clock()))) {
            assertEquals("spin_here", symbolize(s, 61, spin));
            assertEquals("spin_here", symbolize(s, 62, spin));
            assertEquals(1, s.stats().binaries(), "parsed once, cached by file identity");
            Frame deleted = frame(s, 63, spin);
            assertNull(deleted.function(), "a deleted file is not looked up by its old name");
            assertEquals("/opt/shared", deleted.mapping().path());
            assertEquals(1, s.stats().unreadableBinaries());
        }
    }

    /** A binary whose symbol table would not fit in the cache bound: one clear warning, frames kept. */
    @Test
    void oversizedSymbolTableIsReportedOnce() throws Exception {
        Path jvm = Path.of(System.getProperty("java.home"), "lib", "server", "libjvm.so");
        assertTrue(Files.exists(jvm), "no libjvm.so in the JDK running the tests: " + jvm);
        Path proc = dir.resolve("proc");
        long text = TestPrograms.loads(jvm).stream().filter(l -> l[4] == 1).findFirst().orElseThrow()[0];
        long base = 0x7f0000000000L;
        String line = Long.toHexString(base + text) + "-" + Long.toHexString(base + text + 0x100000) + " r-xp "
                + Long.toHexString(text) + " 08:01 4242 /opt/jdk/libjvm.so";
        fakeProcess(proc, 70, 100, line);
        Files.createDirectories(proc.resolve("70/root/opt/jdk"));
        Files.createSymbolicLink(proc.resolve("70/root/opt/jdk/libjvm.so"), jvm);
        try (Captured log = new Captured(Level.INFO);
             Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 1 << 20, new Clock()))) {
            for (int i = 0; i < 3; i++) {
                Frame f = frame(s, 70, base + text + 0x100 + i);
                assertNull(f.function());
                assertFalse(f.mapping().hasFunctions());
            }
            List<String> w = log.messages(Level.WARNING);
            assertEquals(1, w.size(), w.toString());
            assertTrue(w.get(0).startsWith("cannot symbolize /opt/jdk/libjvm.so (pid 70): symbol tables need more than 1 MiB"), w.get(0));
            assertEquals(1, s.stats().binaryFailures());
        }
    }

    /** comm is arbitrary bytes, with spaces and parentheses: the start time is still found. */
    @Test
    void oddCommInStat() throws Exception {
        Path bin = TestPrograms.compile(dir, "odd", TestPrograms.LOOPER, "-fno-pie", "-no-pie");
        Path proc = dir.resolve("proc");
        fakeProcess(proc, 60, 0, "401000-402000 r-xp 00001000 08:01 55 /opt/odd");
        Files.createDirectories(proc.resolve("60/root/opt"));
        Files.copy(bin, proc.resolve("60/root/opt/odd"));
        byte[] stat = ("60 (a) b\u00e9 ) S 1 1 1 0 -1 4194304 100 0 0 0 5 1 0 0 20 0 1 0 4321 1000000 100 5\n")
                .getBytes(StandardCharsets.ISO_8859_1); // 0xE9: not UTF-8
        Files.write(proc.resolve("60/stat"), stat);
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 1 << 20, new Clock()))) {
            assertEquals("spin_here", symbolize(s, 60, 4321, TestPrograms.nmAddress(bin, "spin_here")));
            assertNull(symbolize(s, 60, 4322, TestPrograms.nmAddress(bin, "spin_here")), "another start time: not this process");
        }
    }

    @Test
    void vdsoFramesAreNamed() throws Exception {
        int self = (int) ProcessHandle.current().pid();
        MapEntry vdso = ProcMaps.read(PROC, self).stream().filter(m -> m.path().equals("[vdso]")).findFirst().orElseThrow();
        Set<String> names = new HashSet<>();
        Path bin = TestPrograms.compile(dir, "other", TestPrograms.LOOPER);
        Process other = start(bin.toString());
        MapEntry otherVdso = ProcMaps.read(PROC, (int) other.pid()).stream().filter(m -> m.path().equals("[vdso]")).findFirst().orElseThrow();
        try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
            for (long a = vdso.start(); a < vdso.end(); a += 4) {
                Frame f = frame(s, self, a);
                assertEquals("[vdso]", f.mapping().path());
                if (f.function() != null) {
                    names.add(f.function());
                }
                // The same offset in another process (another base address: ASLR) names the same function.
                Frame g = frame(s, (int) other.pid(), otherVdso.start() + (a - vdso.start()));
                assertEquals(f.function(), g.function());
            }
        }
        assertTrue(names.contains("__vdso_clock_gettime") || names.contains("clock_gettime"), names.toString());
        assertTrue(names.size() >= 4, names.toString());
    }

    @Test
    void kernelSymbolsFromFakeKallsymsWithModules() throws Exception {
        Path fake = dir.resolve("kallsyms");
        Files.writeString(fake, """
                ffffffff81000000 T _stext
                ffffffff81000000 T startup_64
                ffffffff81000100 t do_thing
                ffffffff81000200 D some_data
                ffffffff81000300 T other_thing
                ffffffff81000400 W weak_thing
                not a line
                ffffffffc0001000 t mod_fn\t[mymod]
                ffffffffc0001100 T mod_exported\t[mymod]
                """);
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(dir, fake, 1 << 20, System::nanoTime))) {
            List<Frame> out = new ArrayList<>();
            s.symbolizeKernel(new long[] {0xffffffff81000150L, 0xffffffff81000201L, 0xffffffffc0001011L, 0xffffffffc0001101L,
                    0xffffffff81000001L, 0xffffffff81000410L}, 6, out);
            assertEquals(List.of("do_thing", "do_thing", "mod_fn", "mod_exported", "startup_64", "weak_thing"),
                    out.stream().map(Frame::function).toList(),
                    "data symbols are skipped; frames >= 1 are return addresses (-1); the alias without underscore wins");
            assertTrue(out.stream().allMatch(Frame::kernel));
            MappingRef k = out.get(0).mapping();
            assertEquals("[kernel.kallsyms]", k.path());
            assertEquals(0xffffffff81000000L, k.start());
            assertTrue(Long.compareUnsigned(k.limit(), 0xffffffffc0001100L) > 0);
            assertSame(k, out.get(3).mapping());
            assertEquals(6, s.stats().kernelSymbols(), "_stext and startup_64 share an address");
        }
    }

    /** A module loaded later: an address beyond the known range re-reads kallsyms, at most every 2 min. */
    @Test
    void kallsymsIsReloadedForNewModulesRateLimited() throws Exception {
        Path fake = dir.resolve("kallsyms");
        String core = "ffffffff81000000 T _stext\nffffffff81000100 t do_thing\nffffffffc0001000 t mod_fn\t[mymod]\n";
        Files.writeString(fake, core);
        Clock clock = new Clock();
        long newAddr = 0xffffffffc0300010L;
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(dir, fake, 1 << 20, clock))) {
            List<Frame> out = new ArrayList<>();
            s.symbolizeKernel(new long[] {0xffffffff81000101L, newAddr}, 2, out);
            assertEquals("do_thing", out.get(0).function());
            assertNull(out.get(1).function(), "beyond the last module: unknown");
            MappingRef before = out.get(0).mapping();
            Files.writeString(fake, core + "ffffffffc0300000 t newmod_fn\t[newmod]\n");
            clock.advance(Duration.ofSeconds(30));
            out.clear();
            s.symbolizeKernel(new long[] {newAddr}, 1, out);
            assertNull(out.get(0).function(), "re-read at most every 2 min");
            clock.advance(Duration.ofMinutes(2));
            out.clear();
            s.symbolizeKernel(new long[] {newAddr}, 1, out);
            assertEquals("newmod_fn", out.get(0).function());
            assertEquals(4, s.stats().kernelSymbols());
            MappingRef grown = out.get(0).mapping();
            assertTrue(Long.compareUnsigned(grown.limit(), before.limit()) > 0);
            // A reload that finds the same range keeps the same MappingRef instance.
            clock.advance(Duration.ofMinutes(3));
            out.clear();
            s.symbolizeKernel(new long[] {0xffffffffcf000000L, 0xffffffff81000101L}, 2, out);
            assertSame(grown, out.get(1).mapping());
        }
    }

    @Test
    void restrictedKallsymsWarnsOnceAndKeepsAddresses() throws Exception {
        Path fake = dir.resolve("kallsyms");
        Files.writeString(fake, """
                0000000000000000 T _stext
                0000000000000000 t do_thing
                0000000000000000 t mod_fn\t[mymod]
                """);
        try (Captured log = new Captured(Level.INFO);
             Symbolizer s = Symbolizer.create(new Symbolizer.Options(dir, fake, 1 << 20, System::nanoTime))) {
            for (int i = 0; i < 5; i++) {
                List<Frame> out = new ArrayList<>();
                s.symbolizeKernel(new long[] {0xffffffff81000150L, 0xffffffff81000201L}, 2, out);
                assertEquals(List.of(new Frame(0xffffffff81000150L, null, null, true), new Frame(0xffffffff81000200L, null, null, true)), out);
            }
            List<String> w = log.messages(Level.WARNING);
            assertEquals(1, w.size(), w.toString());
            assertTrue(w.get(0).contains("kptr_restrict"), w.get(0));
        }
    }

    @Test
    void realKallsymsNamesVfsRead() throws Exception {
        long vfsRead = 0;
        for (String l : Files.readAllLines(Path.of("/proc/kallsyms"))) {
            if (l.endsWith(" vfs_read")) {
                vfsRead = Long.parseUnsignedLong(l.substring(0, 16), 16);
            }
        }
        assertTrue(vfsRead != 0, "vfs_read hidden in /proc/kallsyms (kptr_restrict: the tests run as root)");
        try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
            List<Frame> out = new ArrayList<>();
            s.symbolizeKernel(new long[] {vfsRead + 8, vfsRead + 9}, 2, out);
            assertEquals("vfs_read", out.get(0).function());
            assertEquals("vfs_read", out.get(1).function());
            assertEquals(vfsRead + 8, out.get(1).address());
            assertTrue(s.stats().kernelSymbols() > 10_000);
        }
    }

    @Test
    void optionsAreValidated() {
        assertNotNull(Symbolizer.Options.defaults());
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> new Symbolizer.Options(PROC, PROC, 1000, System::nanoTime));
        org.junit.jupiter.api.Assertions.assertThrows(NullPointerException.class,
                () -> new Symbolizer.Options(null, PROC, 1 << 20, System::nanoTime));
    }
}
