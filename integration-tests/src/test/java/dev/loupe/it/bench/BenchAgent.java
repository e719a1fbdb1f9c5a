package dev.loupe.it.bench;

import java.io.IOException;
import java.util.Map;
import java.util.LinkedHashMap;
import java.net.http.HttpResponse;
import java.net.http.HttpRequest;
import java.net.http.HttpClient;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What the benchmarks share: the packaged agent as a process, /proc figures, commands. */
final class BenchAgent {
    private BenchAgent() {}

    /** The agent jar under test ({@code -Dloupe.agent.jar}, set by the integration-tests pom). */
    static String jar() {
        return System.getProperty("loupe.agent.jar");
    }

    /**
     * Starts {@code java @run.jvmopts [-XX:AOTCache=..] -jar JAR run ARGS} (the launcher's JVM options:
     * {@code LOUPE_AGENT_JVMOPTS_FILE}, else the project's file) with its output in {@code log}, and
     * returns once it says it is sampling.
     */
    static Process start(String jar, Path log, List<String> runArgs) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("@" + System.getenv().getOrDefault("LOUPE_AGENT_JVMOPTS_FILE", dev.loupe.it.AgentProcess.RUN_JVMOPTS.toString()));
        // The JVM's AOT cache `loupe run` makes for this build's jar (LOUPE_AGENT_AOT_CACHE, set by
        // `loupe bench overhead`); another jar, e.g. a baseline, starts without one.
        String aot = System.getenv("LOUPE_AGENT_AOT_CACHE");
        if (aot != null && !aot.isBlank() && jar.equals(jar())) {
            cmd.add("-XX:AOTCache=" + aot);
        }
        cmd.addAll(List.of("-jar", jar, "run"));
        cmd.addAll(runArgs);
        Process agent = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (!Files.readString(log).contains("profiling at")) {
            if (!agent.isAlive() || System.nanoTime() > deadline) {
                agent.destroyForcibly();
                throw new IllegalStateException("agent did not start:\n" + Files.readString(log));
            }
            Thread.sleep(50);
        }
        return agent;
    }

    /** SIGTERM, then SIGKILL if it has not stopped within 30 s. */
    static void stop(Process agent) throws InterruptedException {
        agent.destroy();
        if (!agent.waitFor(30, TimeUnit.SECONDS)) {
            agent.destroyForcibly();
        }
    }

    /** A {@code /proc/PID/status} field in kB, e.g. {@code "VmHWM:"}. */
    static long statusKb(long pid, String field) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
            if (line.startsWith(field)) {
                return Long.parseLong(line.replaceAll("\\D", ""));
            }
        }
        throw new IOException(field + " not in /proc/" + pid + "/status");
    }

    /** Runs a command (no shell) and returns its output; fails on a non-zero exit. */
    static String exec(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed:\n" + out);
        }
        return out;
    }
    static String bpftool() {
        return Files.isExecutable(Path.of("/usr/sbin/bpftool")) ? "/usr/sbin/bpftool" : "bpftool";
    }

    /**
     * The id of the sample_cpu (or, tables off, sample_cpu_fp) program this agent loaded, from its file descriptors' fdinfo (other
     * profilers, e.g. a test suite running at the same time, may have their own sample_cpu loaded).
     */
    static long samplerProgramId(long agentPid) throws Exception {
        Pattern progId = Pattern.compile("(?m)^prog_id:\\s*(\\d+)");
        try (var fds = Files.list(Path.of("/proc", Long.toString(agentPid), "fdinfo"))) {
            for (Path fd : fds.toList()) {
                String info;
                try {
                    info = Files.readString(fd);
                } catch (IOException e) {
                    continue; // closed meanwhile
                }
                Matcher m = progId.matcher(info);
                if (m.find()) {
                    long id = Long.parseLong(m.group(1));
                    if (BenchAgent.exec(List.of(bpftool(), "-j", "prog", "show", "id", Long.toString(id))).matches("(?s).*\"name\":\"sample_cpu(_fp)?\".*")) {
                        return id;
                    }
                }
            }
        }
        throw new IllegalStateException("agent " + agentPid + " holds no sample_cpu program");
    }

    // enum stat in loupe_abi.h (the same keys in the pre-#8 agent)
    static final int STAT_SAMPLES = 0;
    static final int STAT_IDLE = 1;
    static final int STAT_TABLE_FRAMES = 9;
    static final int STAT_FP_FRAMES = 10;

    /** {run_time_ns, run_cnt} of one BPF program (with kernel.bpf_stats_enabled on). */
    /** What the agent's sampler program did over a window: its run time and runs (bpf_stats), and its counters. */
    record BpfWindow(long runNs, long runs, long[] stats) {
        long stat(int index) {
            return stats[index];
        }

        /** Fails unless the window saw runs and samples (bpf_stats switched on, the target sampled). */
        long samples() {
            long samples = stats[STAT_SAMPLES];
            if (runs <= 0 || samples <= 0) {
                throw new IllegalStateException("no runs or samples counted (bpf_stats?)");
            }
            return samples;
        }
    }

    /** The sampler program of the running agent {@code agentPid}, measured over {@code seconds} from now. */
    static BpfWindow bpfWindow(long agentPid, long seconds) throws Exception {
        long progId = samplerProgramId(agentPid);
        long statsMap = statsMapOf(progId);
        long[] a = programRunStats(progId);
        long[] ca = statCounters(statsMap);
        Thread.sleep(seconds * 1000L);
        long[] b = programRunStats(progId);
        long[] cb = statCounters(statsMap);
        long[] d = new long[cb.length];
        for (int i = 0; i < d.length; i++) {
            d[i] = cb[i] - ca[i];
        }
        return new BpfWindow(b[0] - a[0], b[1] - a[1], d);
    }

    static long[] programRunStats(long progId) throws IOException, InterruptedException {
        String json = exec(List.of(bpftool(), "-j", "prog", "show", "id", Long.toString(progId)));
        return new long[] {jsonLong(json, "run_time_ns"), jsonLong(json, "run_cnt")};
    }

    /** The id of the {@code stats} map the program uses (found through the program, not by name: another agent may run). */
    static long statsMapOf(long progId) throws IOException, InterruptedException {
        Matcher ids = Pattern.compile("\"map_ids\":\\[([0-9,]*)\\]").matcher(exec(List.of(bpftool(), "-j", "prog", "show", "id", Long.toString(progId))));
        if (ids.find()) {
            for (String id : ids.group(1).split(",")) {
                if (exec(List.of(bpftool(), "-j", "map", "show", "id", id)).contains("\"name\":\"stats\"")) {
                    return Long.parseLong(id);
                }
            }
        }
        throw new IllegalStateException("program " + progId + " has no stats map");
    }

    /** The stats map's counters, summed over CPUs, indexed by enum stat. */
    static long[] statCounters(long mapId) throws IOException, InterruptedException {
        String json = exec(List.of(bpftool(), "-j", "map", "dump", "id", Long.toString(mapId)));
        long[] sums = new long[32];
        Matcher entry = Pattern.compile("\"formatted\":\\{\"key\":(\\d+),\"values\":\\[([^\\]]*)\\]").matcher(json);
        while (entry.find()) {
            int key = Integer.parseInt(entry.group(1));
            Matcher v = Pattern.compile("\"value\":(\\d+)").matcher(entry.group(2));
            while (v.find() && key < sums.length) {
                sums[key] += Long.parseLong(v.group(1));
            }
        }
        return sums;
    }

    private static long jsonLong(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":(\\d+)").matcher(json);
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }

    private static final Pattern LINE = Pattern.compile("^([a-z_]+(?:\\{[^}]*\\})?) (\\S+)$", Pattern.MULTILINE);

    /** The sample lines of the agent's /metrics at {@code url}: series (with labels) to value. */
    static Map<String, Double> metrics(String url) throws IOException, InterruptedException {
        String body = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        Map<String, Double> out = new LinkedHashMap<>();
        Matcher m = LINE.matcher(body);
        while (m.find()) {
            try {
                out.put(m.group(1), Double.parseDouble(m.group(2)));
            } catch (NumberFormatException ignored) {
                // not a sample line
            }
        }
        return out;
    }
}
