package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.perfmap.PerfMapRuntime;
import dev.loupe.unwinder.proc.ProcessRegistry;
import dev.loupe.unwinder.runtime.RuntimeRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** JIT frames named from perf maps, through a fake /proc: the process's own-namespace pid, its root, re-reads, release. */
class JitPerfMapTest {
    /** An anonymous executable mapping of a fake process, where JIT code goes (RuntimeSeamTest's too). */
    static final long JIT = 0x7f1000000000L;
    static final String JIT_LINE = "7f1000000000-7f1000100000 rwxp 00000000 00:00 0 ";
    private static final String NODE_LINE = "401000-402000 r-xp 00001000 08:01 777 /usr/bin/node";

    @TempDir
    Path dir;

    /** A process {@code pid} that is {@code nsPid} in its own namespace, running /usr/bin/node, with a JIT mapping. */
    private Path process(Path proc, int pid, int nsPid, long start) throws Exception {
        ProcSymbolizerTest.fakeProcess(proc, pid, start, NODE_LINE, JIT_LINE);
        Path d = proc.resolve(Integer.toString(pid));
        Files.writeString(d.resolve("status"), "Name:\tnode\nUmask:\t0022\nState:\tR (running)\nTgid:\t" + pid
                + "\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nNSpid:\t" + pid + "\t" + nsPid + "\n");
        Files.createSymbolicLink(d.resolve("exe"), dir.resolve("usr/bin/node")); // as readlink shows it; only the name counts
        return Files.createDirectories(d.resolve("root/tmp"));
    }

    private static List<Frame> stack(Symbolizer s, int pid, long... addrs) {
        List<Frame> out = new ArrayList<>();
        s.symbolizeUser(pid, addrs, addrs.length, out);
        return out;
    }

    private PerfMapRuntime perfMaps;

    private Symbolizer symbolizer(Path proc, ProcSymbolizerTest.Clock clock, long total) {
        Symbolizer.Options o = new Symbolizer.Options(proc, dir.resolve("none"), 1 << 20, clock);
        ProcessRegistry registry = new ProcessRegistry(proc, 1 << 10);
        perfMaps = PerfMapRuntime.reading(proc, 262_144, 16 << 20, total);
        return Symbolizer.create(o, registry, new RuntimeRegistry(List.of(perfMaps), registry, clock));
    }

    private long entries() {
        return perfMaps.counters().get("entries");
    }

    @Test
    void jitFramesAreNamedFromThePerfMapOfTheProcessOwnPid() throws Exception {
        Path proc = dir.resolve("proc");
        Path tmp = process(proc, 8080, 7, 1000);
        Files.writeString(tmp.resolve("perf-7.map"), """
                7f1000001000 100 JS:*leaf /srv/app.js:3:14
                7f1000002000 200 JS:*mid /srv/app.js:7:13
                not a perf map line
                """);
        // The host's pid names another file in the process's /tmp: not the one the process wrote.
        Files.writeString(tmp.resolve("perf-8080.map"), "7f1000001000 100 WRONG\n");
        ProcSymbolizerTest.Clock clock = new ProcSymbolizerTest.Clock();
        try (Symbolizer s = symbolizer(proc, clock, PerfMapRuntime.DEFAULT_TOTAL_BYTES)) {
            List<Frame> f = stack(s, 8080, JIT + 0x1010, JIT + 0x2051, JIT + 0x3001);
            assertEquals("JS:*leaf /srv/app.js:3:14", f.get(0).function());
            assertEquals("JS:*mid /srv/app.js:7:13", f.get(1).function());
            assertNull(f.get(2).function(), "not in the map yet");
            MappingRef m = f.get(0).mapping();
            assertEquals("[jit] node", m.path());
            assertEquals(JIT, m.start());
            assertEquals(JIT + 0x100000, m.limit());
            assertTrue(m.hasFunctions());
            assertNull(m.buildId());
            assertSame(m, f.get(1).mapping(), "one MappingRef for the mapping");
            assertSame(m, f.get(2).mapping());
            assertEquals(2, entries());
            assertEquals(1, perfMaps.counters().get("lines_skipped"));

            // New code: the next miss re-reads, but not within a second of the last read.
            Files.writeString(tmp.resolve("perf-7.map"), "7f1000003000 80 JS:*later /srv/app.js:9:1\n", StandardOpenOption.APPEND);
            clock.advance(Duration.ofMillis(500));
            assertNull(stack(s, 8080, JIT + 0x3001).get(0).function(), "rate-limited: read 0.5 s ago");
            clock.advance(Duration.ofMillis(600));
            assertEquals("JS:*later /srv/app.js:9:1", stack(s, 8080, JIT + 0x3001).get(0).function());
            assertEquals(3, entries(), "the appended line only");
            // Hits do not read the file: a line added now stays unknown while only known code is sampled.
            Files.writeString(tmp.resolve("perf-7.map"), "7f1000004000 80 JS:*unseen /srv/app.js:11:1\n", StandardOpenOption.APPEND);
            clock.advance(Duration.ofSeconds(5));
            for (int i = 0; i < 100; i++) {
                assertEquals("JS:*leaf /srv/app.js:3:14", stack(s, 8080, JIT + 0x1010).get(0).function());
            }
            assertEquals(3, entries());
            // The node binary's own frames are untouched by all this.
            assertEquals("/usr/bin/node", stack(s, 8080, 0x401010).get(0).mapping().path());
        }
    }

    @Test
    void withoutAPerfMapJitFramesStayAddressesInAnUnnamedMapping() throws Exception {
        Path proc = dir.resolve("proc");
        process(proc, 81, 81, 1000);
        Files.createDirectories(proc.resolve("82/root/tmp"));
        ProcSymbolizerTest.fakeProcess(proc, 82, 1000, JIT_LINE); // no status, no exe: gone or unreadable
        ProcSymbolizerTest.Clock clock = new ProcSymbolizerTest.Clock();
        try (Symbolizer s = symbolizer(proc, clock, PerfMapRuntime.DEFAULT_TOTAL_BYTES)) {
            for (int pid : new int[] {81, 82}) {
                for (int i = 0; i < 3; i++) {
                    Frame f = stack(s, pid, JIT + 0x1010).get(0);
                    assertNull(f.function());
                    assertEquals(JIT + 0x1010, f.address());
                    assertEquals("", f.mapping().path(), "not named for a runtime without a map");
                    assertFalse(f.mapping().hasFunctions());
                    clock.advance(Duration.ofSeconds(2));
                }
            }
            assertEquals(0, entries());
        }
    }

    /** The perf map is held by the process's runtimes: gone with them after the idle expiry, read afresh when the process is back. */
    @Test
    void perfMapIsReleasedWithTheProcessStateAndAPidReuseReadsTheNewProcessMap() throws Exception {
        Path proc = dir.resolve("proc");
        Path tmp = process(proc, 90, 90, 1000);
        process(proc, 91, 91, 1000);
        Files.writeString(tmp.resolve("perf-90.map"), "7f1000001000 100 first\n7f1000002000 100 second\n");
        ProcSymbolizerTest.Clock clock = new ProcSymbolizerTest.Clock();
        try (Symbolizer s = symbolizer(proc, clock, PerfMapRuntime.DEFAULT_TOTAL_BYTES)) {
            assertEquals("first", stack(s, 90, JIT + 0x1000).get(0).function());
            assertEquals(2, entries());
            for (int i = 0; i < 13; i++) { // only 91 is sampled for 130 s
                clock.advance(Duration.ofSeconds(10));
                stack(s, 91, JIT + 0x1000);
            }
            assertEquals(1, s.stats().processes(), "90's state, and its perf map, are gone");
            assertEquals("second", stack(s, 90, JIT + 0x2000).get(0).function());
            assertEquals(4, entries(), "read again from scratch");

            // The pid now belongs to a new process (another start time) with a map of its own.
            ProcSymbolizerTest.fakeProcess(proc, 90, 2000, NODE_LINE, JIT_LINE);
            Files.writeString(tmp.resolve("perf-90.map"), "7f1000001000 100 new process\n");
            clock.advance(Duration.ofMillis(10));
            List<Frame> out = new ArrayList<>();
            s.symbolizeUser(90, 2000 * ProcessRegistry.NANOS_PER_TICK, new long[] {JIT + 0x1000}, 1, out);
            assertEquals("new process", out.get(0).function());
        }
    }

    /** All processes' maps share one heap budget: a second process gets what the first leaves. */
    @Test
    void perfMapsShareOneHeapBudget() throws Exception {
        Path proc = dir.resolve("proc");
        StringBuilder big = new StringBuilder();
        for (int i = 0; i < 20_000; i++) {
            big.append(Long.toHexString(JIT + i * 0x20L)).append(" 20 JS:*function_number_").append(i).append('\n');
        }
        for (int pid : new int[] {70, 71}) {
            Files.writeString(process(proc, pid, pid, 1000).resolve("perf-" + pid + ".map"), big);
        }
        ProcSymbolizerTest.Clock clock = new ProcSymbolizerTest.Clock();
        long total = 3L << 20;
        try (Symbolizer s = symbolizer(proc, clock, total)) {
            assertEquals("JS:*function_number_0", stack(s, 70, JIT).get(0).function());
            assertEquals(20_000, entries(), "the first map fits");
            assertEquals(0, perfMaps.counters().get("bytes_over_cap"));
            assertEquals("JS:*function_number_0", stack(s, 71, JIT).get(0).function());
            long second = entries() - 20_000;
            assertTrue(second > 0 && second < 20_000, "the second gets the rest of the budget: " + second + " entries");
            assertTrue(perfMaps.counters().get("bytes_over_cap") > 0);
            assertNull(stack(s, 71, JIT + 19_999 * 0x20L).get(0).function(), "beyond its share: unknown, no error");
        }
    }

}
