package dev.loupe.bpf;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Cost per probed call (entry + exit) of Loupe's latency probes on a tight Go loop and a tight C loop,
 * against no probes and against bpftrace in the same run. Not a test: prints figures.
 *
 * <p>Run from the repository root after {@code mvn -pl bpf test-compile}:
 * {@code java --enable-native-access=ALL-UNNAMED -cp bpf/target/classes:bpf/target/test-classes dev.loupe.bpf.LatencyBench [calls] [rounds]}
 *
 * <p>Go: Debian's bpftrace 0.17 cannot place a uprobe inside a function, so Loupe's entry + RET probes are
 * compared with bpftrace's entry-only probe counted twice.
 */
public final class LatencyBench {
    private LatencyBench() {}

    public static void main(String[] args) throws Exception {
        long calls = args.length > 0 ? Long.parseLong(args[0]) : 500_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        Path src = Files.isDirectory(Path.of("bpf/src/test")) ? Path.of("bpf/src/test") : Path.of("src/test");
        Path dir = Files.createTempDirectory("loupe-latency-bench");
        Path goDir = dir.resolve("gosrc");
        Files.createDirectories(goDir);
        Files.copy(src.resolve("go/latency_bench/main.go"), goDir.resolve("main.go"));
        Path goBin = LatencyTargets.buildGo(goDir, dir.resolve("go-bench"));
        Path cBin = dir.resolve("c-bench");
        LatencyTargets.run(new ProcessBuilder("gcc", "-O2", src.resolve("c/latency_bench_target.c").toString(), "-o", cBin.toString()), 120);
        LatencyTargets.FunctionOffsets go = LatencyTargets.offsets(goBin, "main.tiny");
        LatencyTargets.FunctionOffsets c = LatencyTargets.offsets(cBin, "tiny");
        System.out.printf("calls per run %d, rounds %d (median), kernel %s%n", calls, rounds,
                new String(Files.readAllBytes(Path.of("/proc/sys/kernel/osrelease"))).trim());

        double[] goBase = new double[rounds], goLoupe = new double[rounds], goTrace = new double[rounds];
        double[] goStacks = new double[rounds];
        long[] entryPlain = new long[2]; // run time ns, runs of latency_entry: Go without stacks
        long[] entryStacks = new long[2]; // and with stacks
        double[] cBase = new double[rounds], cLoupe = new double[rounds], cTrace = new double[rounds];
        long goCount = 0;
        long cCount = 0;
        try (LatencyProbes probes = LatencyProbes.open()) {
            for (int r = 0; r < rounds; r++) {
                goBase[r] = runTarget(goBin, calls);
                probes.attach(ProbeSpec.go(1, goBin, -1, go.entry(), go.rets(), LatencyTargets.GOID_OFFSET_GO_1_19,
                        ProbeSpec.GSource.R14));
                BpfProgram.RunStats e0 = probes.programStats().get("latency_entry");
                goLoupe[r] = runTarget(goBin, calls);
                BpfProgram.RunStats e1 = probes.programStats().get("latency_entry");
                probes.detach(1);
                goCount += probes.readHistograms().get(1).count();
                probes.attach(ProbeSpec.go(3, goBin, -1, go.entry(), go.rets(), LatencyTargets.GOID_OFFSET_GO_1_19,
                        ProbeSpec.GSource.R14).withStacks(true));
                goStacks[r] = runTarget(goBin, calls);
                BpfProgram.RunStats e2 = probes.programStats().get("latency_entry");
                probes.detach(3);
                if (probes.readHistograms().get(3).count() != calls) {
                    throw new IllegalStateException("stacks run: " + probes.readHistograms());
                }
                probes.drainGroups();
                entryPlain[0] += e1.runTimeNs() - e0.runTimeNs();
                entryPlain[1] += e1.runCount() - e0.runCount();
                entryStacks[0] += e2.runTimeNs() - e1.runTimeNs();
                entryStacks[1] += e2.runCount() - e1.runCount();
                goTrace[r] = withBpftrace("uprobe:" + goBin + ":\"main.tiny\" { @calls = count(); }", 1, goBin,
                        () -> runTarget(goBin, calls));

                cBase[r] = runTarget(cBin, calls);
                probes.attach(ProbeSpec.nativeFunction(2, cBin, -1, c.entry()));
                cLoupe[r] = runTarget(cBin, calls);
                probes.detach(2);
                cCount += probes.readHistograms().get(2).count();
                cTrace[r] = withBpftrace("uprobe:" + cBin + ":tiny { @s[tid] = nsecs; } uretprobe:" + cBin
                        + ":tiny { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }", 2, cBin, () -> runTarget(cBin, calls));
            }
            System.out.println("stats: " + probes.stats());
            probes.programStats().forEach((name, st) -> System.out.println("BPF program " + name + ": "
                    + (st.runCount() == 0 ? "no run statistics (kernel.bpf_stats_enabled=0)"
                    : String.format("%.0f ns per run over %d runs", (double) st.runTimeNs() / st.runCount(), st.runCount()))));
        }
        if (goCount != calls * rounds || cCount != calls * rounds) {
            throw new IllegalStateException("Loupe counted " + goCount + " Go and " + cCount + " C calls, expected "
                    + calls * rounds + " each");
        }
        double gb = median(goBase), gl = median(goLoupe), gt = median(goTrace);
        double cb = median(cBase), cl = median(cLoupe), ct = median(cTrace);
        double gs = median(goStacks);
        System.out.printf("Go tight loop with caller stacks (stacks: true): %.1f ns/call (+%.0f ns over no probes, +%.0f ns over stacks off)%n",
                gs, gs - gb, gs - gl);
        if (entryPlain[1] > 0 && entryStacks[1] > 0) {
            System.out.printf("BPF latency_entry: %.0f ns per run with stacks off, %.0f ns with stacks on%n",
                    (double) entryPlain[0] / entryPlain[1], (double) entryStacks[0] / entryStacks[1]);
        }
        System.out.printf("Go tight loop: no probes %.1f ns/call; Loupe entry+RET %.1f ns/call (+%.0f ns); "
                        + "bpftrace entry only %.1f ns/call (+%.0f ns, x2 = %.0f ns); Loupe / (bpftrace entry x2) = %.2f%n",
                gb, gl, gl - gb, gt, gt - gb, 2 * (gt - gb), (gl - gb) / (2 * (gt - gb)));
        System.out.printf("C tight loop: no probes %.1f ns/call; Loupe entry+uretprobe %.1f ns/call (+%.0f ns); "
                        + "bpftrace entry+uretprobe %.1f ns/call (+%.0f ns); Loupe / bpftrace = %.2f%n",
                cb, cl, cl - cb, ct, ct - cb, (cl - cb) / (ct - cb));
        System.out.println("raw ns/call: go base " + Arrays.toString(goBase) + " loupe " + Arrays.toString(goLoupe)
                + " bpftrace " + Arrays.toString(goTrace) + "; c base " + Arrays.toString(cBase) + " loupe "
                + Arrays.toString(cLoupe) + " bpftrace " + Arrays.toString(cTrace));
    }

    private interface Measure {
        double run() throws Exception;
    }

    private static double runTarget(Path bin, long calls) throws Exception {
        String out = LatencyTargets.run(new ProcessBuilder(bin.toString(), Long.toString(calls)), 600);
        for (String line : out.split("\n")) {
            if (line.startsWith("ns_per_call ")) {
                return Double.parseDouble(line.substring(12).trim());
            }
        }
        throw new IllegalStateException(bin + " printed no figure: " + out);
    }

    /** Runs {@code measure} while bpftrace runs {@code script}, once its {@code probes} uprobes are in place. */
    private static double withBpftrace(String script, int probes, Path bin, Measure measure) throws Exception {
        if (java.util.stream.Stream.of(System.getenv("PATH").split(":")).noneMatch(d -> Files.isExecutable(Path.of(d, "bpftrace")))) {
            return Double.NaN; // not installed: the comparison figures print as NaN
        }
        Process bt = new ProcessBuilder("bpftrace", "-e", script).redirectErrorStream(true).start();
        List<String> lines = new ArrayList<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(bt.getInputStream()))) {
                String l;
                while ((l = in.readLine()) != null) {
                    synchronized (lines) {
                        lines.add(l);
                    }
                }
            } catch (java.io.IOException ignored) {
                // bpftrace ended
            }
        });
        reader.start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (LatencyLifecycleTest.uprobesOf(bt.pid(), bin).size() < probes) {
                if (!bt.isAlive() || System.nanoTime() > deadline) {
                    throw new IllegalStateException("bpftrace did not attach: " + lines);
                }
                Thread.sleep(50);
            }
            return measure.run();
        } finally {
            new ProcessBuilder("kill", "-INT", Long.toString(bt.pid())).start().waitFor();
            if (!bt.waitFor(30, TimeUnit.SECONDS)) {
                bt.destroyForcibly();
            }
            reader.join(5000);
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
