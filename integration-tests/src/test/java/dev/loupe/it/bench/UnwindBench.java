package dev.loupe.it.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code ./loupe bench unwind [--rounds N] [--seconds S]}: the BPF program's cost per sample (bpf_stats
 * run_time_ns / run_cnt) for a 60-frame stack without frame pointers walked with eh_frame tables, against
 * the same 60-frame stack walked by frame pointers (the same program, tables off), interleaved in one
 * run. Only the target is sampled (--pid), so the program's runs are its samples.
 */
public final class UnwindBench {
    private UnwindBench() {}

    record Mode(String name, String[] gccFlags, String tables) {}

    public static void main(String[] args) throws Exception {
        int rounds = 3;
        int seconds = 8;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--seconds" -> seconds = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i] + " (usage: unwind [--rounds N] [--seconds S])");
            }
        }
        Path tmp = Files.createTempDirectory("loupe-unwind-bench");
        Path src = Path.of(System.getProperty("loupe.c.sources")).resolve("deeprec.c");
        List<Mode> modes = List.of(
                new Mode("tables, -fomit-frame-pointer", new String[] {"-fomit-frame-pointer"}, "on"),
                new Mode("frame pointers, -fno-omit-frame-pointer", new String[] {"-fno-omit-frame-pointer"}, "off"));
        List<Path> bins = new ArrayList<>();
        for (Mode m : modes) {
            Path out = tmp.resolve("deeprec-" + m.tables());
            List<String> cmd = new ArrayList<>(List.of("gcc", "-O2"));
            cmd.addAll(List.of(m.gccFlags()));
            cmd.addAll(List.of(src.toString(), "-o", out.toString()));
            BenchAgent.exec(cmd);
            bins.add(out);
        }
        Path flag = Path.of("/proc/sys/kernel/bpf_stats_enabled");
        String before = Files.readString(flag).trim();
        Files.writeString(flag, "1");
        Result[][] results = new Result[modes.size()][rounds];
        try {
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < modes.size(); k++) {
                    int m = (r % 2 == 0) ? k : modes.size() - 1 - k; // alternate the order
                    Result res = runOnce(modes.get(m), bins.get(m), tmp, seconds);
                    results[m][r] = res;
                    System.out.printf("round %d  %-42s %8.0f ns per sample  (%6.0f ns per run; %.1f user frames per sample:"
                            + " %.1f by tables, %.1f by frame pointers)%n", r + 1, modes.get(m).name(), res.nsPerSample(),
                            res.nsPerRun(), res.tableFramesPerSample() + res.fpFramesPerSample(), res.tableFramesPerSample(),
                            res.fpFramesPerSample());
                }
            }
        } finally {
            Files.writeString(flag, before);
        }
        double tables = median(results[0], Result::nsPerSample);
        double fp = median(results[1], Result::nsPerSample);
        System.out.printf("%nBPF cost per sample, 60-frame user stack + kernel stack (median of %d rounds):%n", rounds);
        System.out.printf("  eh_frame tables (no frame pointers): %.0f ns%n", tables);
        System.out.printf("  frame pointers:                      %.0f ns%n", fp);
        System.out.printf("  ratio tables / frame pointers:       %.2fx (goal <= 1.5x)%n", tables / fp);
        System.out.printf("  per run, filtered-out runs included:  %.0f ns vs %.0f ns (%.2fx)%n", median(results[0], Result::nsPerRun),
                median(results[1], Result::nsPerRun), median(results[0], Result::nsPerRun) / median(results[1], Result::nsPerRun));
    }

    /**
     * One round. nsPerSample: the program's run time over the target's samples (stats STAT_SAMPLES): the
     * program also runs, briefly, for every sample of other processes on the host (filtered out by --pid),
     * and how many of those there are depends on what else is running, so dividing by all runs (nsPerRun,
     * the figure before 2026-11-23) mixes the host's load into the cost.
     */
    record Result(double nsPerSample, double nsPerRun, double tableFramesPerSample, double fpFramesPerSample) {}

    private static double median(Result[] rs, java.util.function.ToDoubleFunction<Result> f) {
        return median(java.util.Arrays.stream(rs).mapToDouble(f).toArray());
    }

    /** Profiles one target for {@code seconds}; the program's cost over the steady part. */
    private static Result runOnce(Mode mode, Path bin, Path tmp, int seconds) throws Exception {
        Process target = new ProcessBuilder(bin.toString()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        Path log = tmp.resolve("agent.log");
        Process agent = null;
        try {
            agent = BenchAgent.start(BenchAgent.jar(), log, List.of("--pid", Long.toString(target.pid()), "--frequency", "99",
                    "--duration", (seconds + 6) + "s", "--http", "off", "--output", tmp.resolve("out").toString(),
                    "--unwind-tables", mode.tables()));
            Thread.sleep(3000); // registration and JIT settle
            BenchAgent.BpfWindow w = BenchAgent.bpfWindow(agent.pid(), seconds);
            agent.waitFor(60, TimeUnit.SECONDS);
            long samples = w.samples();
            return new Result((double) w.runNs() / samples, (double) w.runNs() / w.runs(),
                    (double) w.stat(BenchAgent.STAT_TABLE_FRAMES) / samples, (double) w.stat(BenchAgent.STAT_FP_FRAMES) / samples);
        } finally {
            if (agent != null) {
                agent.destroyForcibly();
            }
            target.destroyForcibly();
            target.waitFor();
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        java.util.Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

}
