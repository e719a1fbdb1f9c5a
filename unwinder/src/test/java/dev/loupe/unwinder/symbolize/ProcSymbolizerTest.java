package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcSymbolizerTest {
    @TempDir
    Path dir;
    private final List<Process> started = new ArrayList<>();

    @AfterEach
    void kill() {
        started.forEach(Process::destroyForcibly);
    }

    private Process start(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        started.add(p);
        Thread.sleep(150); // exec'd and mapped
        return p;
    }

    /** An independent vaddr → runtime address conversion from readelf's program headers. */
    static long runtimeAddress(Path file, List<MapEntry> maps, long vaddr) throws Exception {
        for (String line : TestPrograms.run(List.of("readelf", "-lW", file.toString())).split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length > 6 && f[0].equals("LOAD")) {
                long off = Long.decode(f[1]);
                long va = Long.decode(f[2]);
                long filesz = Long.decode(f[4]);
                if (vaddr >= va && vaddr < va + filesz) {
                    long fileOffset = vaddr - va + off;
                    for (MapEntry m : maps) {
                        if (m.executable() && fileOffset >= m.offset() && fileOffset < m.offset() + (m.end() - m.start())
                                && m.path().equals(file.toString())) {
                            return m.start() + fileOffset - m.offset();
                        }
                    }
                }
            }
        }
        throw new AssertionError("0x" + Long.toHexString(vaddr) + " not mapped from " + file);
    }

    private static String symbolize(Symbolizer s, int pid, long addr) {
        List<Frame> out = new ArrayList<>();
        s.symbolizeUser(pid, new long[] {addr}, 1, out);
        assertEquals(1, out.size());
        return out.get(0).function();
    }

    private void checkProgram(String kind, String... flags) throws Exception {
        Path bin = TestPrograms.compile(dir, "looper-" + kind, TestPrograms.LOOPER, flags);
        Process p = start(bin.toString());
        int pid = (int) p.pid();
        List<MapEntry> maps = ProcMaps.read(Path.of("/proc"), pid);
        try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
            for (Object[] sym : TestPrograms.functions(bin)) {
                long vaddr = (Long) sym[0] + Math.min(2, Math.max(0, (Long) sym[1] - 1));
                String a2l = TestPrograms.run(List.of("addr2line", "-f", "-e", bin.toString(), "0x" + Long.toHexString(vaddr))).split("\n")[0];
                assertEquals(a2l, symbolize(s, pid, runtimeAddress(bin, maps, vaddr)), kind + " " + sym[2]);
            }
            // libc, through the same process: nm -D symbols with aliases.
            Path libc = Path.of(maps.stream().filter(m -> m.path().contains("libc.so")).findFirst().orElseThrow().path());
            Map<Long, Set<String>> aliases = new HashMap<>();
            for (Object[] sym : TestPrograms.nmFunctions(libc, true)) {
                aliases.computeIfAbsent((Long) sym[0], k -> new HashSet<>()).add((String) sym[1]);
            }
            int n = 0;
            for (var e : aliases.entrySet()) {
                if (n++ == 200) {
                    break;
                }
                String got = symbolize(s, pid, runtimeAddress(libc, maps, e.getKey()));
                assertTrue(e.getValue().contains(got), got + " not in " + e.getValue());
            }
            List<Frame> frames = new ArrayList<>();
            long spin = runtimeAddress(bin, maps, (Long) TestPrograms.nmFunctions(bin, false).stream()
                    .filter(x -> x[1].equals("spin_here")).findFirst().orElseThrow()[0]);
            s.symbolizeUser(pid, new long[] {spin + 4, spin + 5}, 2, frames);
            assertEquals(spin + 4, frames.get(0).address(), "leaf: exact address");
            assertEquals(spin + 4, frames.get(1).address(), "caller: return address - 1");
            MappingRef m = frames.get(0).mapping();
            assertEquals(bin.toString(), m.path());
            assertNotNull(m.buildId());
            assertTrue(m.hasFunctions());
        }
    }

    @Test
    void pieBinaryAndLibcMatchAddr2line() throws Exception {
        checkProgram("pie", "-fPIE", "-pie");
    }

    @Test
    void nonPieBinaryMatchesAddr2line() throws Exception {
        checkProgram("nopie", "-fno-pie", "-no-pie");
    }

    @Test
    void deletedBinaryResolvesThroughMapFiles() throws Exception {
        Path bin = TestPrograms.compile(dir, "doomed", TestPrograms.LOOPER);
        long vaddr = (Long) TestPrograms.nmFunctions(bin, false).stream().filter(x -> x[1].equals("spin_here")).findFirst().orElseThrow()[0];
        Process p = start(bin.toString());
        List<MapEntry> maps = ProcMaps.read(Path.of("/proc"), (int) p.pid());
        long addr = runtimeAddress(bin, maps, vaddr);
        Files.delete(bin);
        assertTrue(ProcMaps.read(Path.of("/proc"), (int) p.pid()).stream().anyMatch(MapEntry::deleted));
        try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
            List<Frame> out = new ArrayList<>();
            s.symbolizeUser((int) p.pid(), new long[] {addr}, 1, out);
            assertEquals("spin_here", out.get(0).function());
            assertEquals(bin.toString(), out.get(0).mapping().path(), "no \" (deleted)\" in the mapping name");
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

    /** A text file and a truncated ELF mapped executable: frames keep their mapping, one warning each. */
    @Test
    void badFilesInMappingsAreLoggedOnceAndFramesKept() throws Exception {
        Path mapper = TestPrograms.compile(dir, "mapper", MAPPER);
        Path text = dir.resolve("not-elf.txt");
        Files.writeString(text, "hello ".repeat(1000));
        Path truncated = dir.resolve("truncated.so");
        Files.write(truncated, java.util.Arrays.copyOf(Files.readAllBytes(Path.of("/lib/x86_64-linux-gnu/libc.so.6")), 4096));
        List<String> warnings = new ArrayList<>();
        Handler h = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
                    warnings.add(r.getMessage());
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        Logger log = Logger.getLogger(ProcSymbolizer.class.getName());
        log.addHandler(h);
        try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
            for (Path f : List.of(text, truncated)) {
                Process p = new ProcessBuilder(mapper.toString(), f.toString()).start();
                started.add(p);
                long base = Long.parseUnsignedLong(new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream())).readLine(), 16);
                for (int i = 0; i < 3; i++) {
                    List<Frame> out = new ArrayList<>();
                    s.symbolizeUser((int) p.pid(), new long[] {base + 16 + i}, 1, out);
                    assertNull(out.get(0).function());
                    assertEquals(f.toString(), out.get(0).mapping().path());
                    assertFalse(out.get(0).mapping().hasFunctions());
                }
                assertEquals(1, warnings.stream().filter(w -> w.contains(f.toString())).count(), warnings.toString());
            }
            assertTrue(warnings.stream().anyMatch(w -> w.contains("not an ELF file")), warnings.toString());
            assertTrue(warnings.stream().anyMatch(w -> w.contains("beyond end of file")), warnings.toString());
            assertEquals(2, s.stats().binaryFailures());
        } finally {
            log.removeHandler(h);
        }
    }

    @Test
    void vanishedProcessAndMissingProcRootGiveBareFrames() {
        try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults());
             Symbolizer none = Symbolizer.create(new Symbolizer.Options(dir.resolve("no-proc"), dir.resolve("no-kallsyms"),
                     1 << 20, InstantSource.system()))) {
            for (Symbolizer x : List.of(s, none)) {
                List<Frame> out = new ArrayList<>();
                x.symbolizeUser(Integer.MAX_VALUE - 1, new long[] {0x401000, 0x401234}, 2, out);
                assertEquals(2, out.size(), "never dropped");
                assertNull(out.get(0).mapping());
                assertEquals(0x401000, out.get(0).address());
                out.clear();
                x.symbolizeKernel(new long[] {0xffffffff81000000L}, 1, out);
                assertEquals(1, out.size());
            }
            assertTrue(none.stats().mapsReadFailures() >= 1);
        }
    }

    /** A time source the test moves. */
    static final class Clock implements InstantSource {
        final AtomicLong nanos = new AtomicLong(1_000_000_000_000L);

        @Override
        public Instant instant() {
            return Instant.ofEpochSecond(0, nanos.get());
        }

        void advance(Duration d) {
            nanos.addAndGet(d.toNanos());
        }
    }

    private static void fakeProcess(Path proc, int pid, long startTime, String mapsLine) throws Exception {
        Path d = Files.createDirectories(proc.resolve(Integer.toString(pid)));
        Files.writeString(d.resolve("stat"), pid + " (odd) name) S 1 1 1 0 -1 4194304 100 0 0 0 5 1 0 0 20 0 1 0 "
                + startTime + " 1000000 100 18446744073709551615\n");
        Files.writeString(d.resolve("maps"), mapsLine + "\n");
    }

    private static String symbolize(Symbolizer s, int pid, long startTicks, long addr) {
        List<Frame> out = new ArrayList<>();
        s.symbolizeUser(pid, startTicks * 10_000_000L, new long[] {addr}, 1, out);
        return out.get(0).function();
    }

    @Test
    void pidReuseIsDetectedThroughStartTimeWithInjectedClock() throws Exception {
        Path bin = TestPrograms.compile(dir, "reuse", TestPrograms.LOOPER, "-fno-pie", "-no-pie");
        long spin = (Long) TestPrograms.nmFunctions(bin, false).stream().filter(x -> x[1].equals("spin_here")).findFirst().orElseThrow()[0];
        long helper = (Long) TestPrograms.nmFunctions(bin, false).stream().filter(x -> x[1].equals("helper_two")).findFirst().orElseThrow()[0];
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

            // Without a start time, only a miss re-reads, and not more often than every 2 s.
            fakeProcess(proc, 42, 3000, "401000-402000 r-xp 00001000 08:01 777 /opt/app");
            clock.advance(Duration.ofMillis(500));
            assertNull(symbolize(s, 42, spin), "within the re-read limit");
            clock.advance(Duration.ofMillis(2500));
            assertEquals("spin_here", symbolize(s, 42, spin));
            assertTrue(s.stats().mapsReads() <= 4, "maps reads: " + s.stats().mapsReads());
        }
    }

    /** A process that exits before its binary is read must not spoil the binary for everyone else. */
    @Test
    void unopenableBinaryIsNotCachedAsBad() throws Exception {
        Path bin = TestPrograms.compile(dir, "shared", TestPrograms.LOOPER, "-fno-pie", "-no-pie");
        long spin = (Long) TestPrograms.nmFunctions(bin, false).stream().filter(x -> x[1].equals("spin_here")).findFirst().orElseThrow()[0];
        Path proc = dir.resolve("proc");
        String line = "401000-402000 r-xp 00001000 08:01 999 /opt/shared";
        fakeProcess(proc, 50, 100, line); // gone: neither map_files nor root holds the file
        fakeProcess(proc, 51, 200, line);
        Files.createDirectories(proc.resolve("51/root/opt"));
        Files.copy(bin, proc.resolve("51/root/opt/shared"));
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(proc, dir.resolve("none"), 1 << 20, new Clock()))) {
            assertNull(symbolize(s, 50, spin));
            assertEquals("spin_here", symbolize(s, 51, spin));
            assertEquals(0, s.stats().binaryFailures(), "not a defective file");
        }
    }

    @Test
    void vdsoFramesAreNamed() throws Exception {
        int self = (int) ProcessHandle.current().pid();
        MapEntry vdso = ProcMaps.read(Path.of("/proc"), self).stream().filter(m -> m.path().equals("[vdso]"))
                .findFirst().orElseThrow();
        Set<String> names = new HashSet<>();
        try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
            for (long a = vdso.start(); a < vdso.end(); a += 4) {
                List<Frame> out = new ArrayList<>();
                s.symbolizeUser(self, new long[] {a}, 1, out);
                assertEquals("[vdso]", out.get(0).mapping().path());
                if (out.get(0).function() != null) {
                    names.add(out.get(0).function());
                }
            }
        }
        assertTrue(names.contains("__vdso_clock_gettime") || names.contains("clock_gettime"), names.toString());
    }

    @Test
    void kernelSymbolsFromFakeAndRealKallsyms() throws Exception {
        Path fake = dir.resolve("kallsyms");
        Files.writeString(fake, """
                ffffffff81000000 T _stext
                ffffffff81000100 t do_thing
                ffffffff81000200 D some_data
                ffffffff81000300 T other_thing
                ffffffffc0001000 t mod_fn\t[mymod]
                """);
        try (Symbolizer s = Symbolizer.create(new Symbolizer.Options(dir, fake, 1 << 20, InstantSource.system()))) {
            List<Frame> out = new ArrayList<>();
            s.symbolizeKernel(new long[] {0xffffffff81000150L, 0xffffffff81000201L, 0xffffffffc0001011L}, 3, out);
            assertEquals(List.of("do_thing", "do_thing", "mod_fn"), out.stream().map(Frame::function).toList(),
                    "data symbols are skipped; the 2nd frame is a return address (−1)");
            assertTrue(out.get(0).kernel());
            assertEquals("[kernel.kallsyms]", out.get(0).mapping().path());
        }
        long vfsRead = 0;
        for (String l : Files.readAllLines(Path.of("/proc/kallsyms"))) {
            if (l.endsWith(" vfs_read")) {
                vfsRead = Long.parseUnsignedLong(l.substring(0, 16), 16);
            }
        }
        assertTrue(vfsRead != 0, "vfs_read in /proc/kallsyms (root)");
        try (Symbolizer s = Symbolizer.create(Symbolizer.Options.defaults())) {
            List<Frame> out = new ArrayList<>();
            s.symbolizeKernel(new long[] {vfsRead + 8}, 1, out);
            assertEquals("vfs_read", out.get(0).function());
        }
    }
}
