package dev.loupe.it.bench;

import dev.loupe.it.Profiles;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * {@code ./loupe bench churn} (issue 25): a host starting short processes all the time, as the issue tried it. A bash
 * loop starts, every 0.2 s, {@code gzip} of a 400 KB file, Debian's {@code python3 -c}, {@code sh -c 'ls / | wc -l'}
 * and its {@code sleep}: six processes (gzip, python3, sh, ls, wc, sleep), ~30 a second, each living 10 to 100 ms.
 * The agent runs host-wide with {@code loupe run}'s defaults but the frequency (19 and 99 Hz, one agent each), first
 * {@code --rest-seconds} (60) with no churn, then {@code --minutes} (5) of churn. Per frequency it prints:
 * <ul>
 *   <li>processes started per second (the loop's own count);</li>
 *   <li>the agent's CPU (its cgroup's counter) at rest and during the churn, as % of a core, their ratio, and the
 *       agent's CPU per started process: (churn CPU - the rest rate x churn seconds) / processes, in ms, over the whole
 *       churn and over its steady part, after its first minute (the first minute also pays once for what a host pays
 *       once: the churn binaries' tables and symbols, and the JIT compiling the agent's paths for them);</li>
 *   <li>the agent's RSS and the mapping slots in use ({@code loupe_unwind_mappings}) after 1 minute of churn and at
 *       its end, and again 15 s after it;</li>
 *   <li>registrations refused (a full mapping space: {@code loupe_unwind_mapping_space_full_total}, and the log's
 *       "cannot register" lines, which is how a build without that counter says it);</li>
 *   <li>what the churn cost per process besides the kernel's walk: file loads, /proc/PID/maps reads, frames named from
 *       the mappings the samples carried, files in the kernel's file tables;</li>
 *   <li>of the churn processes' samples in the profiles the agent wrote meanwhile (comm gzip, python3, sh, ls, wc):
 *       the share without an {@code <unknown>} frame (an address in no mapping), reaching {@code _start} or
 *       {@code __libc_start_main}, both together (the issue's figure), with every frame named by a function (Debian's
 *       gzip is stripped: its own frames are named only {@code [gzip]}), per command and in all, and the share taken
 *       before the process's tables were live ({@code unwind=frame_pointers}).</li>
 * </ul>
 * Options: {@code --minutes N} (5), {@code --rest-seconds S} (60), {@code --frequencies 19,99}, {@code --jar JAR} (the
 * agent under test; default this build's), {@code --agent-arg FLAG=VALUE} (one more {@code loupe run} flag; repeatable),
 * and {@code --pid-namespace}: the bench, its agent and its churn run in a PID namespace of their own (with their own
 * /proc, as a container's agent does), so the agent symbolizes only the churn and the host's other processes (a busy
 * machine's builds and JVMs) are outside it and cost it little: the figures of a shared machine, less its noise.
 */
public final class ChurnBench {
    private ChurnBench() {}

    static final Set<String> CHURN_COMMS = Set.of("gzip", "python3", "sh", "ls", "wc");
    static final int PROCESSES_PER_ROUND = 6; // gzip, python3, sh, ls, wc, sleep

    public static void main(String[] args) throws Exception {
        if (List.of(args).contains("--pid-namespace")) {
            List<String> cmd = new ArrayList<>(List.of("unshare", "--pid", "--fork", "--mount-proc",
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Dloupe.agent.jar=" + System.getProperty("loupe.agent.jar"),
                    "-Dloupe.c.sources=" + System.getProperty("loupe.c.sources"),
                    "-cp", System.getProperty("java.class.path"), ChurnBench.class.getName()));
            cmd.addAll(List.of(args).stream().filter(a -> !a.equals("--pid-namespace")).toList());
            System.exit(new ProcessBuilder(cmd).inheritIO().start().waitFor());
        }
        double minutes = 5;
        int restSeconds = 60;
        List<Integer> frequencies = List.of(19, 99);
        String jar = BenchAgent.jar();
        List<String> agentArgs = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--minutes" -> minutes = Double.parseDouble(args[++i]);
                case "--rest-seconds" -> restSeconds = Integer.parseInt(args[++i]);
                case "--frequencies" -> frequencies = java.util.Arrays.stream(args[++i].split(",")).map(Integer::valueOf).toList();
                case "--jar" -> jar = args[++i];
                case "--agent-arg" -> agentArgs.add(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + " (--minutes N, --rest-seconds S, --frequencies 19,99, --jar JAR, --agent-arg FLAG=VALUE ..., --pid-namespace)");
            }
        }
        Path tmp = Files.createTempDirectory("loupe-churn-bench");
        Path data = tmp.resolve("data.bin");
        byte[] bytes = Files.readAllBytes(Path.of("/usr/bin/python3").toRealPath());
        Files.write(data, java.util.Arrays.copyOf(bytes, Math.min(bytes.length, 400_000)));
        boolean ownNamespace = !Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString().equals("pid:[4026531836]");
        System.out.printf("churn bench: agent %s, %s; %.1f min of churn after %d s at rest, per frequency%s%n", jar,
                agentArgs.isEmpty() ? "loupe run's defaults" : "flags " + agentArgs, minutes, restSeconds,
                ownNamespace ? "; in a PID namespace of its own" : "; host-wide");
        for (int hz : frequencies) {
            run(tmp.resolve(hz + "hz"), jar, hz, agentArgs, data, minutes, restSeconds);
        }
    }

    private static void run(Path dir, String jar, int hz, List<String> agentArgs, Path data, double minutes, int restSeconds)
            throws Exception {
        Files.createDirectories(dir);
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String metricsUrl = "http://127.0.0.1:" + port + "/metrics";
        Path out = dir.resolve("profiles");
        Path log = dir.resolve("agent.log");
        List<String> runArgs = new ArrayList<>(List.of("--frequency", Integer.toString(hz), "--interval", "10s",
                "--output", out.toString(), "--http", "127.0.0.1:" + port, "--state-dir", dir.resolve("state").toString()));
        runArgs.addAll(agentArgs);
        Process agent = BenchAgent.start(jar, log, runArgs);
        CpuMeter cpu = CpuMeter.of(agent.pid());
        try {
            Thread.sleep(10_000); // start-up done (tables of the running processes built): not part of either figure
            long restStart = System.nanoTime();
            long restCpu0 = cpu.nanos();
            Thread.sleep(restSeconds * 1000L);
            double restCores = (cpu.nanos() - restCpu0) / (double) (System.nanoTime() - restStart);
            Map<String, Double> atRest = BenchAgent.metrics(metricsUrl);
            long rssRest = BenchAgent.statusKb(agent.pid(), "VmRSS:");

            long churnSeconds = Math.round(minutes * 60);
            long churnStart = System.nanoTime();
            long churnCpu0 = cpu.nanos();
            Map<String, Long> threads0 = threadTicks(agent.pid());
            long profilesFrom = System.currentTimeMillis();
            Path roundsFile = dir.resolve("rounds");
            Process loop = churn(data, churnSeconds, roundsFile);
            Thread.sleep(Math.min(60, churnSeconds) * 1000L);
            long oneMinuteNanos = System.nanoTime();
            long oneMinuteCpu = cpu.nanos();
            long oneMinuteRounds = rounds(roundsFile);
            Map<String, Double> atOneMinute = BenchAgent.metrics(metricsUrl);
            long rssOneMinute = BenchAgent.statusKb(agent.pid(), "VmRSS:");
            String rounds = new String(loop.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            loop.waitFor();
            long churnNanos = System.nanoTime() - churnStart;
            long churnCpu = cpu.nanos() - churnCpu0;
            Map<String, Long> threads1 = threadTicks(agent.pid());
            long profilesTo = System.currentTimeMillis();
            Map<String, Double> atEnd = BenchAgent.metrics(metricsUrl);
            long rssEnd = BenchAgent.statusKb(agent.pid(), "VmRSS:");
            Thread.sleep(15_000);
            Map<String, Double> after = BenchAgent.metrics(metricsUrl);
            long hwm = BenchAgent.statusKb(agent.pid(), "VmHWM:");

            long processes = Long.parseLong(rounds) * PROCESSES_PER_ROUND;
            double churnCores = churnCpu / (double) churnNanos;
            double perProcessMs = (churnCpu - restCores * churnNanos) / 1e6 / processes;
            long steadyProcesses = processes - oneMinuteRounds * PROCESSES_PER_ROUND;
            long steadyNanos = churnStart + churnNanos - oneMinuteNanos;
            double steadyMs = (churnCpu0 + churnCpu - oneMinuteCpu - restCores * steadyNanos) / 1e6 / steadyProcesses;
            System.out.printf("%n== %d Hz (CPU: %s)%n", hz, cpu.source());
            System.out.printf("  processes started: %d in %.0f s, %.1f per second (%s rounds of gzip, python3, sh, ls, wc, sleep)%n",
                    processes, churnNanos / 1e9, processes / (churnNanos / 1e9), rounds);
            System.out.printf("  agent CPU: at rest %.3f %% of a core, during the churn %.3f %%: %.2fx; per started process %.3f ms"
                    + " over the whole churn, %.3f ms after its first minute (%d processes; goal <= 0.2 ms)%n", 100 * restCores,
                    100 * churnCores, churnCores / restCores, perProcessMs, steadyMs, steadyProcesses);
            System.out.printf("  agent CPU by thread during the churn (ms per started process, from /proc ticks): %s%n",
                    perThread(threads0, threads1, processes));
            System.out.printf("  agent RSS: at rest %d MB, after 1 minute of churn %d MB, at its end (%.1f min) %d MB (%.2fx the"
                    + " 1-minute figure), peak %d MB%n", rssRest / 1024, rssOneMinute / 1024, churnNanos / 60e9, rssEnd / 1024,
                    (double) rssEnd / rssOneMinute, hwm / 1024);
            System.out.printf("  mapping slots in use: at rest %s, after 1 minute %s, at the end %s, 15 s after %s (of %s;"
                    + " handed out during the churn: %s)%n", num(atRest, "loupe_unwind_mappings"),
                    num(atOneMinute, "loupe_unwind_mappings"), num(atEnd, "loupe_unwind_mappings"), num(after, "loupe_unwind_mappings"),
                    num(atEnd, "loupe_unwind_mappings_capacity"), diff(atEnd, atRest, "loupe_unwind_mappings_allocated_total"));
            System.out.printf("  per-process state after the churn (15 s): %s; at rest: %s%n", states(after), states(atRest));
            String agentLog = Files.readString(log);
            System.out.printf("  registrations refused: %s counted (loupe_unwind_mapping_space_full_total), %d 'cannot register' log"
                    + " lines, of them %d 'no room'; registrations %s%n", diff(atEnd, atRest, "loupe_unwind_mapping_space_full_total"),
                    count(agentLog, "cannot register"), count(agentLog, "no room"),
                    diff(atEnd, atRest, "loupe_unwind_registrations_total"));
            System.out.printf("  per process during the churn: file loads %s, /proc/PID/maps reads %s, frames named from the"
                    + " sample's mappings %s, files in the kernel %s (of %s), maps' bpf_find_vma lookups %s%n",
                    diff(atEnd, atRest, "loupe_unwind_file_loads_total"), diff(atEnd, atRest, "loupe_symbolizer_maps_reads_total"),
                    diff(atEnd, atRest, "loupe_symbolizer_frames_from_sampled_mappings_total"), num(atEnd, "loupe_unwind_files"),
                    num(atEnd, "loupe_unwind_files_capacity"), diff(atEnd, atRest, "loupe_unwind_vma_lookups_total"));
            sampleQuality(out, profilesFrom, profilesTo);
        } finally {
            BenchAgent.stop(agent);
            cpu.close(); // its cgroup goes once the agent is out of it
        }
    }

    /**
     * The issue's loop in bash: rounds of gzip, python3 and a shell pipeline every 0.2 s; prints how many rounds, and
     * writes the count so far to {@code roundsFile} after each (a builtin: no process of its own).
     */
    private static Process churn(Path data, long seconds, Path roundsFile) throws IOException {
        String script = String.join("\n",
                "end=$((SECONDS + " + seconds + ")); n=0",
                "while [ $SECONDS -lt $end ]; do",
                "  gzip -c '" + data + "' > /dev/null &",
                "  /usr/bin/python3 -c 'sum(range(100000))' &",
                "  sh -c 'ls / | wc -l' > /dev/null &",
                "  sleep 0.2",
                "  n=$((n + 1))",
                "  echo $n > '" + roundsFile + "'",
                "done",
                "wait",
                "echo $n");
        return new ProcessBuilder("/bin/bash", "-c", script).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    /**
     * The churn processes' samples in the profiles whose intervals began in [from, to] (ms): named throughout, reaching
     * the process's entry, both, and taken before tables were live.
     */
    private static void sampleQuality(Path out, long from, long to) throws IOException {
        // all, no <unknown>, reaching, both, fallback, every frame a function; apart: in exec or exit (no user stack)
        Map<String, long[]> byComm = new TreeMap<>();
        for (Path f : Profiles.files(out)) {
            var p = Profiles.read(f);
            long startMs = p.getTimeNanos() / 1_000_000;
            if (startMs < from || startMs > to) {
                continue;
            }
            for (Profiles.Stack s : Profiles.stacks(p)) {
                String comm = s.labels().getOrDefault("comm", "");
                if (!CHURN_COMMS.contains(comm) || "outside".equals(s.labels().get("pid_namespace"))) {
                    continue; // outside: with --pid-namespace, the machine's other processes of these names (not ours)
                }
                if (inExecOrExit(s)) {
                    for (String key : List.of(comm, "all")) {
                        byComm.computeIfAbsent(key, k -> new long[7])[6] += s.count();
                    }
                    continue;
                }
                boolean named = true; // no frame outside every mapping (pprof's <unknown>)
                boolean functions = true; // every frame named by a function (not only by its mapping, as [gzip])
                for (int i = 0; i < s.functions().size(); i++) {
                    if (s.functions().get(i).equals("?")) {
                        functions = false;
                        named &= !s.files().get(i).isEmpty();
                    }
                }
                boolean reaches = s.functions().contains("_start") || s.functions().contains("__libc_start_main")
                        || s.functions().contains("_dl_start"); // ld.so still loading the program: its first C function
                boolean fallback = "frame_pointers".equals(s.labels().get("unwind"));
                for (String key : List.of(comm, "all")) {
                    long[] c = byComm.computeIfAbsent(key, k -> new long[7]);
                    c[0] += s.count();
                    c[1] += named ? s.count() : 0;
                    c[2] += reaches ? s.count() : 0;
                    c[3] += named && reaches ? s.count() : 0;
                    c[4] += fallback ? s.count() : 0;
                    c[5] += functions ? s.count() : 0;
                }
            }
        }
        System.out.println("  churn processes' samples (profiles written during the churn): no <unknown> frame / reaching"
                + " _start, __libc_start_main or (ld.so loading the program) _dl_start / both / every frame a function /"
                + " taken before tables were live; apart: samples in the kernel's exec or exit, with no user stack of the"
                + " program to walk");
        byComm.forEach((comm, c) -> System.out.printf("    %-8s %6d samples: %5.1f %% / %5.1f %% / %5.1f %% / %5.1f %% / %5.1f %%;"
                        + " apart %d%n", comm, c[0], pct(c[1], c[0]), pct(c[2], c[0]), pct(c[3], c[0]), pct(c[5], c[0]),
                pct(c[4], c[0]), c[6]));
        System.out.println("    goal (issue 25): >= 90 % both, >= 95 % after the first sample of a binary seen before");
    }

    /**
     * A sample of a process in the kernel's exec (its old program's registers, its new program's memory) or exit (its
     * memory torn down): kernel frames only, or a user part that is the old program's, which no walk can name.
     */
    private static boolean inExecOrExit(Profiles.Stack s) {
        List<String> f = s.functions();
        boolean kernelOnly = s.files().stream().allMatch(x -> x.equals("[kernel.kallsyms]") || x.isEmpty());
        boolean exit = f.contains("do_exit") || f.contains("exit_mmap") || f.contains("do_group_exit");
        boolean exec = f.contains("bprm_execve") || f.contains("do_execveat_common.isra.0") || f.contains("__x64_sys_execve");
        return (exit && kernelOnly) || (exec && !f.contains("_start") && !f.contains("__libc_start_main"));
    }

    /** CPU ticks (utime + stime) of each of the agent's threads, summed by name with digits dropped (GC Thread#0). */
    private static Map<String, Long> threadTicks(long pid) throws IOException {
        Map<String, Long> out = new java.util.TreeMap<>();
        try (var tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                String stat;
                try {
                    stat = Files.readString(t.resolve("stat"));
                } catch (IOException e) {
                    continue; // the thread ended
                }
                int open = stat.indexOf('('), close = stat.lastIndexOf(')');
                String name = stat.substring(open + 1, close).replaceAll("[0-9]+", "#");
                String[] f = stat.substring(close + 2).split(" ");
                out.merge(name, Long.parseLong(f[11]) + Long.parseLong(f[12]), Long::sum); // fields 14, 15
            }
        }
        return out;
    }

    /** The rounds the loop has finished, as it last wrote them (0 before its first). */
    private static long rounds(Path roundsFile) throws IOException {
        for (int tries = 0; tries < 1000 && Files.exists(roundsFile); tries++) {
            String s = Files.readString(roundsFile).trim();
            if (!s.isEmpty()) {
                return Long.parseLong(s);
            }
            Thread.onSpinWait(); // caught between bash's truncation and its write
        }
        return 0;
    }

    /** The threads that used CPU between two reads, busiest first, as ms per started process. */
    private static String perThread(Map<String, Long> before, Map<String, Long> after, long processes) {
        long hz = 100; // USER_HZ
        return after.entrySet().stream()
                .map(e -> Map.entry(e.getKey(), e.getValue() - before.getOrDefault(e.getKey(), 0L)))
                .filter(e -> e.getValue() > 0)
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .limit(8)
                .map(e -> String.format("%s %.3f", e.getKey(), e.getValue() * 1000.0 / hz / processes))
                .collect(java.util.stream.Collectors.joining(", "));
    }

    private static double pct(long n, long of) {
        return of == 0 ? Double.NaN : 100.0 * n / of;
    }

    private static long count(String text, String what) {
        long n = 0;
        for (int i = text.indexOf(what); i >= 0; i = text.indexOf(what, i + 1)) {
            n++;
        }
        return n;
    }

    private static String num(Map<String, Double> m, String name) {
        Double v = m.get(name);
        return v == null ? "n/a" : String.format("%.0f", v);
    }

    private static String diff(Map<String, Double> end, Map<String, Double> start, String name) {
        Double a = end.get(name);
        Double b = start.get(name);
        return a == null || b == null ? "n/a" : String.format("%.0f", a - b);
    }

    private static String states(Map<String, Double> m) {
        Map<String, String> s = new LinkedHashMap<>();
        m.forEach((k, v) -> {
            if (k.startsWith("loupe_process_states{")) {
                s.put(k.replaceAll(".*holder=\"([^\"]+)\".*", "$1"), String.format("%.0f", v));
            }
        });
        return s.isEmpty() ? "n/a" : s.toString();
    }
}
