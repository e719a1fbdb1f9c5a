package dev.loupe.agent.sampling;

import dev.loupe.agent.labels.CgroupLabelCache;
import dev.loupe.agent.sampling.AgentTest.FakeSource;
import dev.loupe.agent.sampling.AgentTest.FakeSymbolizer;
import dev.loupe.agent.sampling.AgentTest.ManualClock;
import dev.loupe.agent.sampling.AgentTest.MemorySink;
import dev.loupe.bpf.RawSample;
import dev.loupe.pprof.proto.Profile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Samples carry their process's cgroup labels, read from a /proc root (here a directory of the test's) once
 * per process, not per sample; a process moved to another cgroup gets the new labels once its entry is old.
 */
class SampleCgroupLabelsTest {
    private static final String ID = "4f2a".repeat(16);
    private static final long START = 1_000_000L; // the processes' start time (ns since boot)
    private static final long T0 = 50_000_000_000L; // sample times (CLOCK_MONOTONIC)

    @TempDir
    Path proc;
    private final List<Integer> reads = Collections.synchronizedList(new ArrayList<>());

    private void cgroup(int pid, String text) throws IOException {
        Files.createDirectories(proc.resolve(Integer.toString(pid)));
        Files.writeString(proc.resolve(Integer.toString(pid)).resolve("cgroup"), text);
    }

    private static RawSample sample(int pid, int tid, long startNs, long ktime) {
        return new RawSample(pid, tid, pid, tid, 0, "p" + pid, "t" + tid, ktime, startNs, 0, new long[0], new long[] {0x1100});
    }

    @Test
    void samplesCarryTheirProcesssUnitAndContainerReadOncePerProcess() throws Exception {
        cgroup(77, "0::/system.slice/docker-" + ID + ".scope\n");
        cgroup(78, "0::/user.slice/user-1000.slice/user@1000.service/app.slice/editor.service\n");
        cgroup(79, "0::/init.scope\n");
        // pid 80 has no /proc entry: it exited before its first sample was labelled
        ManualClock clock = new ManualClock();
        FakeSource source = new FakeSource();
        MemorySink sink = new MemorySink();
        CgroupLabelCache.Reader procReader = CgroupLabelCache.procReader(proc);
        Agent agent = new Agent(19, Duration.ofHours(1), source, new FakeSymbolizer(), List.of(sink), clock.clocks(),
                Agent.Options.defaults(Map.of("node", "n")).withCgroupReader(pid -> {
                    reads.add(pid);
                    return procReader.read(pid);
                }));
        agent.start();
        feed(agent, source, sample(77, 77, START, T0), sample(77, 77, START, T0 + 1), sample(77, 91, START, T0 + 2),
                sample(78, 78, START, T0), sample(79, 79, START, T0), sample(80, 80, START, T0),
                sample(80, 80, START, T0 + 3));
        assertEquals(List.of(77, 78, 79, 80), reads, "one read per process, whatever its threads and samples");

        // Moved to another unit: the 29 s old entry still holds; at 30 s both the thread's and the cache's are read again.
        cgroup(77, "0::/system.slice/other.service\n");
        clock.advance(Duration.ofSeconds(29));
        feed(agent, source, sample(77, 77, START, T0 + 29_000_000_000L));
        assertEquals(List.of(77, 78, 79, 80), reads);
        clock.advance(Duration.ofSeconds(1));
        feed(agent, source, sample(77, 77, START, T0 + 30_000_000_000L));
        assertEquals(List.of(77, 78, 79, 80, 77), reads);
        // The pid reused by a new process (another start time): read at once.
        cgroup(78, "0::/system.slice/cron.service\n");
        feed(agent, source, sample(78, 78, START + 1, T0 + 30_000_000_001L));
        assertEquals(List.of(77, 78, 79, 80, 77, 78), reads);
        agent.stop();

        assertEquals(1, sink.profiles.size());
        Profile p = sink.profiles.get(0);
        Map<Map<String, String>, Long> byLabels = new java.util.HashMap<>();
        for (var s : p.getSampleList()) {
            Map<String, String> labels = new TreeMap<>();
            for (var l : s.getLabelList()) {
                labels.put(p.getStringTable((int) l.getKey()),
                        l.getStr() != 0 ? p.getStringTable((int) l.getStr()) : Long.toString(l.getNum()));
            }
            byLabels.merge(labels, s.getValue(0), Long::sum);
        }
        // The local file's samples also carry the series label node (the agent's seriesLabels, "n" here).
        Map<Map<String, String>, Long> expected = new java.util.HashMap<>();
        expected.put(Map.of("node", "n", "pid", "77", "tid", "77", "comm", "p77", "thread_comm", "t77",
                "systemd_unit", "docker-" + ID + ".scope", "container_id", ID), 3L);
        expected.put(Map.of("node", "n", "pid", "77", "tid", "91", "comm", "p77", "thread_comm", "t91",
                "systemd_unit", "docker-" + ID + ".scope", "container_id", ID), 1L);
        expected.put(Map.of("node", "n", "pid", "77", "tid", "77", "comm", "p77", "thread_comm", "t77",
                "systemd_unit", "other.service"), 1L);
        expected.put(Map.of("node", "n", "pid", "78", "tid", "78", "comm", "p78", "thread_comm", "t78",
                "systemd_unit", "user@1000.service", "systemd_user_unit", "editor.service"), 1L);
        expected.put(Map.of("node", "n", "pid", "78", "tid", "78", "comm", "p78", "thread_comm", "t78",
                "systemd_unit", "cron.service"), 1L);
        expected.put(Map.of("node", "n", "pid", "79", "tid", "79", "comm", "p79", "thread_comm", "t79",
                "systemd_unit", "init.scope"), 1L);
        expected.put(Map.of("node", "n", "pid", "80", "tid", "80", "comm", "p80", "thread_comm", "t80"), 2L);
        assertEquals(expected, byLabels);
    }

    /** Hands the samples to the agent's loop and waits until it has processed them all. */
    private static void feed(Agent agent, FakeSource source, RawSample... samples) throws InterruptedException {
        long target = agent.status().samplesProcessed() + samples.length;
        source.queue.addAll(List.of(samples));
        long end = System.nanoTime() + 5_000_000_000L;
        while (agent.status().samplesProcessed() < target) {
            if (System.nanoTime() > end) {
                throw new AssertionError("the agent did not process the samples within 5 s");
            }
            Thread.sleep(5);
        }
    }
}
