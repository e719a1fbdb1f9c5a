package dev.loupe.bpf;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The sampler run inside a PID namespace of its own ({@code unshare --pid --fork --mount-proc}, as a
 * container without the host's pids): a busy process inside is named by its pid there, and a busy process
 * outside never by a pid, even though its host pid is, by construction, the pid of another process inside
 * (the namespace's next pid is set so). {@link PidNamespaceChild} samples and reports; this test knows
 * both sides' pids from the host's {@code /proc}.
 */
class PidNamespaceSamplingTest {
    private static final Pattern NSPID = Pattern.compile("(?m)^NSpid:\\s+(.*)$");

    @TempDir
    Path dir;
    private final List<Process> started = new ArrayList<>();

    @AfterEach
    void killAll() throws InterruptedException {
        for (Process p : started) {
            p.descendants().forEach(ProcessHandle::destroyForcibly); // a namespace's init ignores SIGTERM
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** One section of the child's report. */
    record Run(String mode, int helperCalls, List<Seen> seen, long outsideBefore, long outsideAfter, long dropped) {
        long total(java.util.function.Predicate<Seen> p) {
            return seen.stream().filter(p).mapToLong(Seen::count).sum();
        }
    }

    /** Samples with the same comm, pids, flags and whether they had a user stack. */
    record Seen(String comm, int pid, int tid, int hostPid, int hostTid, int flags, boolean user, long count) {
        boolean outside() {
            return (flags & RawSample.PID_OUTSIDE) != 0;
        }
    }

    @Test
    void insideANamespaceSamplesCarryItsPidsAndOutsideProcessesNone() throws Exception {
        PerfEventSamplerTest.availableOrFail();
        Path outsideSpin = Files.createSymbolicLink(dir.resolve("outside_spin"), Path.of("/bin/sh"));
        Path insideSpin = Files.createSymbolicLink(dir.resolve("inside_spin"), Path.of("/bin/sh"));
        Path decoy = Files.createSymbolicLink(dir.resolve("decoy"), Path.of("/bin/sleep"));
        Path latencyTarget = LatencyTargets.buildC(Path.of("src/test/c/latency_target.c"), dir.resolve("latency_target"));
        long work = LatencyTargets.offsets(latencyTarget, "work").entry();
        // One binary under two names, so that the uprobe on its inode fires in both and the comm tells them apart.
        Path latInside = Files.createSymbolicLink(dir.resolve("lat_inside"), latencyTarget);
        Path latOutside = Files.createSymbolicLink(dir.resolve("lat_outside"), latencyTarget);
        Process outside = start(outsideSpin.toString(), "-c", "while :; do :; done");
        int hostOnly = (int) outside.pid();
        String java = ProcessHandle.current().info().command().orElseThrow();
        // The decoy takes the pid the outside process has on the host; the child JVM filters on inside_spin's pid.
        String script = "echo " + (hostOnly - 1) + " > /proc/sys/kernel/ns_last_pid; " + decoy + " 600 & "
                + insideSpin + " -c 'while :; do :; done' & exec " + java
                + " --enable-native-access=ALL-UNNAMED -cp target/classes:target/test-classes "
                + PidNamespaceChild.class.getName() + " $! 2 " + latInside + " " + work;
        Process unshare = start("unshare", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c", script);
        Report report = new Report(unshare);
        // Once the child samples, the decoy and inside_spin run; they end with it (it is the namespace's init).
        report.await("run ");
        Map<String, int[]> nsPids = nsPidsByComm(unshare);
        assertEquals(2, nsPids.get("decoy").length, "the decoy is one namespace down: " + Arrays.toString(nsPids.get("decoy")));
        assertEquals(hostOnly, nsPids.get("decoy")[1], "test premise: the decoy's pid inside is the outside process's host pid");
        int insideHost = nsPids.get("inside_spin")[0];
        int inside = nsPids.get("inside_spin")[1];
        assertNotEquals(insideHost, inside);

        String attached = report.await("latency attached ").stream().filter(l -> l.startsWith("latency attached ")).findFirst()
                .orElseThrow();
        int latInsidePid = Integer.parseInt(attached.substring("latency attached ".length()));
        Process outsideCaller = start(latOutside.toString(), "flat", "1", "50");
        assertEquals(0, outsideCaller.waitFor(), "the outside caller ran");
        unshare.getOutputStream().write("go\n".getBytes(StandardCharsets.UTF_8));
        unshare.getOutputStream().flush();
        List<String> all = report.await("done");
        Map<String, Run> runs = parse(all);
        assertEquals(List.of("detected", "filtered", "no-helper"), List.copyOf(runs.keySet()), String.join("\n", report.lines));

        Run detected = runs.get("detected");
        assertEquals("TRANSLATE", detected.mode());
        assertEquals(1, detected.helperCalls(), "the translation is in the loaded program");
        assertTrue(detected.total(s -> s.comm().equals("outside_spin")) >= 10, "the outside process was sampled: " + detected);
        assertTrue(detected.total(s -> s.comm().equals("inside_spin")) >= 10, "the inside process was sampled: " + detected);
        for (Seen s : detected.seen()) {
            if (s.comm().equals("outside_spin")) {
                assertEquals(List.of(0, 0, hostOnly, hostOnly, RawSample.PID_OUTSIDE, false), List.of(s.pid(), s.tid(), s.hostPid(),
                        s.hostTid(), s.flags() & ~RawSample.KERNEL_ERROR, s.user()), "outside: no pid, no user stack: " + s);
            }
            if (s.comm().equals("inside_spin")) {
                assertEquals(List.of(inside, inside, insideHost, insideHost, 0, true), List.of(s.pid(), s.tid(), s.hostPid(),
                        s.hostTid(), s.flags() & RawSample.PID_OUTSIDE, s.user()), "inside: its pid here, its host pid beside: " + s);
            }
            assertEquals(s.outside(), s.pid() == 0, "outside exactly when without pid: " + s);
            assertNotEquals(hostOnly, s.pid(), "no sample names the decoy (it sleeps): " + s);
            if (s.outside()) {
                assertEquals(false, s.user(), "no user stack outside: " + s);
            }
        }
        long outsideSamples = detected.total(Seen::outside);
        assertEquals(0, detected.dropped());
        assertTrue(detected.outsideBefore() <= outsideSamples && outsideSamples <= detected.outsideAfter(),
                "counted outside samples " + detected.outsideBefore() + ".." + detected.outsideAfter() + ", delivered " + outsideSamples);

        Run filtered = runs.get("filtered");
        assertTrue(filtered.total(s -> true) >= 10, "filtered on inside_spin's pid here: " + filtered);
        assertEquals(List.of(new Seen("inside_spin", inside, inside, insideHost, insideHost, 0, true, 0)),
                filtered.seen().stream().map(s -> new Seen(s.comm(), s.pid(), s.tid(), s.hostPid(), s.hostTid(),
                        s.flags() & RawSample.PID_OUTSIDE, s.user(), 0)).distinct().toList(), "only inside_spin: " + filtered);

        Run noHelper = runs.get("no-helper");
        assertEquals("ALL_OUTSIDE", noHelper.mode());
        assertEquals(0, noHelper.helperCalls(), "the helper a kernel may lack is not in the loaded program");
        assertTrue(noHelper.total(s -> s.hostPid() == insideHost) >= 10, "inside_spin still sampled: " + noHelper);
        for (Seen s : noHelper.seen()) {
            assertEquals(List.of(0, 0, RawSample.PID_OUTSIDE, false), List.of(s.pid(), s.tid(), s.flags() & RawSample.PID_OUTSIDE,
                    s.user()), "without the helper every process is outside: " + s);
        }
        long none = noHelper.total(s -> true);
        assertTrue(noHelper.outsideBefore() <= none && none <= noHelper.outsideAfter(), noHelper.toString());

        // Latency probes on one binary run inside and outside: the inside calls under the caller's pid there,
        // with its stack; the outside ones under pid 0, without a stack (nothing to read it with).
        Map<String, Long> groups = new TreeMap<>();
        for (String l : all) {
            if (l.startsWith("group ")) {
                int last = l.lastIndexOf(' ');
                groups.put(l.substring("group ".length(), last), Long.parseLong(l.substring(last + 1)));
            }
        }
        assertEquals(List.of("lat_inside " + latInsidePid, "lat_outside 0 0 false"), groups.keySet().stream()
                .map(k -> k.startsWith("lat_inside ") ? k.substring(0, k.indexOf(' ', "lat_inside ".length())) : k).distinct().toList(),
                "groups: " + groups);
        assertEquals(50, groups.entrySet().stream().filter(e -> e.getKey().startsWith("lat_inside ")).mapToLong(Map.Entry::getValue).sum());
        assertEquals(50, groups.get("lat_outside 0 0 false"));
        for (String k : groups.keySet()) {
            if (k.startsWith("lat_inside ")) {
                String[] f = k.split(" ");
                assertTrue(Integer.parseInt(f[2]) >= 2 && f[3].equals("false"), "inside: entry and callers: " + k);
            }
        }
    }

    private Process start(String... cmd) throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        started.add(p);
        return p;
    }

    /** The child's output, read as it comes. */
    private static final class Report {
        final List<String> lines = new ArrayList<>();

        Report(Process p) {
            Thread.ofVirtual().start(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        synchronized (lines) {
                            lines.add(line);
                            lines.notifyAll();
                        }
                    }
                } catch (IOException ignored) {
                    // the process was killed
                }
            });
        }

        /** The lines so far, once one starts with {@code prefix}; within two minutes (three samplers load and run). */
        List<String> await(String prefix) throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
            synchronized (lines) {
                while (lines.stream().noneMatch(l -> l.startsWith(prefix))) {
                    long left = end - System.nanoTime();
                    assertTrue(left > 0, "no line \"" + prefix + "\" from the child:\n" + String.join("\n", lines));
                    lines.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                }
                return List.copyOf(lines);
            }
        }
    }

    /** NSpid (host first) of each process in the namespace, by comm. */
    private static Map<String, int[]> nsPidsByComm(Process unshare) throws IOException {
        Map<String, int[]> out = new HashMap<>();
        for (ProcessHandle h : unshare.descendants().toList()) {
            Path proc = Path.of("/proc", Long.toString(h.pid()));
            Matcher m = NSPID.matcher(Files.readString(proc.resolve("status")));
            assertTrue(m.find(), "NSpid of " + h.pid());
            out.put(Files.readString(proc.resolve("comm")).strip(),
                    Arrays.stream(m.group(1).trim().split("\\s+")).mapToInt(Integer::parseInt).toArray());
        }
        return out;
    }

    private static Map<String, Run> parse(List<String> report) {
        Map<String, Run> runs = new java.util.LinkedHashMap<>();
        String name = null;
        String mode = null;
        int calls = -1;
        List<Seen> seen = new ArrayList<>();
        for (String line : report) {
            String[] f = line.split(" ");
            switch (f[0]) {
                case "run" -> {
                    name = f[1];
                    mode = f[2];
                    seen = new ArrayList<>();
                }
                case "calls" -> calls = Integer.parseInt(f[1]);
                case "seen" -> seen.add(new Seen(f[1], Integer.parseInt(f[2]), Integer.parseInt(f[3]), Integer.parseInt(f[4]),
                        Integer.parseInt(f[5]), Integer.parseInt(f[6]), Boolean.parseBoolean(f[7]), Long.parseLong(f[8])));
                case "stats" -> runs.put(name, new Run(mode, calls, List.copyOf(seen), Long.parseLong(f[1]), Long.parseLong(f[2]),
                        Long.parseLong(f[3])));
                default -> { } // the JVM's and libbpf's own lines
            }
        }
        return runs;
    }
}
