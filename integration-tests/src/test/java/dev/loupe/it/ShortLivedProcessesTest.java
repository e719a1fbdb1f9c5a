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
 * Issue 25: a host that starts short processes all the time. The real agent, host-wide at 99 Hz, with the smallest
 * unwind budget (1 MiB: 2,048 mapping slots), under a churn of real short processes (python3 importing a dozen
 * extension modules, ~22 executable mappings each; gzip; a shell pipeline) until the slots it handed out exceed the
 * capacity three times over: had exits not given their slots back, the space would have been full after the first
 * hundred pythons. Then: no registration was refused for want of room, a frame-pointer-free target started now is
 * unwound completely (its own tables), and once the churn stops the slots in use and every part's per-process state
 * come back to about where they were at rest, read from the agent's /metrics.
 */
class ShortLivedProcessesTest {
    @TempDir
    static Path dir;

    /** Slots handed out, in capacities: exits must have given back at least two capacities' worth. */
    static final int CAPACITIES = 3;
    /** How far above its resting level the slots in use may stay after the churn (other processes of the host). */
    static final long SLOTS_SLACK = 200;
    /** The same for the number of processes a part of the agent holds state for. */
    static final long STATES_SLACK = 40;

    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void aChurnOfShortProcessesLeavesNothingBehindAndLateProcessesGetTables() throws Exception {
        Path deeprec = Targets.build("deeprec.c", dir, "deeprec", "-fomit-frame-pointer");
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String base = "http://127.0.0.1:" + port;
        Path out = dir.resolve("profiles");
        try (AgentProcess agent = AgentProcess.start(dir, "--frequency", "99", "--interval", "60s",
                "--unwind-table-budget", "1MiB", "--output", out.toString(), "--http", "127.0.0.1:" + port, "--http-profiles", "unauthenticated")) {
            agent.awaitSampling(Duration.ofSeconds(60));
            String metrics = awaitMetrics(base, m -> metric(m, "loupe_unwind_mappings_capacity") > 0);
            long capacity = metric(metrics, "loupe_unwind_mappings_capacity");
            assertEquals(2048, capacity, "1 MiB's mapping slots");
            metrics = awaitRest(base);
            long restSlots = metric(metrics, "loupe_unwind_mappings");
            Map<String, Long> restStates = processStates(metrics);
            long allocatedBefore = metric(metrics, "loupe_unwind_mappings_allocated_total");
            System.out.printf("churn: at rest %d of %d slots in use, states %s%n", restSlots, capacity, restStates);

            // The churn: two loops of short processes, until the agent has handed out CAPACITIES x the slots.
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
            long churnStart = System.nanoTime();
            try {
                awaitMetrics(base, m -> metric(m, "loupe_unwind_mappings_allocated_total") - allocatedBefore
                        >= CAPACITIES * capacity, Duration.ofSeconds(240), "slots handed out past " + CAPACITIES + "x capacity");
                metrics = scrape(base);
                long allocated = metric(metrics, "loupe_unwind_mappings_allocated_total") - allocatedBefore;
                System.out.printf("churn: %d processes started in %.0f s, %d slots handed out (%.1fx capacity), %d in use now,"
                                + " %d exits reported%n", started.get(), (System.nanoTime() - churnStart) / 1e9, allocated,
                        (double) allocated / capacity, metric(metrics, "loupe_unwind_mappings"),
                        metric(metrics, "loupe_process_exits_total"));
                assertEquals(0, metric(metrics, "loupe_unwind_mapping_space_full_total"), "no registration refused for room");
                assertTrue(metric(metrics, "loupe_unwind_mappings") < capacity / 2,
                        "in use during the churn: " + metric(metrics, "loupe_unwind_mappings"));

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

            // The churn is over: the slots and the per-process state come back to about their resting levels.
            String after = awaitMetrics(base, m -> metric(m, "loupe_unwind_mappings") <= restSlots + SLOTS_SLACK
                    && withinSlack(processStates(m), restStates), Duration.ofSeconds(30),
                    "slots in use back near " + restSlots + " and per-process state near " + restStates);
            System.out.printf("churn: after it, %d slots in use (at rest %d), states %s%n", metric(after, "loupe_unwind_mappings"),
                    restSlots, processStates(after));
            assertEquals(0, metric(after, "loupe_unwind_mapping_space_full_total"));
            assertTrue(metric(after, "loupe_process_exits_total") >= started.get() / 2,
                    "exits came from the kernel: " + metric(after, "loupe_process_exits_total") + " for " + started.get());
            String log = agent.log();
            assertFalse(log.contains("no room for") || log.contains("free mapping slots"), log);
        }
    }

    /** ≥ 99 % of the late target's table-unwound samples in its leaf carry the whole chain; it was registered. */
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
        assertTrue(fallback <= 99, "frame-pointer fallback samples " + fallback + ": registered within a CPU-second");
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
     * The agent at rest: the host's running processes registered, i.e. no registration for two seconds (scraped every
     * 500 ms, within 60 s).
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
