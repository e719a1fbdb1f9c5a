package dev.loupe.unwinder.proc;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The shared /proc reader over a fake /proc: what listeners hear, and when. */
class ProcessRegistryTest {
    @TempDir
    Path proc;

    private void process(int pid, long start, String... execPaths) throws IOException {
        Path d = Files.createDirectories(proc.resolve(Integer.toString(pid)));
        Files.writeString(d.resolve("stat"), pid + " (a (b) c) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " + start + " 100 10 0\n");
        StringBuilder maps = new StringBuilder("00400000-00401000 r--p 00000000 08:01 5 /bin/x\n");
        long at = 0x7f0000000000L;
        for (String p : execPaths) {
            maps.append(String.format("%x-%x r-xp 00001000 08:01 7 %s%n", at, at + 0x1000, p));
            at += 0x10000;
        }
        Files.writeString(d.resolve("maps"), maps.toString());
    }

    @Test
    void listenersHearAppearChangeReuseAndExit() throws Exception {
        ProcessRegistry r = new ProcessRegistry(proc, 100);
        List<String> heard = new CopyOnWriteArrayList<>();
        r.addListener(new ProcessRegistry.Listener() {
            @Override
            public void appeared(ProcessRegistry.Snapshot p) {
                heard.add("appeared " + p.pid() + "@" + p.startTicks() + " " + p.executable().size());
            }

            @Override
            public void mappingsChanged(ProcessRegistry.Snapshot p) {
                heard.add("changed " + p.pid() + " " + p.executable().size());
            }

            @Override
            public void exited(int pid, long startTicks) {
                heard.add("exited " + pid + "@" + startTicks);
            }
        });
        process(10, 111, "/lib/a.so");
        ProcessRegistry.Snapshot s = r.read(10);
        assertEquals(111, s.startTicks(), "start time after the last ')' of a comm with parens and spaces");
        assertEquals(1, s.executable().size(), "only executable mappings");
        r.read(10); // the same: nothing to tell
        process(10, 111, "/lib/a.so", "/lib/b.so"); // dlopen
        r.read(10);
        process(10, 222, "/lib/c.so"); // the pid now belongs to a new process
        r.read(10);
        assertEquals(Set.of(10), r.scan());
        deleteTree(proc.resolve("10"));
        assertEquals(Set.of(), r.scan());
        assertEquals(List.of("appeared 10@111 1", "changed 10 2", "exited 10@111", "appeared 10@222 1", "exited 10@222"), heard);
        assertEquals(0, r.size());
        assertThrows(IOException.class, () -> r.read(10), "a gone process is an IOException, not a crash");
        assertTrue(r.failures() >= 1);
    }

    /**
     * A read for the process a sample named (its start) takes its maps and checks that start once; when the pid names
     * another process by now, the read is of that one, by the full stat-maps-stat protocol. An exit event names its
     * process: an earlier process's exit leaves a later one's view alone, and listeners hear of both.
     */
    @Test
    void aReadForAKnownStartAndExitsOfExactProcesses() throws Exception {
        ProcessRegistry r = new ProcessRegistry(proc, 100);
        List<String> heard = new CopyOnWriteArrayList<>();
        r.addListener(new ProcessRegistry.Listener() {
            @Override
            public void exited(int pid, long startTicks) {
                heard.add("exited " + pid + "@" + startTicks);
            }
        });
        process(20, 300, "/lib/a.so");
        assertEquals(300, r.read(20, 300).startTicks());
        process(20, 400, "/lib/b.so", "/lib/c.so"); // reused since the sample
        ProcessRegistry.Snapshot s = r.read(20, 300);
        assertEquals(400, s.startTicks(), "the process the pid names now, never the old start with the new maps");
        assertEquals(2, s.executable().size());
        r.processExited(20, 300); // the old one's exit, reported late
        assertEquals(400, r.cached(20).orElseThrow().startTicks(), "the later process's view stays");
        r.processExited(20, 400);
        assertTrue(r.cached(20).isEmpty());
        r.processExited(21, 5); // never read: listeners still hear it (they may hold state of their own)
        assertEquals(List.of("exited 20@300", "exited 20@300", "exited 20@400", "exited 21@5"), heard,
                "the reuse found by the read, then each exit event");
    }

    private static void deleteTree(Path p) throws IOException {
        try (var s = Files.list(p)) {
            for (Path c : s.toList()) {
                Files.delete(c);
            }
        }
        Files.delete(p);
    }
}
