package dev.loupe.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Issue 25: a host that starts short processes all the time. The real agent, host-wide at 99 Hz (default budget: the
 * smallest one is UnwindBudgetTest's), under a churn of real short processes (python3 importing a dozen extension modules, ~22
 * executable mappings each; gzip; a shell pipeline). The kernel finds each pc's mapping itself and its file's table by
 * the file's identity, so once the churn's binaries were seen (a warm-up), its processes are walked to their entry
 * from their first sample and named from the mappings the samples carry, even after they exited: the churn's samples
 * are named and complete, no process needed a registration or a read of its /proc per process, a frame-pointer-free
 * target started into the churn is unwound completely, and once the churn stops every part's per-process state comes
 * back to about where it was at rest, read from the agent's /metrics.
 */
class ShortLivedProcessesTest {
    @TempDir
    static Path dir;

    /** How far above its resting level the number of processes a part of the agent holds state for may stay. */
    static final long STATES_SLACK = 40;
    /** The churn's commands (their processes' comm). */
    static final java.util.Set<String> CHURN = java.util.Set.of("python3", "gzip", "sh", "wc", "ls");

    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void aChurnOfShortProcessesIsNamedAndCompleteFromTheFirstSampleAndLeavesNothingBehind() throws Exception {
        Path deeprec = Targets.build("deeprec.c", dir, "deeprec", "-fomit-frame-pointer");
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String base = "http://127.0.0.1:" + port;
        Path out = dir.resolve("profiles");
        try (AgentProcess agent = AgentProcess.start(dir, "--frequency", "99", "--interval", "60s",
                "--output", out.toString(), "--http", "127.0.0.1:" + port, "--http-profiles", "unauthenticated")) {
            agent.awaitSampling(Duration.ofSeconds(60));
            String metrics = awaitRest(base);
            Map<String, Long> restStates = processStates(metrics);
            System.out.printf("churn: at rest, states %s%n", restStates);

            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong started = new AtomicLong();
            List<Thread> loops = new ArrayList<>();
            List<List<String>> commands = List.of(
                    List.of("/usr/bin/python3", "-c", "import json, decimal, ssl, sqlite3, hashlib, zlib, bz2, lzma, ctypes,"
                            + " socket, select, array, math; sum(i * i for i in range(20000))"),
                    List.of("/bin/sh", "-c", "gzip -c /usr/bin/python3 | wc -c >/dev/null; ls / | wc -l >/dev/null"));
            for (List<String> cmd : commands) {
                Thread t = new Thread(() -> {
                    while (!stop.get()) {
                        try {
                            Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
                            started.incrementAndGet();
                            p.waitFor();
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    }
                }, "churn");
                t.start();
                loops.add(t);
            }
            try {
                // Warm-up: the churn's binaries are seen once (their tables loaded, their symbols cached).
                awaitMetrics(base, m -> started.get() >= 40, Duration.ofSeconds(60), "40 churn processes started");
                String before = scrape(base);
                long startedBefore = started.get();
                Path churnProfile = dir.resolve("churn.pb.gz");
                HttpResponse<Path> churn = http.send(HttpRequest.newBuilder(URI.create(base + "/debug/pprof/profile?seconds=20"))
                        .timeout(Duration.ofSeconds(90)).build(), HttpResponse.BodyHandlers.ofFile(churnProfile));
                assertEquals(200, churn.statusCode());
                String after = scrape(base);
                long churned = started.get() - startedBefore;
                long registrations = metric(after, "loupe_unwind_registrations_total") - metric(before, "loupe_unwind_registrations_total");
                long fileLoads = metric(after, "loupe_unwind_file_loads_total") - metric(before, "loupe_unwind_file_loads_total");
                long mapsReads = metric(after, "loupe_symbolizer_maps_reads_total") - metric(before, "loupe_symbolizer_maps_reads_total");
                System.out.printf("churn: %d processes started in 20 s; registrations %d, file loads %d, maps reads %d%n",
                        churned, registrations, fileLoads, mapsReads);
                assertTrue(churned >= 100, "the churn ran: " + churned);
                assertEquals(0, metric(after, "loupe_unwind_mapping_space_full_total"), "no registration refused for room");
                // (Registrations, file loads and maps reads are the whole host's, whose other processes come and go: printed,
                // not asserted. The bench measures them in a PID namespace of its own.)
                long fromSamples = metric(after, "loupe_symbolizer_frames_from_sampled_mappings_total")
                        - metric(before, "loupe_symbolizer_frames_from_sampled_mappings_total");
                long churnSamples = assertChurnNamedAndComplete(churnProfile);
                assertTrue(fromSamples >= churnSamples, fromSamples + " frames named from the mappings samples carried, for "
                        + churnSamples + " churn samples: most processes were named without a read of their /proc");

                // A frame-pointer-free process started now, into the churn, is walked with its tables to main.
                Process late = Targets.start(deeprec);
                try {
                    Path profile = dir.resolve("late.pb.gz");
                    HttpResponse<Path> r = http.send(HttpRequest.newBuilder(URI.create(base + "/debug/pprof/profile?seconds=6"))
                            .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofFile(profile));
                    assertEquals(200, r.statusCode());
                    assertTrue(late.isAlive(), "the agent never harms a target");
                    assertLateTargetComplete(profile, late.pid());
                } finally {
                    Targets.kill(late);
                }
            } finally {
                stop.set(true);
                for (Thread t : loops) {
                    t.join(30_000);
                }
            }

            // The churn is over: every part's per-process state comes back to about its resting level.
            String after = awaitMetrics(base, m -> withinSlack(processStates(m), restStates), Duration.ofSeconds(30),
                    "per-process state near " + restStates);
            System.out.printf("churn: after it, states %s%n", processStates(after));
            assertEquals(0, metric(after, "loupe_unwind_mapping_space_full_total"));
            assertTrue(metric(after, "loupe_process_exits_total") >= started.get() / 2,
                    "exits came from the kernel: " + metric(after, "loupe_process_exits_total") + " for " + started.get());
            String log = agent.log();
            assertFalse(log.contains("no room for") || log.contains("free mapping slots"), log);
        }
    }

    /**
     * Of the churn processes' samples (by comm), at least 90 % have no frame outside every mapping and reach their
     * entry ({@code _start} or {@code __libc_start_main}; {@code _dl_start} while ld.so loads the program), and at most 5 % were walked with frame pointers because a
     * file's table was missing: the figures issue 25 asks of a binary seen before.
     */
    private static long assertChurnNamedAndComplete(Path profile) throws Exception {
        long all = 0;
        long good = 0;
        long fallback = 0;
        long exiting = 0;
        Map<String, long[]> byComm = new TreeMap<>();
        for (Profiles.Stack s : Profiles.stacks(Profiles.read(profile))) {
            String comm = s.labels().getOrDefault("comm", "");
            if (!CHURN.contains(comm)) {
                continue;
            }
            if (s.files().stream().allMatch(f -> f.equals("[kernel.kallsyms]") || f.isEmpty()) && !s.functions().contains("_start")
                    && s.functions().stream().anyMatch(f -> f.equals("do_exit") || f.equals("exit_mmap"))) {
                exiting += s.count(); // the process's memory is being torn down: no user stack is left to walk
                continue;
            }
            boolean named = true;
            for (int i = 0; i < s.functions().size(); i++) {
                named &= !(s.functions().get(i).equals("?") && s.files().get(i).isEmpty());
            }
            // A process's entry: libc's start, or, while ld.so is still loading it, the loader's first C function.
            boolean reaches = s.functions().contains("_start") || s.functions().contains("__libc_start_main")
                    || s.functions().contains("_dl_start");
            all += s.count();
            good += named && reaches ? s.count() : 0;
            fallback += "frame_pointers".equals(s.labels().get("unwind")) ? s.count() : 0;
            long[] c = byComm.computeIfAbsent(comm, k -> new long[2]);
            c[0] += s.count();
            c[1] += named && reaches ? s.count() : 0;
        }
        StringBuilder per = new StringBuilder();
        byComm.forEach((comm, c) -> per.append(String.format(" %s %d/%d", comm, c[1], c[0])));
        System.out.printf("churn: %d of %d churn samples named and complete (%.1f %%), %d frame-pointer fallback, %d more in"
                + " exit with no memory left;%s%n", good, all, 100.0 * good / Math.max(1, all), fallback, exiting, per);
        if (good < 0.90 * all) {
            Profiles.stacks(Profiles.read(profile)).stream().filter(st -> CHURN.contains(st.labels().getOrDefault("comm", "")))
                    .sorted((a, b) -> Long.compare(b.count(), a.count())).limit(8)
                    .forEach(st -> System.out.println("churn:   " + st.count() + " " + st.labels().get("comm") + " "
                            + st.labels().getOrDefault("unwind", "") + " " + st.functions()));
        }
        assertTrue(all >= 200, "churn samples: " + all);
        assertTrue(good >= 0.90 * all, good + " of " + all + " named and complete:" + per);
        assertTrue(fallback <= 0.05 * all, fallback + " of " + all + " walked with frame pointers for want of a table");
        return all;
    }

    /** ≥ 99 % of the late target's table-unwound samples in its leaf carry the whole chain. */
    private static void assertLateTargetComplete(Path profile, long pid) throws Exception {
        List<String> chain = new ArrayList<>(List.of("leaf"));
        chain.addAll(Collections.nCopies(60, "recurse"));
        chain.addAll(List.of("spin_forever", "main"));
        long leaf = 0;
        long exact = 0;
        long fallback = 0;
        for (PprofTraces.Trace t : PprofTraces.of("-tagfocus=pid=" + pid, profile.toString())) {
            if (t.fallback()) {
                fallback += t.count();
                continue;
            }
            int at = t.indexOf("leaf");
            if (at >= 0) {
                leaf += t.count();
                exact += t.chainAt(at, chain) ? t.count() : 0;
            }
        }
        System.out.printf("churn: late FP-free target: %d of %d table-unwound leaf samples exact, %d fallback%n", exact, leaf,
                fallback);
        assertTrue(leaf >= 50, "table-unwound leaf samples of the late target: " + leaf + " (fallback " + fallback + ")");
        assertTrue(exact >= 0.99 * leaf, "exact " + exact + " of " + leaf);
        assertTrue(fallback <= 99, "frame-pointer fallback samples " + fallback + ": its tables loaded within a CPU-second");
    }

    private static boolean withinSlack(Map<String, Long> now, Map<String, Long> rest) {
        for (Map.Entry<String, Long> e : now.entrySet()) {
            if (e.getValue() > rest.getOrDefault(e.getKey(), 0L) + STATES_SLACK) {
                return false;
            }
        }
        return !now.isEmpty();
    }

    /**
     * The agent at rest: the host's running processes registered (those that started before the agent are, at their
     * first sample), i.e. no registration for two seconds (scraped every 500 ms, within 60 s).
     */
    private String awaitRest(String base) throws Exception {
        long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        List<Long> last = new ArrayList<>();
        String text = scrape(base);
        while (System.nanoTime() < end) {
            text = scrape(base);
            last.add(metric(text, "loupe_unwind_registrations_total"));
            if (last.size() >= 5 && last.subList(last.size() - 5, last.size()).stream().distinct().count() == 1) {
                return text;
            }
            Thread.sleep(500);
        }
        fail("the agent never came to rest (registrations " + last + ")");
        return text;
    }

    private String scrape(String base) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    private String awaitMetrics(String base, java.util.function.Predicate<String> ok) throws Exception {
        return awaitMetrics(base, ok, Duration.ofSeconds(30), "metrics");
    }

    /** Scrapes until {@code ok} holds (every 200 ms), or fails after {@code timeout} with the last scrape. */
    private String awaitMetrics(String base, java.util.function.Predicate<String> ok, Duration timeout, String what)
            throws Exception {
        long end = System.nanoTime() + timeout.toNanos();
        String last = "";
        while (System.nanoTime() < end) {
            last = scrape(base);
            if (ok.test(last)) {
                return last;
            }
            Thread.sleep(200);
        }
        fail("not within " + timeout + ": " + what + "; last /metrics:\n" + last);
        return last;
    }

    /** loupe_process_states by holder. */
    static Map<String, Long> processStates(String text) {
        Map<String, Long> out = new TreeMap<>();
        Matcher m = Pattern.compile("(?m)^loupe_process_states\\{holder=\"([a-z_]+)\"\\} (\\d+)(?:\\.0)?$").matcher(text);
        while (m.find()) {
            out.put(m.group(1), Long.parseLong(m.group(2)));
        }
        return out;
    }

    static long metric(String text, String name) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + " (\\d+)(?:\\.0)?$").matcher(text);
        if (!m.find()) {
            return -1;
        }
        return Long.parseLong(m.group(1));
    }
}
