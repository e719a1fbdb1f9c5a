package dev.loupe.agent.host;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class PidNamespacesTest {
    @Test
    void readsNamespaceLinks() {
        assertEquals(4026531836L, PidNamespaces.parseNamespaceLink("pid:[4026531836]"));
        assertEquals(PidNamespaces.INITIAL_PID_NAMESPACE, PidNamespaces.parseNamespaceLink("pid:[4026531836]"));
        assertEquals(4026532177L, PidNamespaces.parseNamespaceLink("pid:[4026532177]"));
        assertEquals("not a PID namespace link: net:[4026531840]", assertThrows(IllegalArgumentException.class,
                () -> PidNamespaces.parseNamespaceLink("net:[4026531840]")).getMessage());
    }

    /** A /proc of three processes: 100 in the initial namespace, 200 and 300 as pid 7 of two others. */
    private static Path fakeProc(Path dir) throws IOException {
        String[][] procs = {{"100", "4026531836", "100"}, {"200", "4026532000", "200\t7"}, {"300", "4026532999", "300\t7"}};
        for (String[] p : procs) {
            Path d = Files.createDirectories(dir.resolve(p[0]).resolve("ns")).getParent();
            Files.createSymbolicLink(d.resolve("ns/pid"), Path.of("pid:[" + p[1] + "]"));
            Files.writeString(d.resolve("status"), "Name:\tx\nPid:\t" + p[0] + "\nNSpid:\t" + p[2] + "\n");
        }
        Files.createDirectories(dir.resolve("net"));
        Files.createDirectories(dir.resolve("400")); // exited while listed: no status
        Files.createSymbolicLink(dir.resolve("self"), Path.of("200"));
        return dir;
    }

    @Test
    void translatesPidsInAProcTree(@TempDir Path dir) throws IOException {
        PidNamespaces ns = new PidNamespaces(fakeProc(dir));
        assertEquals(OptionalInt.of(7), ns.pidInOwnNamespace(200));
        assertEquals(OptionalInt.of(100), ns.pidInOwnNamespace(100));
        assertEquals(OptionalInt.of(200), ns.pidFromNamespace(4026532000L, 7));
        assertEquals(OptionalInt.of(300), ns.pidFromNamespace(4026532999L, 7));
        assertEquals(OptionalInt.empty(), ns.pidFromNamespace(4026532000L, 8));
        assertEquals(OptionalInt.of(100), ns.pidFromNamespace(PidNamespaces.INITIAL_PID_NAMESPACE, 100));
        assertEquals(4026532000L, ns.namespaceOf("self"));
        assertEquals(false, ns.selfInInitialNamespace());
    }

    /**
     * The real /proc, checked against a fact independent of namespace links: kernel threads (kthreadd is
     * pid 2) are visible only in the initial namespace, and a single NSpid entry means this /proc is of our
     * own namespace.
     */
    @Test
    void knowsWhetherThisProcessIsInTheInitialNamespace() throws IOException {
        PidNamespaces ns = PidNamespaces.system();
        int self = (int) ProcessHandle.current().pid();
        boolean kthreadd = Files.exists(Path.of("/proc/2/comm")) && Files.readString(Path.of("/proc/2/comm")).equals("kthreadd\n");
        boolean ownProc = ns.nsPids(self).length == 1;
        assertEquals(kthreadd && ownProc, ns.selfInInitialNamespace());
        assertEquals(self, ns.nsPids(self)[0], "the first NSpid is the pid in this /proc");
    }

    /** A real child namespace: {@code unshare --pid --fork} makes its child pid 1 of a new namespace. */
    @Test
    void translatesPidsOfARealChildNamespace() throws Exception {
        Process unshare = new ProcessBuilder("unshare", "--pid", "--fork", "sleep", "30").inheritIO().start();
        try {
            ProcessHandle child = awaitChild(unshare);
            int pid = (int) child.pid();
            PidNamespaces ns = PidNamespaces.system();
            long childNs = ns.namespaceOf(Integer.toString(pid));
            assertNotEquals(ns.namespaceOf(Long.toString(unshare.pid())), childNs, "unshare stays, its child moves");
            assertNotEquals(PidNamespaces.INITIAL_PID_NAMESPACE, childNs);
            assertArrayEquals(new int[] {pid, 1}, ns.nsPids(pid));
            assertEquals(OptionalInt.of(1), ns.pidInOwnNamespace(pid));
            assertEquals(OptionalInt.of(pid), ns.pidFromNamespace(childNs, 1));
        } finally {
            // A namespace's init takes from outside only the signals it handles, and SIGKILL.
            unshare.descendants().forEach(ProcessHandle::destroyForcibly);
            assertEquals(true, unshare.waitFor(10, TimeUnit.SECONDS), "unshare ends with its child");
        }
    }

    private static ProcessHandle awaitChild(Process p) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            List<ProcessHandle> children = p.children().toList();
            if (children.size() == 1) {
                return children.get(0);
            }
            assertEquals(true, p.isAlive(), "unshare exited with " + (p.isAlive() ? "" : p.exitValue()));
            Thread.sleep(10);
        }
        throw new AssertionError("unshare --pid --fork started no child within 10 s");
    }
}
