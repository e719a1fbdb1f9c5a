package dev.loupe.it;

import org.junit.jupiter.api.AfterAll;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The kernel memory bound for unwind tables, with real BPF: four frame-pointer-less processes, each running
 * its own copy of deeprec (a 60-deep recursion) linked with 12,000 filler functions, so its table is ~70 k rows (12,000 functions at -O1: 11 s to compile), under the
 * smallest budget (1 MiB: 196,608 rows), so at most two of the four tables fit beside libc's. Tables are evicted and re-uploaded as the processes
 * take turns on the CPU; /metrics counts the evictions, and every sample unwound with a table still has
 * the exact call chain (the others are marked frame-pointer fallback, never silently wrong).
 */
class UnwindBudgetTest {
    @TempDir
    static Path dir;
    static final List<Process> targets = new ArrayList<>();
    static final int FUNCTIONS = 12_000;

    @AfterAll
    static void stop() throws InterruptedException {
        for (Process t : targets) {
            Targets.kill(t);
        }
    }

    /** FUNCTIONS functions whose CFI makes the table big, kept by a global table; linked with deeprec.c. */
    private static String filler() {
        StringBuilder c = new StringBuilder("unsigned long recurse(int n);\n");
        for (int i = 0; i < FUNCTIONS; i++) {
            // A frame of its own and a call: each gets several CFA rows.
            c.append("__attribute__((noinline)) unsigned long f").append(i)
                    .append("(unsigned long x) { volatile unsigned long pad[").append(i % 4 + 1)
                    .append("]; pad[0] = x; return pad[0] + (x ? 0 : recurse(1)); }\n");
        }
        c.append("unsigned long (*const filler_table[])(unsigned long) = {");
        for (int i = 0; i < FUNCTIONS; i++) {
            c.append(i == 0 ? "" : ",").append('f').append(i);
        }
        return c.append("};\n").toString();
    }

    @Test
    void smallBudgetEvictsAndReloadsAndStacksStayExact() throws Exception {
        // deeprec.c as FramePointerFreeStacksTest builds it, plus the filler (-O1: it compiles in ~10 s).
        Path filler = Files.writeString(dir.resolve("filler.c"), filler());
        Path deeprecObj = dir.resolve("deeprec.o");
        Path fillerObj = dir.resolve("filler.o");
        Commands.run(List.of("gcc", "-O2", "-fomit-frame-pointer", "-c", Targets.SOURCES.resolve("deeprec.c").toString(),
                "-o", deeprecObj.toString()), 120).check();
        Commands.run(List.of("gcc", "-O1", "-fomit-frame-pointer", "-c", filler.toString(), "-o", fillerObj.toString()), 600).check();
        Path bin = dir.resolve("bigtable-0");
        Commands.run(List.of("gcc", deeprecObj.toString(), fillerObj.toString(), "-o", bin.toString()), 120).check();
        List<Long> pids = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Path copy = dir.resolve("bigtable-" + i); // a file of its own: a table of its own
            if (i > 0) {
                Files.copy(bin, copy);
            }
            Process p = Targets.start(copy);
            targets.add(p);
            pids.add(p.pid());
        }
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path out = dir.resolve("profiles");
        String metrics;
        try (AgentProcess agent = AgentProcess.start(dir, "--pid", String.join(",", pids.stream().map(String::valueOf).toList()),
                "--frequency", "99", "--interval", "60s", "--unwind-table-budget", "1MiB", "--output", out.toString(),
                "--http", "127.0.0.1:" + port)) {
            agent.awaitSampling(Duration.ofSeconds(60));
            Thread.sleep(15_000);
            metrics = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                    .build(), HttpResponse.BodyHandlers.ofString()).body();
            agent.terminate(); // SIGTERM writes the partial interval
            int exit = agent.awaitExit(Duration.ofSeconds(60));
            assertTrue(exit == 0 || exit == 143, "exit " + exit + "\n" + agent.log());
        }
        long rows = metric(metrics, "loupe_unwind_table_rows");
        long evictions = metric(metrics, "loupe_unwind_table_evictions_total");
        System.out.printf("budget 1MiB: %d rows loaded now, %d evictions, %d tables built%n", rows, evictions,
                metric(metrics, "loupe_unwind_tables_built_total"));
        assertTrue(rows <= 196_608, "rows within the 1 MiB budget: " + rows);
        assertTrue(evictions > 0, "four ~70k-row tables and libc's cannot all fit: evictions expected\n" + metrics);
        assertTrue(metric(metrics, "loupe_unwind_fp_fallback_samples_total") >= 0);

        List<Path> files = Profiles.files(out);
        assertEquals(1, files.size(), files.toString());
        Profiles.checked(files.get(0));
        List<String> chain = new ArrayList<>(List.of("leaf"));
        chain.addAll(Collections.nCopies(60, "recurse"));
        chain.addAll(List.of("spin_forever", "main"));
        long tableSamples = 0;
        for (long pid : pids) {
            long leaf = 0;
            long exact = 0;
            for (PprofTraces.Trace t : PprofTraces.of("-tagfocus=pid=" + pid, files.get(0).toString())) {
                int at = t.indexOf("leaf");
                if (at < 0 || t.fallback()) {
                    continue;
                }
                leaf += t.count();
                if (t.chainAt(at, chain)) {
                    exact += t.count();
                }
            }
            System.out.printf("budget 1MiB, pid %d: %d of %d table-unwound leaf samples exact%n", pid, exact, leaf);
            assertTrue(exact >= 0.99 * leaf, "pid " + pid + ": exact " + exact + " of " + leaf);
            tableSamples += leaf;
        }
        assertTrue(tableSamples > 200, "table-unwound samples across the four: " + tableSamples);
    }

    private static long metric(String text, String name) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + " (\\d+)(?:\\.0)?$").matcher(text);
        assertTrue(m.find(), name + " not in /metrics:\n" + text);
        return Long.parseLong(m.group(1));
    }
}
