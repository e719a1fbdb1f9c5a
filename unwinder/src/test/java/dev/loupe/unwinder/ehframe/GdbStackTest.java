package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.LoadSegment;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The reference unwinder over compiled tables walks real stacks exactly as gdb does: a program built
 * with {@code -O2 -fomit-frame-pointer} is stopped by gdb, which records the registers, the stack's
 * memory, the mappings and its own backtrace (physical frames); the Java walk over the same memory
 * must give the same PCs, frame for frame, and end at the end of the stack.
 */
class GdbStackTest {
    static final String SOURCE = """
            #include <alloca.h>
            #include <signal.h>
            #include <stdio.h>
            #include <string.h>
            #include <sys/time.h>
            volatile int sink;
            volatile int alarmed;
            __attribute__((noinline)) int leaf(int n) { raise(SIGTRAP); return n + sink; }
            __attribute__((noinline)) int recurse(int n);
            /* alloca forces an RBP-based CFA even with -fomit-frame-pointer */
            __attribute__((noinline)) int with_alloca(int n) { char *p = alloca(n + 16); memset(p, n, n + 16); sink += p[n]; return recurse(n - 1) + p[1]; }
            __attribute__((noinline)) int recurse(int n) {
              char buf[32]; memset(buf, n, sizeof buf); sink += buf[n % 32];
              if (n == 0) return leaf(n);
              if (n % 7 == 3) return with_alloca(n);
              return recurse(n - 1) + buf[1];
            }
            __attribute__((noinline)) void handler(int sig) { recurse(10); alarmed = 1; }
            __attribute__((noinline)) void spin(void) { while (!alarmed) sink++; }
            int main(int argc, char **argv) {
              if (argc > 1 && strcmp(argv[1], "signal") == 0) {
                signal(SIGALRM, handler);
                struct itimerval it = {{0, 0}, {0, 10000}};
                setitimer(ITIMER_REAL, &it, 0);
                spin();
              } else if (argc > 1 && strcmp(argv[1], "plt") == 0) {
                puts("through the plt");
              } else {
                recurse(60);
              }
              return sink & 1;
            }
            """;

    static final String SCRIPT = """
            import gdb
            inf = gdb.selected_inferior()
            maps = open('/proc/%d/maps' % inf.pid).read()
            for line in maps.splitlines():
                print('MAP ' + line)
            f = gdb.newest_frame()
            sp = int(f.read_register('rsp')) & 0xffffffffffffffff
            print('REG %x %x %x' % (f.pc(), sp, int(f.read_register('rbp')) & 0xffffffffffffffff))
            end = None
            for line in maps.splitlines():
                lo, hi = [int(x, 16) for x in line.split()[0].split('-')]
                if lo <= sp < hi:
                    end = hi
            gdb.execute('dump binary memory %s %d %d' % (OUT, sp, end))
            print('STACK %x' % sp)
            while f is not None:
                if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
                    print('FRAME %x %s' % (f.pc(), f.name()))
                f = f.older()
            """;

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
            "deep, '', ''",
            "signal, '', ''",
            "plt, '-Wl,-z,lazy', 2",
            "plt, '-fcf-protection=full -Wl,-z,ibtplt -Wl,-z,lazy', 4",
    })
    void walksLikeGdb(String scenario, String flags, String steps) throws Exception {
        List<String> f = new ArrayList<>(List.of("-O2", "-fomit-frame-pointer"));
        for (String s : flags.split(" ")) {
            if (!s.isBlank()) {
                f.add(s);
            }
        }
        Path prog = TestPrograms.compile(dir, "target", SOURCE, f.toArray(String[]::new));
        Path script = dir.resolve("dump.py");
        Path stackFile = dir.resolve("stack.bin");
        Files.writeString(script, "OUT = '" + stackFile + "'\n" + SCRIPT);
        List<String> cmd = new ArrayList<>(List.of("gdb", "-nx", "-batch", "-ex", "set pagination off", "-ex",
                "set backtrace past-main on", "-ex", "set backtrace past-entry on", "-ex", "set debuginfod enabled off"));
        if (steps.isEmpty()) {
            cmd.addAll(List.of("-ex", "run"));
        } else {
            // Into the lazy .plt entry, just after its push: the first call of puts goes puts@plt -> jmp *GOT ->
            // (.plt.sec's GOT slot leads to the .plt entry: endbr64) -> push -> here.
            cmd.addAll(List.of("-ex", "break *'puts@plt'", "-ex", "run", "-ex", "stepi " + steps));
        }
        cmd.addAll(List.of("-ex", "source " + script, "--args", prog.toString(), scenario));
        String out = TestPrograms.run(cmd);

        List<long[]> gdbFrames = new ArrayList<>();
        List<String> names = new ArrayList<>();
        long[] regs = null;
        long stackBase = 0;
        Map<String, UnwindTable> tables = new HashMap<>();
        List<Object[]> maps = new ArrayList<>(); // {start, end, table, bias}
        for (String line : out.split("\n")) {
            String[] w = line.trim().split("\\s+");
            switch (w[0]) {
                case "MAP" -> {
                    if (w.length >= 7 && w[2].contains("x") && w[6].startsWith("/")) {
                        String[] range = w[1].split("-");
                        long start = Long.parseUnsignedLong(range[0], 16);
                        long end = Long.parseUnsignedLong(range[1], 16);
                        long off = Long.parseUnsignedLong(w[3], 16);
                        Path file = Path.of(w[6]);
                        UnwindTable t = tables.computeIfAbsent(w[6], k -> build(file));
                        maps.add(new Object[] {start, end, t, bias(file, start, off)});
                    }
                }
                case "REG" -> regs = new long[] {Long.parseUnsignedLong(w[1], 16), Long.parseUnsignedLong(w[2], 16),
                        Long.parseUnsignedLong(w[3], 16)};
                case "STACK" -> stackBase = Long.parseUnsignedLong(w[1], 16);
                case "FRAME" -> {
                    gdbFrames.add(new long[] {Long.parseUnsignedLong(w[1], 16)});
                    names.add(w.length > 2 ? w[2] : "?");
                }
                default -> { }
            }
        }
        assertTrue(regs != null && !gdbFrames.isEmpty(), "gdb output:\n" + out);
        ByteBuffer stack = ByteBuffer.wrap(Files.readAllBytes(stackFile)).order(ByteOrder.LITTLE_ENDIAN);
        long base = stackBase;
        ReferenceUnwinder.Memory mem = a -> {
            long o = a - base;
            return o >= 0 && o <= stack.limit() - 8 ? OptionalLong.of(stack.getLong((int) o)) : OptionalLong.empty();
        };
        ReferenceUnwinder.Tables lookup = pc -> {
            for (Object[] m : maps) {
                if (Long.compareUnsigned(pc, (long) m[0]) >= 0 && Long.compareUnsigned(pc, (long) m[1]) < 0) {
                    return new ReferenceUnwinder.Mapped((UnwindTable) m[2], (long) m[3]);
                }
            }
            return null;
        };
        ReferenceUnwinder.Walk walk = ReferenceUnwinder.walk(ReferenceUnwinder.Frame.leaf(regs[0], regs[1], regs[2]), lookup, mem, 512);
        List<String> want = new ArrayList<>();
        List<String> got = new ArrayList<>();
        for (int i = 0; i < gdbFrames.size(); i++) {
            want.add(Long.toHexString(gdbFrames.get(i)[0]) + " " + names.get(i));
        }
        for (int i = 0; i < walk.frames().size(); i++) {
            got.add(Long.toHexString(walk.frames().get(i).pc()) + (i < names.size() ? " " + names.get(i) : " ?"));
        }
        assertEquals(String.join("\n", want), String.join("\n", got), "frames (gdb vs table walk), walk ended: " + walk.end());
        assertEquals(StopReason.END_OF_STACK, walk.end());
        List<String> kinds = new ArrayList<>(); // the rule each step used, to show every kind was exercised
        for (ReferenceUnwinder.Frame fr : walk.frames()) {
            long pc = fr.exactPc() ? fr.pc() : fr.pc() - 1;
            ReferenceUnwinder.Mapped m = lookup.find(pc);
            kinds.add(UnwindRule.toString(m.table().lookup(pc - m.bias())));
        }
        assertTrue(names.contains("_start"), names.toString());
        switch (scenario) {
            case "deep" -> {
                assertTrue(names.stream().filter("recurse"::equals).count() >= 50, names.toString());
                assertTrue(kinds.stream().anyMatch(k -> k.startsWith("rbp+")), kinds.toString());
            }
            case "signal" -> {
                assertTrue(names.contains("__restore_rt") && names.contains("spin") && names.contains("handler"), names.toString());
                assertEquals("signal", kinds.get(names.indexOf("__restore_rt")), kinds.toString());
            }
            default -> {
                assertEquals(steps.equals("2") ? "plt(rip&15>=11)" : "plt(rip&15>=9)", kinds.getFirst(), names + "\n" + kinds);
                assertTrue((regs[0] & 15) >= (steps.equals("2") ? 11 : 9), "stopped after the push: " + Long.toHexString(regs[0]));
            }
        }
    }

    private static UnwindTable build(Path file) {
        try {
            return UnwindTableBuilder.build(file);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** What the mapping at {@code start} (file offset {@code off}) adds to the file's virtual addresses. */
    private static long bias(Path file, long start, long off) throws Exception {
        for (LoadSegment s : ElfFile.open(file).loadSegments()) {
            if (off >= s.offset() && off < s.offset() + s.fileSize()) {
                return start - (s.vaddr() + (off - s.offset()));
            }
        }
        throw new IllegalStateException("no PT_LOAD for offset " + off + " in " + file);
    }
}
