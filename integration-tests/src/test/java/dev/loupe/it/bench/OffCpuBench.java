package dev.loupe.it.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Issue 30's cost figures for off-CPU profiles ({@code ./loupe bench offcpu [SECONDS]}, default 15 s a window): a
 * context-switch load (pingpong.c: two threads passing a byte over pipes on one CPU, ~100k switches/s on a quiet
 * machine) is measured alone for a window, then under the agent ({@code --pid} the load, so its CPU is the load's
 * waits' cost, not the host's) at {@code --off-cpu-threshold} 0 (off), 1e-6 (the hook attached, nothing recorded),
 * 0.01 and 1, then under bcc's {@code offcputime} where it runs; each phase a fresh load with its own alone window
 * just before, so the slowdown compares neighbours on a shared machine. Per phase: the load's rounds/s alone and
 * profiled, the off-CPU program's BPF time per run (bpf_stats; one run per context switch on the host: every CPU's
 * switches, not only the load's) and the agent's CPU (its cgroup's counter, {@link CpuMeter}).
 * kernel.bpf_stats_enabled is switched on for the run.
 */
public final class OffCpuBench {

    private OffCpuBench() {}

    record Phase(String name, double aloneRoundsPerSecond, double roundsPerSecond, double switchesPerSecond,
                 double bpfNsPerRun, double runsPerSecond, double agentCpuPercent) {}

    /** The load, running until closed; its last report (time ns, rounds, switches) read by a thread of its own. */
    static final class Load implements AutoCloseable {
        private static final Pattern REPORT = Pattern.compile("t (\\d+) rounds (\\d+) switches (\\d+)");
        final Process process;
        private volatile long[] last;

        Load(Path binary) throws Exception {
            process = new ProcessBuilder(binary.toString()).redirectErrorStream(true).start();
            BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            if (!"ready".equals(out.readLine())) {
                throw new IllegalStateException("pingpong did not start");
            }
            Thread reader = new Thread(() -> {
                try {
                    String line;
                    while ((line = out.readLine()) != null) {
                        Matcher m = REPORT.matcher(line);
                        if (m.find()) {
                            last = new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3))};
                        }
                    }
                } catch (java.io.IOException e) {
                    // ended
                }
            });
            reader.setDaemon(true);
            reader.start();
            while (last == null) {
                if (!process.isAlive()) {
                    throw new IllegalStateException("pingpong ended");
                }
                Thread.sleep(100);
            }
        }

        /** {rounds/s, switches/s} over the next {@code seconds} (between two of its reports). */
        double[] rates(int seconds) throws InterruptedException {
            long[] a = last;
            Thread.sleep(seconds * 1000L);
            long[] b = last;
            double s = (b[0] - a[0]) / 1e9;
            return new double[] {(b[1] - a[1]) / s, (b[2] - a[2]) / s};
        }

        @Override
        public void close() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 && !args[0].isBlank() ? Integer.parseInt(args[0].trim()) : 15;
        Path dir = Files.createTempDirectory("loupe-offcpu-bench");
        Path pingpong = dir.resolve("pingpong");
        BenchAgent.exec(List.of("gcc", "-O2", "-pthread", Path.of(System.getProperty("loupe.c.sources", "src/test/c"))
                .resolve("pingpong.c").toString(), "-o", pingpong.toString()));
        Path statsFile = Path.of("/proc/sys/kernel/bpf_stats_enabled");
        String statsWas = Files.readString(statsFile).trim();
        Files.writeString(statsFile, "1");
        List<Phase> phases = new ArrayList<>();
        try {
            for (String p : new String[] {"0", "0.000001", "0.01", "1"}) {
                phases.add(underAgent(pingpong, seconds, p, dir));
            }
            phases.add(underBcc(pingpong, seconds, dir));
        } finally {
            Files.writeString(statsFile, statsWas);
        }
        System.out.printf(Locale.ROOT, "%-34s %12s %12s %10s %12s %12s %12s %10s%n", "phase", "alone r/s", "profiled r/s",
                "slowdown", "switches/s", "BPF ns/run", "BPF runs/s", "agent CPU");
        for (Phase p : phases) {
            System.out.printf(Locale.ROOT, "%-34s %12.0f %12.0f %9.1f%% %12.0f %12s %12s %10s%n", p.name(),
                    p.aloneRoundsPerSecond(), p.roundsPerSecond(), 100 * (1 - p.roundsPerSecond() / p.aloneRoundsPerSecond()),
                    p.switchesPerSecond(),
                    Double.isNaN(p.bpfNsPerRun()) ? "-" : String.format(Locale.ROOT, "%.0f", p.bpfNsPerRun()),
                    Double.isNaN(p.runsPerSecond()) ? "-" : String.format(Locale.ROOT, "%.0f", p.runsPerSecond()),
                    Double.isNaN(p.agentCpuPercent()) ? "-" : String.format(Locale.ROOT, "%.1f %%", p.agentCpuPercent()));
        }
    }

    private static Phase underAgent(Path pingpong, int seconds, String probability, Path dir) throws Exception {
        try (Load load = new Load(pingpong)) {
            double[] alone = load.rates(seconds);
            Path log = dir.resolve("agent-" + probability + ".log");
            Process agent = BenchAgent.start(BenchAgent.jar(), log, List.of("--pid", Long.toString(load.process.pid()),
                    "--off-cpu-threshold", probability, "--interval", "60s", "--output", dir.resolve("out-" + probability).toString(),
                    "--http", "off"));
            try (CpuMeter cpu = CpuMeter.of(agent.pid())) {
                long prog = "0".equals(probability) ? -1 : programId(agent.pid(), "off_cpu_switch");
                Thread.sleep(2000); // the first registrations and tables
                long[] a = prog < 0 ? null : BenchAgent.programRunStats(prog);
                long c0 = cpu.nanos();
                long t0 = System.nanoTime();
                double[] r = load.rates(seconds);
                long wall = System.nanoTime() - t0;
                long used = cpu.nanos() - c0;
                double nsPerRun = Double.NaN;
                double runsPerSecond = Double.NaN;
                if (a != null) {
                    long[] b = BenchAgent.programRunStats(prog);
                    nsPerRun = (double) (b[0] - a[0]) / Math.max(1, b[1] - a[1]);
                    runsPerSecond = (b[1] - a[1]) * 1e9 / wall;
                }
                BenchAgent.stop(agent);
                return new Phase("agent, --off-cpu-threshold " + probability, alone[0], r[0], r[1], nsPerRun, runsPerSecond,
                        100.0 * used / wall);
            } finally {
                agent.destroyForcibly();
            }
        }
    }

    /** bcc's offcputime host-wide for the phase (kprobe on finish_task_switch): a line saying so where it cannot run. */
    private static Phase underBcc(Path pingpong, int seconds, Path dir) throws Exception {
        Path tool = Path.of("/usr/sbin/offcputime-bpfcc");
        if (!Files.isExecutable(tool)) {
            System.out.println("bcc offcputime: not installed (apt-get install bpfcc-tools)");
            return new Phase("bcc offcputime: not installed", Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN,
                    Double.NaN);
        }
        Path log = dir.resolve("offcputime.log");
        Process bcc = new ProcessBuilder(tool.toString(), "-f", Integer.toString(seconds + 30)).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        try {
            // It prints nothing until it ends; it is ready once its programs are attached (a program of its in bpftool).
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            long prog = -1;
            while (prog < 0) {
                if (!bcc.isAlive() || System.nanoTime() > deadline) {
                    String why = Files.readString(log);
                    System.out.println("bcc offcputime does not run here:\n" + why);
                    return new Phase("bcc offcputime: does not run here", Double.NaN, Double.NaN, Double.NaN, Double.NaN,
                            Double.NaN, Double.NaN);
                }
                prog = anyProgramId(bcc.pid());
                Thread.sleep(200);
            }
            try (CpuMeter cpu = CpuMeter.of(bcc.pid()); Load load = new Load(pingpong)) {
                long[] a = BenchAgent.programRunStats(prog);
                long c0 = cpu.nanos();
                long t0 = System.nanoTime();
                double[] r = load.rates(seconds);
                long wall = System.nanoTime() - t0;
                long used = cpu.nanos() - c0;
                long[] b = BenchAgent.programRunStats(prog);
                return new Phase("bcc offcputime", Double.NaN, r[0], r[1], (double) (b[0] - a[0]) / Math.max(1, b[1] - a[1]),
                        (b[1] - a[1]) * 1e9 / wall, 100.0 * used / wall);
            }
        } finally {
            bcc.destroy();
            bcc.waitFor(30, TimeUnit.SECONDS);
            bcc.destroyForcibly();
        }
    }

    /** The id of the program named {@code name} that process {@code pid} holds (from its fds' fdinfo). */
    static long programId(long pid, String name) throws Exception {
        for (long id : programIds(pid)) {
            if (BenchAgent.exec(List.of(BenchAgent.bpftool(), "-j", "prog", "show", "id", Long.toString(id)))
                    .contains("\"name\":\"" + name + "\"")) {
                return id;
            }
        }
        throw new IllegalStateException("process " + pid + " holds no program " + name);
    }

    private static long anyProgramId(long pid) throws Exception {
        List<Long> ids = programIds(pid);
        return ids.isEmpty() ? -1 : ids.getFirst();
    }

    private static List<Long> programIds(long pid) throws Exception {
        Pattern progId = Pattern.compile("(?m)^prog_id:\\s*(\\d+)");
        List<Long> ids = new ArrayList<>();
        try (var fds = Files.list(Path.of("/proc", Long.toString(pid), "fdinfo"))) {
            for (Path fd : fds.toList()) {
                String info;
                try {
                    info = Files.readString(fd);
                } catch (java.io.IOException e) {
                    continue;
                }
                Matcher m = progId.matcher(info);
                if (m.find()) {
                    ids.add(Long.parseLong(m.group(1)));
                }
            }
        }
        return ids;
    }
}
