package dev.loupe.it;

import dev.loupe.agent.host.PidNamespaces;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The packaged agent in a PID namespace of its own ({@code unshare --pid --fork --mount-proc}, as in a
 * container without the host's pids), profiling host-wide while one busy process runs inside with it and
 * one outside. The namespace's next pid is set so that an idle decoy inside has the outside process's host
 * pid: read by that pid, the decoy's /proc would be the wrong process's. The inside process is profiled
 * under its pid there, unwound with tables (built without frame pointers) and symbolized; the outside one
 * is in the profile only labelled {@code pid_namespace=outside} with its comm, with no user frame.
 */
class PidNamespaceProfileTest {
    private static final List<String> HOT_STACK = List.of("hot_a", "middle", "outer", "main");

    @TempDir
    Path dir;
    private Process outside;
    private Process unshare;

    @AfterEach
    void kill() throws InterruptedException {
        if (unshare != null) {
            unshare.descendants().forEach(ProcessHandle::destroyForcibly); // the namespace's init may outlive the test
        }
        Targets.kill(unshare);
        Targets.kill(outside);
    }

    @Test
    void insideProcessesAreProfiledByTheirPidThereAndOutsideOnesByNone() throws Exception {
        Path insideHot = Targets.build("callchain.c", dir, "inside_hot", "-fomit-frame-pointer");
        Path outsideHot = Targets.build("callchain.c", dir, "outside_hot", "-fomit-frame-pointer");
        Path decoy = Files.createSymbolicLink(dir.resolve("decoy"), Path.of("/bin/sleep"));
        outside = Targets.start(outsideHot);
        int outsideHost = (int) outside.pid();
        Path out = dir.resolve("profiles");
        Path log = dir.resolve("agent.log");
        String agent = AgentProcess.command("--frequency", "99", "--interval", "60s", "--duration", "8s",
                "--output", out.toString(), "--http", "off").stream().map(PidNamespaceProfileTest::quoted)
                .collect(Collectors.joining(" "));
        String script = "echo " + (outsideHost - 1) + " > /proc/sys/kernel/ns_last_pid; " + quoted(decoy.toString())
                + " 600 & " + quoted(insideHot.toString()) + " & exec " + agent;
        unshare = new ProcessBuilder("unshare", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c", script)
                .directory(dir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile()).start();

        awaitLog(unshare, log, "profiling at");
        Map<String, int[]> nsPids = nsPidsByComm(unshare);
        assertEquals(List.of(outsideHost), tail(nsPids.get("decoy")), "test premise: the decoy's pid inside is the outside process's host pid");
        int inside = tail(nsPids.get("inside_hot")).get(0);
        long namespace = PidNamespaces.system().namespaceOf(Integer.toString(nsPids.get("inside_hot")[0]));
        assertTrue(unshare.waitFor(90, TimeUnit.SECONDS), "the agent ends after --duration:\n" + Files.readString(log));
        assertEquals(0, unshare.exitValue(), Files.readString(log));
        assertTrue(Files.readString(log).contains("PID namespace " + namespace + ": pids as seen in it"), "the agent says which pids it reports:\n" + Files.readString(log));

        List<Profiles.Stack> stacks = Profiles.stacksOfDir(out);
        List<Profiles.Stack> insideStacks = stacks.stream().filter(s -> "inside_hot".equals(s.labels().get("comm"))).toList();
        List<Profiles.Stack> outsideStacks = stacks.stream().filter(s -> "outside_hot".equals(s.labels().get("comm"))).toList();

        long hotSamples = insideStacks.stream().filter(s -> s.startsWith(HOT_STACK.toArray(String[]::new)))
                .mapToLong(Profiles.Stack::count).sum();
        assertTrue(hotSamples > 60, "the inside process's hot_a stack, unwound and symbolized: " + hotSamples);
        assertEquals(Set.of((long) inside), insideStacks.stream().map(Profiles.Stack::pid).collect(Collectors.toSet()),
                "the inside process under its pid there");
        assertTrue(stacks.stream().filter(s -> s.pid() == inside).allMatch(s -> Set.of("inside_hot", "sh")
                .contains(s.labels().get("comm"))), "its pid names nothing else (sh: before its exec)");

        assertTrue(Profiles.total(outsideStacks) > 60, "the outside process is in the profile: " + Profiles.total(outsideStacks));
        for (Profiles.Stack s : outsideStacks) {
            Map<String, String> labels = new java.util.TreeMap<>(s.labels());
            String node = labels.remove("node"); // the agent's host name (its UTS namespace's), on every local sample
            assertEquals(Map.of("comm", "outside_hot", "pid_namespace", "outside"), labels, "labels of " + s);
            assertEquals(insideStacks.get(0).labels().get("node"), node, "the same node label as the inside process's");
            assertTrue(node != null && !node.isEmpty(), "node: " + s);
            assertEquals("[outside the agent's PID namespace]", s.functions().get(s.functions().size() - 1), "root of " + s);
            assertTrue(s.functions().stream().noneMatch(HOT_STACK::contains), "no user function: " + s);
            assertTrue(s.files().stream().allMatch(f -> f.isEmpty() || f.equals("[kernel.kallsyms]")), "no user mapping: " + s);
        }
        assertEquals(List.of(), stacks.stream().filter(s -> s.pid() == outsideHost).toList(),
                "the outside process's host pid (the decoy's inside) names no sample");
        assertEquals(List.of(), stacks.stream().filter(s -> "outside".equals(s.labels().get("pid_namespace"))
                && (s.labels().containsKey("pid") || s.labels().containsKey("tid"))).toList(), "outside: never a pid");
    }

    private static String quoted(String arg) {
        return "'" + arg.replace("'", "'\\''") + "'";
    }

    private static List<Integer> tail(int[] nsPids) {
        return Arrays.stream(nsPids).skip(1).boxed().toList();
    }

    private static void awaitLog(Process p, Path log, String line) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!Files.readString(log).contains(line)) {
            assertTrue(p.isAlive(), "the agent exited:\n" + Files.readString(log));
            assertTrue(System.nanoTime() < end, "the agent did not start within 60 s:\n" + Files.readString(log));
            Thread.sleep(50);
        }
    }

    /** The pids (host first, from NSpid) of each process in the namespace, by comm. */
    private static Map<String, int[]> nsPidsByComm(Process unshare) throws IOException {
        PidNamespaces host = PidNamespaces.system();
        Map<String, int[]> out = new HashMap<>();
        for (ProcessHandle h : unshare.descendants().toList()) {
            out.put(Files.readString(Path.of("/proc", Long.toString(h.pid()), "comm")).strip(), host.nsPids((int) h.pid()));
        }
        return out;
    }
}
