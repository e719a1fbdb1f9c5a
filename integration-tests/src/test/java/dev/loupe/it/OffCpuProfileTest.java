package dev.loupe.it;

import dev.loupe.pprof.proto.Profile;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Off-CPU profiles against ground truth (offcpu_split.c, -O2 -fomit-frame-pointer): its thread "waiter" waits 70 % of
 * its time in sleep_part (nanosleep) and 30 % in poll_part (ppoll), almost all of its wall time; its two spinners share
 * one CPU, so they wait only in the run queue. The agent runs twice, at P = 1 and at P = 0.1; each writes an
 * {@code offcpu-TIME.pb.gz} beside each {@code cpu-TIME.pb.gz} for the same interval; the second interval's (after
 * start-up) is read through the real {@code go tool pprof} and Parca's rules, then by its values: the split within 5 points, the waiter's total within
 * 10 % (P = 1) and 15 % (P = 0.1) of the interval, stacks from schedule in the kernel to the thread's start, and the
 * spinners' waits all {@code runnable}. {@code /debug/pprof/offcpu?seconds=2} serves the same live.
 */
class OffCpuProfileTest {
    @TempDir
    static Path dir;
    static Process target;
    static List<Path> exactProfiles;
    static List<Path> sampledProfiles;
    static Path exactProfile;

    @BeforeAll
    static void profileTheTargetTwice() throws Exception {
        Path bin = Targets.build("offcpu_split.c", dir, "offcpu_split", "-fomit-frame-pointer", "-pthread");
        target = Targets.startReady(bin); // its threads exist (their names set) before the agent looks
        exactProfiles = run("1", "exact", "13s");
        exactProfile = exactProfiles.getFirst();
        sampledProfiles = run("0.1", "sampled", "21s"); // more waits: the estimate's noise
    }

    @AfterAll
    static void stopTarget() throws InterruptedException {
        Targets.kill(target);
    }

    /**
     * One agent run of 4 s intervals; the off-CPU profiles of its whole intervals after the first (the target's tables
     * went into the kernel during the first), each checked by go tool pprof and Parca's rules, beside the CPU profile of
     * its interval.
     */
    private static List<Path> run(String probability, String name, String duration) throws Exception {
        Path outDir = dir.resolve(name);
        try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(target.pid()), "--off-cpu-threshold",
                probability, "--duration", duration, "--interval", "4s", "--output", outDir.toString(), "--http", "off")) {
            assertEquals(0, agent.awaitExit(Duration.ofSeconds(120)), agent.log());
        }
        assertTrue(target.isAlive(), "the agent never harms a target");
        List<Path> files = Profiles.files(outDir);
        List<String> cpu = files.stream().map(f -> f.getFileName().toString()).filter(f -> f.startsWith("cpu-"))
                .map(f -> f.substring(4)).toList();
        List<String> offcpu = files.stream().map(f -> f.getFileName().toString()).filter(f -> f.startsWith("offcpu-"))
                .map(f -> f.substring(7)).toList();
        assertEquals(cpu, offcpu, "an offcpu file beside each cpu file, with the same interval's time");
        assertTrue(cpu.size() >= 3, "three intervals or more: " + files);
        List<Path> whole = new ArrayList<>();
        for (int i = 1; i < offcpu.size() - 1; i++) { // not the first, not the last (partial: --duration ends it)
            Path f = outDir.resolve("offcpu-" + offcpu.get(i));
            Profile p = Profiles.read(f);
            assertEquals(List.of(), dev.loupe.pprof.ParcaRules.violations(p));
            String raw = PprofTool.run("-raw", f.toString());
            assertTrue(raw.contains("PeriodType: off_cpu nanoseconds"), raw.substring(0, Math.min(400, raw.length())));
            assertTrue(raw.contains("events/count off_cpu/nanoseconds"), raw.substring(0, Math.min(400, raw.length())));
            assertEquals(Profiles.read(outDir.resolve("cpu-" + cpu.get(i))).getDurationNanos(), p.getDurationNanos(),
                    "the CPU profile's interval");
            whole.add(f);
        }
        return whole;
    }

    /** A sample's stack and labels with its off-CPU nanoseconds. */
    private record Wait(Profiles.Stack stack, long nanos) {
        String thread() {
            return stack.labels().get("thread_comm");
        }
    }

    private static boolean fallback(Wait w) {
        return "frame_pointers".equals(w.stack().labels().get("unwind"));
    }

    private static List<Wait> waits(Path file) throws Exception {
        Profile p = Profiles.read(file);
        List<Profiles.Stack> stacks = Profiles.stacks(p);
        List<Wait> out = new ArrayList<>();
        for (int i = 0; i < stacks.size(); i++) {
            out.add(new Wait(stacks.get(i), p.getSample(i).getValue(1)));
        }
        return out;
    }

    private static void assertSplitAndTotal(List<Path> files, double totalTolerance) throws Exception {
        long duration = 0;
        List<Wait> all = new ArrayList<>();
        for (Path f : files) {
            duration += Profiles.read(f).getDurationNanos();
            all.addAll(waits(f));
        }
        Path file = files.getFirst();
        List<Wait> waiter = all.stream().filter(w -> "waiter".equals(w.thread())).toList();
        // The split over table-walked waits: a frame-pointer walk (before the tables were in) stops early, more often
        // in one part than in the other.
        long sleep = waiter.stream().filter(w -> !fallback(w) && w.stack().functions().contains("sleep_part"))
                .mapToLong(Wait::nanos).sum();
        long poll = waiter.stream().filter(w -> !fallback(w) && w.stack().functions().contains("poll_part"))
                .mapToLong(Wait::nanos).sum();
        long total = waiter.stream().mapToLong(Wait::nanos).sum();
        double sleepShare = 100.0 * sleep / Math.max(1, sleep + poll);
        System.out.printf("off-CPU %s and %d more: waiter %.1f %% of %d ms in sleep_part, %.1f %% in poll_part; total %.1f %% of the interval%n",
                file.getFileName(), files.size() - 1, sleepShare, (sleep + poll) / 1_000_000, 100.0 * poll / Math.max(1, sleep + poll),
                100.0 * total / duration);
        assertTrue(Math.abs(sleepShare - 70) <= 5, "sleep_part's share " + sleepShare + " %");
        assertTrue(Math.abs(total - duration) <= totalTolerance * duration, "the waiter's off-CPU time " + total / 1_000_000
                + " ms of an interval of " + duration / 1_000_000 + " ms");
        // Waits recorded before the target's tables were in the kernel were walked by frame pointers (labelled so):
        // their user stacks stop early. Every other wait is in one of the two parts.
        long tabled = waiter.stream().filter(w -> !fallback(w)).mapToLong(Wait::nanos).sum();
        long tabledParts = waiter.stream().filter(w -> !fallback(w) && (w.stack().functions().contains("sleep_part")
                || w.stack().functions().contains("poll_part"))).mapToLong(Wait::nanos).sum();
        assertTrue(tabledParts >= 0.99 * tabled, "table-walked waits outside sleep_part and poll_part: "
                + (tabled - tabledParts) + " of " + tabled + " ns");
        assertTrue(tabled >= 0.95 * total, "frame-pointer fallback waits in the second interval: " + (total - tabled)
                + " of " + total + " ns");
    }

    /** {@code /debug/pprof/offcpu?seconds=2} is served live, as the CPU profile is, with the same access rules. */
    @Test
    void offCpuProfilesAreServedLive() throws Exception {
        int port = FreePort.next();
        try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(target.pid()), "--off-cpu-threshold", "1",
                "--duration", "120s", "--output", "off", "--http", "127.0.0.1:" + port, "--http-profiles", "unauthenticated")) {
            agent.awaitSampling(Duration.ofSeconds(90));
            java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (true) { // the endpoint comes up beside the sampler
                try {
                    http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + port + "/healthz"))
                            .build(), java.net.http.HttpResponse.BodyHandlers.discarding());
                    break;
                } catch (java.net.ConnectException e) {
                    if (System.nanoTime() > deadline) {
                        throw new AssertionError("the HTTP endpoint did not come up within 30 s:\n" + agent.log(), e);
                    }
                    Thread.sleep(100);
                }
            }
            java.net.http.HttpResponse<byte[]> live = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(
                    "http://127.0.0.1:" + port + "/debug/pprof/offcpu?seconds=2")).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofByteArray());
            assertEquals(200, live.statusCode(), new String(live.body(), java.nio.charset.StandardCharsets.UTF_8));
            Profile served = Profile.parseFrom(new java.util.zip.GZIPInputStream(new java.io.ByteArrayInputStream(live.body())));
            assertEquals(List.of(), dev.loupe.pprof.ParcaRules.violations(served));
            assertTrue(Profiles.stacks(served).stream().anyMatch(st -> "waiter".equals(st.labels().get("thread_comm"))
                    && st.functions().contains("poll_part")), "the waiter's waits in /debug/pprof/offcpu");
        }
    }

    @Test
    void atProbabilityOneTheSplitAndTheTotalAreTheTruth() throws Exception {
        assertSplitAndTotal(exactProfiles, 0.10);
    }

    @Test
    void atProbabilityATenthTheWeightedTotalIsTheTruth() throws Exception {
        assertSplitAndTotal(sampledProfiles, 0.15);
    }

    @Test
    void waitStacksGoFromScheduleToTheThreadsStart() throws Exception {
        List<Wait> waiter = waits(exactProfile).stream().filter(w -> "waiter".equals(w.thread())).toList();
        long all = 0;
        long complete = 0;
        Map<String, Long> examples = new TreeMap<>();
        long fallback = 0;
        for (Wait w : waiter) {
            if (fallback(w)) {
                fallback += w.nanos();
                continue;
            }
            List<String> f = w.stack().functions();
            List<String> user = w.stack().user();
            // The kernel stack at the switch: __schedule first (nothing of the tracepoint's or the program's own),
            // then schedule and the syscall's wait.
            boolean kernel = f.get(0).equals("__schedule") && f.contains("schedule") && (f.contains("do_nanosleep")
                    || f.contains("do_sys_poll"));
            int part = Math.max(user.indexOf("sleep_part"), user.indexOf("poll_part"));
            boolean toRoot = part >= 0 && user.subList(part, user.size()).containsAll(List.of("waiter_main", "start_thread"));
            all += w.nanos();
            if (kernel && toRoot) {
                complete += w.nanos();
            } else {
                examples.merge(String.join(" <- ", f), w.nanos(), Long::sum);
            }
        }
        System.out.printf("off-CPU stacks: %.2f %% of the waiter's table-walked time complete from __schedule to"
                + " start_thread (%.1f %% of its time frame-pointer fallback)%n", 100.0 * complete / Math.max(1, all),
                100.0 * fallback / Math.max(1, all + fallback));
        assertTrue(all > 0, "no waits of the waiter");
        assertTrue(complete >= 0.99 * all, "complete " + complete + " of " + all + " ns; others: " + examples);
    }

    @Test
    void spinnersWaitOnlyInTheRunQueue() throws Exception {
        List<Wait> spinners = waits(exactProfile).stream().filter(w -> w.thread() != null && w.thread().startsWith("spinner"))
                .toList();
        long runnable = spinners.stream().filter(w -> "runnable".equals(w.stack().labels().get("state"))).mapToLong(Wait::nanos).sum();
        long total = spinners.stream().mapToLong(Wait::nanos).sum();
        long duration = Profiles.read(exactProfile).getDurationNanos();
        System.out.printf("off-CPU spinners: %d ms waiting, %d ms of it runnable, interval %d ms%n", total / 1_000_000,
                runnable / 1_000_000, duration / 1_000_000);
        // Two threads on one CPU: each waits for the other about half of the time.
        assertTrue(total >= duration / 4, "the spinners waited " + total / 1_000_000 + " ms");
        assertEquals(total, runnable, "spinners' waits by state: " + spinners.stream()
                .map(w -> w.stack().labels().get("state")).distinct().toList());
        List<Wait> waiter = waits(exactProfile).stream().filter(w -> "waiter".equals(w.thread())).toList();
        assertTrue(waiter.stream().anyMatch(w -> "sleeping".equals(w.stack().labels().get("state"))), "the waiter sleeps");
    }
}
