package dev.loupe.it.bench;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code ./loupe bench unwind}'s process phase: the agent host-wide at 99 Hz with unwind tables while
 * {@code --processes N} (default 200) frame-pointer-less processes start, 20 per second, each busy for its
 * first 300 ms and then 1 ms per second. Prints
 * <ul>
 *   <li>registration delay, from each process's start to its tables being live in the kernel
 *       ({@code loupe_unwind_registration_delay_seconds} on /metrics): the binary is known after the first
 *       process, so this is the "new process of a known binary" case (goal ≤ 100 ms);</li>
 *   <li>agent RSS with the N processes registered, against the same agent before they started (ratio) and
 *       the goal (≤ 128 MB).</li>
 * </ul>
 */
public final class ProcessesBench {
    private ProcessesBench() {}

    public static void main(String[] args) throws Exception {
        int processes = 200;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--processes" -> processes = Integer.parseInt(args[++i]);
                case "--rounds", "--seconds" -> i++; // UnwindBench's
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        Path tmp = Files.createTempDirectory("loupe-processes-bench");
        Path bin = tmp.resolve("churn");
        BenchAgent.exec(List.of("gcc", "-O2", "-fomit-frame-pointer", Path.of(System.getProperty("loupe.c.sources")).resolve("churn.c").toString(),
                "-o", bin.toString()));
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path log = tmp.resolve("agent.log");
        Process agent = BenchAgent.start(BenchAgent.jar(), log, List.of("--frequency", "99", "--interval", "10s",
                "--output", tmp.resolve("out").toString(), "--http", "127.0.0.1:" + port));
        List<Process> started = new ArrayList<>();
        try {
            // One process first: its binary's table is built, so the rest are "new process, known binary".
            started.add(new ProcessBuilder(bin.toString(), "120", "2000", "1").start());
            Thread.sleep(20_000);
            String url = "http://127.0.0.1:" + port + "/metrics";
            Map<String, Double> m0 = BenchAgent.metrics(url);
            long rss0 = BenchAgent.statusKb(agent.pid(), "VmRSS:");
            double registered0 = m0.getOrDefault("loupe_unwind_processes", 0.0);
            for (int i = 1; i < processes; i++) {
                started.add(new ProcessBuilder(bin.toString(), "180", "300", "1").start());
                Thread.sleep(50);
            }
            Thread.sleep(20_000);
            Map<String, Double> m1 = BenchAgent.metrics(url);
            long rss20 = BenchAgent.statusKb(agent.pid(), "VmRSS:");
            // Steady state: the heap a burst of table builds grew is given back within a minute (HeapTrimmer).
            Thread.sleep(60_000);
            long rss1 = BenchAgent.statusKb(agent.pid(), "VmRSS:");
            long hwm = BenchAgent.statusKb(agent.pid(), "VmHWM:");
            double registered1 = BenchAgent.metrics(url).getOrDefault("loupe_unwind_processes", 0.0);
            double count = m1.getOrDefault("loupe_unwind_registration_delay_seconds_count", 0.0)
                    - m0.getOrDefault("loupe_unwind_registration_delay_seconds_count", 0.0);
            double sum = m1.getOrDefault("loupe_unwind_registration_delay_seconds_sum", 0.0)
                    - m0.getOrDefault("loupe_unwind_registration_delay_seconds_sum", 0.0);
            System.out.printf("agent host-wide at 99 Hz, tables on; %d frame-pointer-less processes of one binary started 20/s%n",
                    processes);
            System.out.printf("  registered for table unwinding: %.0f processes before, %.0f after (host-wide, all processes)%n",
                    registered0, m1.getOrDefault("loupe_unwind_processes", 0.0));
            System.out.printf("  registration delay (process start -> tables live, 10 ms resolution), %.0f processes:%n", count);
            System.out.printf("    mean %.0f ms", count > 0 ? sum / count * 1000 : Double.NaN);
            for (String le : List.of("0.025", "0.05", "0.1", "0.25", "0.5", "1.0")) {
                double c = m1.getOrDefault("loupe_unwind_registration_delay_seconds_bucket{le=\"" + le + "\"}", 0.0)
                        - m0.getOrDefault("loupe_unwind_registration_delay_seconds_bucket{le=\"" + le + "\"}", 0.0);
                System.out.printf(", <= %s s: %.1f %%", le, count > 0 ? 100 * c / count : Double.NaN);
            }
            System.out.println();
            System.out.println("    goal: tables of a new process of a known binary live in <= 100 ms");
            System.out.printf("  agent RSS: %d MB with them, 80 s after the last started (%.0f registered; 20 s after: %d MB;"
                            + " peak %d MB) vs %d MB before they started: %.2fx; goal <= 128 MB%n",
                    rss1 / 1024, registered1, rss20 / 1024, hwm / 1024, rss0 / 1024, (double) rss1 / rss0);
        } finally {
            for (Process p : started) {
                p.destroyForcibly();
            }
            BenchAgent.stop(agent);
        }
    }

}
