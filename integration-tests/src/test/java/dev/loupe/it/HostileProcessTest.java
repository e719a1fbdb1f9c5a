package dev.loupe.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 24: processes whose memory lies about their runtime, profiled by the real agent (real BPF sampling, the JVM
 * code cache reader on) beside a process that does not lie.
 * <ul>
 * <li>Five programs that load a fake {@code libjvm.so} ({@code fake_libjvm.c}) exporting HotSpot's symbols with
 * tables that lie: name pointers into an unmapped page; a code heap of 4 TiB; one of 4 GiB at 16-byte segments (a
 * segment map of 256 MiB, which the agent once allocated whole); a constants table without end; and a code cache that
 * reads well, over the page where the program runs, whose nmethod's {@code Method*} and debug information point at
 * themselves and whose strings name a Java method.</li>
 * <li>One program ({@code hostile_stacks}) whose threads' frame-pointer chains are a 1-cycle, a 2-cycle, and pointers
 * into an unmapped page (the frame pointer, and a return address).</li>
 * <li>{@code deeprec}, whose stacks are known.</li>
 * </ul>
 * Over the run the agent keeps sampling and naming the known process; the hostile processes' samples are named only
 * by their real native functions (nothing in a Java mapping, nothing from the fake tables' strings); the agent's CPU
 * time and RSS stay bounded (printed); and it says about each fake JVM exactly one line, naming its pid and why.
 */
class HostileProcessTest {
    static final List<String> LIES = List.of("unmapped-names", "huge-heap", "big-segmap", "endless-table", "self-loop");
    /** What each lie comes to in the agent's one line about it. */
    static final Map<String, String> WHY = Map.of(
            "unmapped-names", "layout cannot be read (gHotSpotVMStructs[0].typeName unreadable",
            "huge-heap", "cannot read the code cache of pid PID: CodeHeap 0 at",
            "big-segmap", "cannot read the code cache of pid PID: CodeHeap 0 at",
            "endless-table", "layout cannot be read (gHotSpotVMIntConstants: no terminating entry within",
            "self-loop", "jit tables: pid PID (25-lying-jvm): 1 compiled blobs");
    /** Strings of the fake tables (and the Java names they spell) that no frame may be named by. */
    static final Set<String> FAKE_STRINGS = Set.of("EvilJava", "lie", "EvilJava.lie", "[nmethod]", "nmethod", "25-lying-jvm");
    static final double MAX_CPU_SHARE = 0.25;
    static final long MAX_RSS_KB = 400 * 1024;

    @TempDir
    static Path dir;
    static final List<Process> targets = new ArrayList<>();
    static final Map<String, Long> fakeJvms = new LinkedHashMap<>();
    static long stacks;
    static long known;
    static Path fakeLib;
    static Path fakeJava;
    static Path stacksBin;
    static Path deeprec;
    static String log;
    static List<Profiles.Stack> samples;
    static double cpuShare;
    static long rssKb;

    @BeforeAll
    static void profileHostileProcesses() throws Exception {
        Path libDir = Files.createDirectories(dir.resolve("jvm"));
        fakeLib = libDir.resolve("libjvm.so");
        Commands.run(List.of("gcc", "-O2", "-fPIC", "-shared", Targets.SOURCES.resolve("fake_libjvm.c").toString(),
                "-o", fakeLib.toString()), 60).check();
        fakeJava = dir.resolve("fake_java");
        Commands.run(List.of("gcc", "-O2", Targets.SOURCES.resolve("fake_java.c").toString(), "-L" + libDir, "-ljvm",
                "-Wl,-rpath," + libDir, "-o", fakeJava.toString()), 60).check();
        stacksBin = dir.resolve("hostile_stacks");
        Commands.run(List.of("gcc", "-O2", "-pthread", Targets.SOURCES.resolve("hostile_stacks.c").toString(),
                Targets.SOURCES.resolve("hostile_stacks.S").toString(), "-o", stacksBin.toString()), 60).check();
        deeprec = Targets.build("deeprec.c", dir, "deeprec", "-fomit-frame-pointer");

        for (String lie : LIES) {
            ProcessBuilder pb = new ProcessBuilder(fakeJava.toString()).redirectErrorStream(true);
            pb.environment().put("LOUPE_FAKE_JVM", lie);
            fakeJvms.put(lie, startReady(pb, "ready " + lie));
        }
        stacks = startReady(new ProcessBuilder(stacksBin.toString()).redirectErrorStream(true), "ready");
        Process d = new ProcessBuilder(deeprec.toString()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        targets.add(d);
        known = d.pid();

        List<String> pids = new ArrayList<>();
        fakeJvms.values().forEach(p -> pids.add(Long.toString(p)));
        pids.add(Long.toString(stacks));
        pids.add(Long.toString(known));
        Path out = dir.resolve("profiles");
        try (AgentProcess agent = AgentProcess.start(dir, "--pid", String.join(",", pids), "--frequency", "19",
                "--interval", "60s", "--output", out.toString(), "--http", "off", "--jvm-code-cache", "on")) {
            agent.awaitSampling(Duration.ofSeconds(60));
            long[] before = cpuTicks(agent.pid());
            long start = System.nanoTime();
            // A run of at least 20 s, until the agent has said what it will about every fake JVM (deadline 90 s).
            long deadline = start + Duration.ofSeconds(90).toNanos();
            while (System.nanoTime() - start < Duration.ofSeconds(20).toNanos() || !saidAboutEveryFake(agent.log())) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("the agent did not speak of every fake JVM within 90 s:\n" + agent.log());
                }
                Thread.sleep(200);
            }
            long[] after = cpuTicks(agent.pid());
            double seconds = (System.nanoTime() - start) / 1e9;
            cpuShare = (after[0] - before[0]) / 100.0 / seconds;
            rssKb = rssKb(agent.pid());
            System.out.printf("HostileProcessTest: agent CPU %.1f %% of a core over %.1f s at 19 Hz (user %.2f s, system %.2f s),"
                    + " RSS %d MB%n", 100 * cpuShare, seconds, (after[1] - before[1]) / 100.0, (after[2] - before[2]) / 100.0,
                    rssKb / 1024);
            agent.terminate(); // SIGTERM flushes the interval's profile
            int exit = agent.awaitExit(Duration.ofSeconds(60));
            assertTrue(exit == 0 || exit == 143, "exit " + exit + " after SIGTERM:\n" + agent.log());
            log = agent.log();
        }
        for (Process t : targets) {
            assertTrue(t.isAlive(), "the agent never harms a target: " + t.pid());
        }
        samples = Profiles.stacksOfDir(out);
    }

    @AfterAll
    static void stopTargets() throws InterruptedException {
        for (Process t : targets) {
            Targets.kill(t);
        }
    }

    /** Samples taken before the process's unwind tables were live (frame pointers only), as the agent labels them. */
    static boolean fallback(Profiles.Stack s) {
        return "frame_pointers".equals(s.labels().get("unwind"));
    }

    @Test
    void theKnownProcessIsStillSampledAndNamed() {
        long all = 0;
        long fallback = 0;
        long named = 0;
        List<Profiles.Stack> other = new ArrayList<>();
        for (Profiles.Stack s : samples) {
            if (s.pid() != known) {
                continue;
            }
            if (fallback(s)) {
                fallback += s.count();
                continue;
            }
            all += s.count();
            List<String> u = s.user();
            if (u.size() > 3 && u.get(0).equals("leaf") && u.get(1).equals("recurse") && u.contains("spin_forever") && u.contains("main")) {
                named += s.count();
            } else if (other.size() < 3) {
                other.add(s);
            }
        }
        System.out.printf("HostileProcessTest: deeprec %d samples (and %d before its tables), %d named leaf, recurse ..."
                + " spin_forever, main%n", all, fallback, named);
        assertTrue(all >= 15, "deeprec samples: " + all);
        assertTrue(named >= 0.9 * all, named + " of " + all + " named; e.g. " + other);
    }

    @Test
    void fakeJvmsAreNamedOnlyByTheirNativeCode() throws Exception {
        Set<String> exe = symbols(fakeJava);
        Set<String> lib = symbols(fakeLib);
        for (Map.Entry<String, Long> f : fakeJvms.entrySet()) {
            long all = 0;
            long spin = 0;
            long inHeap = 0;
            long underMain = 0;
            List<Profiles.Stack> other = new ArrayList<>();
            for (Profiles.Stack s : samples) {
                if (s.pid() != f.getValue()) {
                    continue;
                }
                all += s.count();
                assertNamedByNativeCode(s, Map.of(fakeJava.toString(), exe, fakeLib.toString(), lib));
                List<String> u = s.user();
                if (!u.isEmpty() && u.getFirst().equals("fake_jvm_spin")) {
                    spin += s.count();
                } else if (!u.isEmpty() && u.getFirst().equals("?") && !fallback(s)) {
                    // In the lying code heap, walked by the table made from it: unnamed, its caller found exactly.
                    inHeap += s.count();
                    if (u.size() >= 2 && u.get(1).equals("fake_jvm_main")) {
                        underMain += s.count();
                    } else if (other.size() < 3) {
                        other.add(s);
                    }
                } else if (other.size() < 3) {
                    other.add(s);
                }
            }
            System.out.printf("HostileProcessTest: fake JVM %s (pid %d): %d samples, %d in fake_jvm_spin, %d unnamed in its code"
                    + " heap (%d of them under fake_jvm_main); others e.g. %s%n", f.getKey(), f.getValue(), all, spin, inHeap,
                    underMain, other);
            assertTrue(all >= 15, f.getKey() + " samples: " + all);
            if (f.getKey().equals("self-loop")) {
                assertTrue(inHeap >= 10, "self-loop: " + inHeap + " of " + all + " samples walked in the lying heap");
                assertEquals(inHeap, underMain, "self-loop: frames in the lying heap not under fake_jvm_main: " + other);
            } else {
                assertTrue(spin >= 0.9 * all, f.getKey() + ": " + spin + " of " + all + " samples in fake_jvm_spin; e.g. " + other);
            }
        }
    }

    @Test
    void stacksThatLieAreNamedOnlyByTheirNativeCode() throws Exception {
        Set<String> exe = symbols(stacksBin);
        Map<String, Long> leaves = new LinkedHashMap<>();
        for (String spin : List.of("cycle1_spin", "cycle2_spin", "unmapped_rbp_spin", "unmapped_ret_spin")) {
            leaves.put(spin, 0L);
        }
        long all = 0;
        int longest = 0;
        for (Profiles.Stack s : samples) {
            if (s.pid() != stacks) {
                continue;
            }
            all += s.count();
            assertNamedByNativeCode(s, Map.of(stacksBin.toString(), exe));
            List<String> u = s.user();
            longest = Math.max(longest, u.size());
            if (!u.isEmpty() && leaves.containsKey(u.getFirst())) {
                leaves.merge(u.getFirst(), s.count(), Long::sum);
            }
        }
        System.out.printf("HostileProcessTest: hostile_stacks %d samples, leaves %s, longest stack %d frames%n", all, leaves, longest);
        for (Map.Entry<String, Long> l : leaves.entrySet()) {
            assertTrue(l.getValue() >= 5, l.getKey() + ": " + l.getValue() + " samples of " + all);
        }
    }

    @Test
    void theAgentSaysOneLineAboutEachFakeJvm() {
        for (Map.Entry<String, Long> f : fakeJvms.entrySet()) {
            List<String> lines = linesAbout(log, f.getValue());
            System.out.printf("HostileProcessTest: about %s (pid %d): %s%n", f.getKey(), f.getValue(), lines);
            assertEquals(1, lines.size(), f.getKey() + ": " + lines);
            String why = WHY.get(f.getKey()).replace("PID", Long.toString(f.getValue()));
            assertTrue(lines.getFirst().contains(why), f.getKey() + ": '" + lines.getFirst() + "' does not say '" + why + "'");
        }
    }

    @Test
    void theAgentsCpuAndMemoryStayBounded() {
        assertTrue(cpuShare < MAX_CPU_SHARE, String.format("agent CPU %.1f %% of a core", 100 * cpuShare));
        assertTrue(rssKb > 0 && rssKb < MAX_RSS_KB, "agent RSS " + rssKb + " kB");
    }

    /**
     * No frame in a Java mapping, none named by a string of the fake tables, and every frame in the program's own
     * files named by a symbol of that file (or not named: "?").
     */
    private static void assertNamedByNativeCode(Profiles.Stack s, Map<String, Set<String>> own) {
        for (int i = 0; i < s.functions().size(); i++) {
            String fn = s.functions().get(i);
            String file = s.files().get(i);
            assertFalse(file.startsWith("[jit]") || file.startsWith("[interpreted]"), "a Java frame: " + s);
            assertFalse(FAKE_STRINGS.contains(fn) || fn.contains("EvilJava"), "named from the fake tables: " + s);
            Set<String> names = own.get(file);
            if (names != null && !fn.equals("?")) {
                assertTrue(names.contains(fn), "frame '" + fn + "' of " + file + " is none of its symbols: " + s);
            }
        }
    }

    /** Whether the log has a line about every fake JVM. */
    private static boolean saidAboutEveryFake(String log) {
        for (long pid : fakeJvms.values()) {
            if (linesAbout(log, pid).isEmpty()) {
                return false;
            }
        }
        return true;
    }

    /** The agent's log lines naming {@code pid} (a logger's record may be two lines: its message line is counted). */
    static List<String> linesAbout(String log, long pid) {
        Pattern p = Pattern.compile("\\bpid " + pid + "\\b");
        List<String> out = new ArrayList<>();
        for (String line : log.split("\n")) {
            if (p.matcher(line).find()) {
                out.add(line.strip());
            }
        }
        return out;
    }

    /** The function symbols of an ELF file (nm: .symtab, else .dynsym). */
    private static Set<String> symbols(Path file) throws Exception {
        Set<String> out = new HashSet<>();
        for (String args : List.of("", "-D")) {
            List<String> cmd = new ArrayList<>(List.of("nm", "--defined-only"));
            if (!args.isEmpty()) {
                cmd.add(args);
            }
            cmd.add(file.toString());
            Commands.Result r = Commands.run(cmd, 30);
            for (String line : r.output().split("\n")) {
                String[] p = line.trim().split("\\s+");
                if (p.length == 3) {
                    out.add(p[2]);
                }
            }
        }
        assertFalse(out.isEmpty(), "no symbols in " + file);
        return out;
    }

    /** utime + stime, utime, stime of a process, in clock ticks (100 a second). */
    private static long[] cpuTicks(long pid) throws Exception {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        long utime = Long.parseLong(f[11]);
        long stime = Long.parseLong(f[12]);
        return new long[] {utime + stime, utime, stime};
    }

    private static long rssKb(long pid) throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new AssertionError("no VmRSS for pid " + pid);
    }

    /** Starts a target, its output to a file, and waits (deadline 30 s) for its line saying it is set up; its pid. */
    private static long startReady(ProcessBuilder pb, String ready) throws Exception {
        Path out = Files.createTempFile(dir, "target", ".out");
        Process p = pb.redirectOutput(out.toFile()).start();
        targets.add(p);
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!Files.readString(out).lines().anyMatch(ready::equals)) {
            if (System.nanoTime() > deadline || !p.isAlive()) {
                throw new AssertionError(pb.command() + " " + pb.environment().get("LOUPE_FAKE_JVM") + " did not say '" + ready
                        + "': " + Files.readString(out));
            }
            Thread.sleep(20);
        }
        return p.pid();
    }
}
