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
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The kernel memory bound for unwind tables, with real BPF: four frame-pointer-less processes, each running
 * its own copy of deeprec (a 60-deep recursion) linked with 12,000 filler functions, so its table is ~70 k rows (12,000 functions at -O1: 11 s to compile), under the
 * smallest budget (1 MiB: 196,608 rows), so at most two of the four tables fit beside libc's. Tables are evicted and re-uploaded as the processes
 * take turns on the CPU: /metrics counts the evictions and more table builds than binaries, the kernel's
 * budget-sized maps (read through bpftool) hold at most 1 MiB, every process has samples unwound with its
 * table, and every sample unwound with a table still has the exact call chain (the others are marked
 * frame-pointer fallback, never silently wrong, and bounded).
 */
class UnwindBudgetTest {
    @TempDir
    static Path dir;
    static final List<Process> targets = new ArrayList<>();
    static final int FUNCTIONS = 12_000;
    /** The kernel arrays whose sizes come from the budget (UnwindMaps.Capacity.forBudget). */
    static final List<String> BUDGETED_MAPS = List.of("unwind_pages", "unwind_rows", "unwind_rules", "mappings");
    /** Table-unwound samples each process has at least: it had its table (30 to 128 each measured, on a loaded host). */
    static final long MIN_TABLE_SAMPLES = 10;
    /**
     * Frame-pointer fallback samples at most, as a fraction of all: 0.69 to 0.72 measured. Four processes take
     * turns with two tables' room, so each turn evicts another's table and rebuilds its own, and the process is
     * walked with frame pointers (marked) meanwhile; a process never registered again would push it towards 1.
     */
    static final double MAX_FALLBACK_FRACTION = 0.85;
    static final String BPFTOOL = Files.isExecutable(Path.of("/usr/sbin/bpftool")) ? "/usr/sbin/bpftool" : "bpftool";

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
        Map<String, KernelMap> maps;
        try (AgentProcess agent = AgentProcess.start(dir, "--pid", String.join(",", pids.stream().map(String::valueOf).toList()),
                "--frequency", "99", "--interval", "60s", "--unwind-table-budget", "1MiB", "--output", out.toString(),
                "--http", "127.0.0.1:" + port)) {
            agent.awaitSampling(Duration.ofSeconds(60));
            Thread.sleep(15_000);
            maps = kernelMaps(agent.pid());
            metrics = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                    .build(), HttpResponse.BodyHandlers.ofString()).body();
            agent.terminate(); // SIGTERM writes the partial interval
            int exit = agent.awaitExit(Duration.ofSeconds(60));
            assertTrue(exit == 0 || exit == 143, "exit " + exit + "\n" + agent.log());
        }

        // The kernel's side of the budget, as the kernel reports the agent's maps: the arrays sized from the
        // budget (table contents and process mappings) hold at most 1 MiB of values.
        long budgeted = 0;
        for (String name : BUDGETED_MAPS) {
            KernelMap m = maps.get(name);
            assertTrue(m != null, "the agent holds no map " + name + ": " + maps);
            budgeted += m.maxEntries() * m.valueSize();
        }
        System.out.printf("budget 1MiB: kernel maps %s; budgeted values %d bytes%n", maps, budgeted);
        assertTrue(budgeted <= 1 << 20, "max_entries x value_size of " + BUDGETED_MAPS + ": " + budgeted + " bytes");

        long rows = metric(metrics, "loupe_unwind_table_rows");
        long evictions = metric(metrics, "loupe_unwind_table_evictions_total");
        long built = metric(metrics, "loupe_unwind_tables_built_total");
        int binaries = distinctExecutableBinaries(pids);
        System.out.printf("budget 1MiB: %d rows loaded now, %d evictions, %d tables built for %d binaries%n", rows, evictions,
                built, binaries);
        assertTrue(rows <= maps.get("unwind_rows").maxEntries(), "rows loaded within the kernel's row array: " + rows);
        assertTrue(rows <= 196_608, "rows within the 1 MiB budget: " + rows);
        assertTrue(evictions > 0, "four ~70k-row tables and libc's cannot all fit: evictions expected\n" + metrics);
        // Each binary's table is built once while it stays loaded: more builds than binaries means evicted
        // tables were built again for the processes that needed them back.
        assertTrue(built > binaries, "tables built " + built + " for " + binaries + " binaries: none reloaded after eviction");

        List<Path> files = Profiles.files(out);
        assertEquals(1, files.size(), files.toString());
        Profiles.checked(files.get(0));
        List<String> chain = new ArrayList<>(List.of("leaf"));
        chain.addAll(Collections.nCopies(60, "recurse"));
        chain.addAll(List.of("spin_forever", "main"));
        long tableSamples = 0;
        long fallbackSamples = 0;
        for (long pid : pids) {
            long leaf = 0;
            long exact = 0;
            long fallback = 0;
            for (PprofTraces.Trace t : PprofTraces.of("-tagfocus=pid=" + pid, files.get(0).toString())) {
                if (t.fallback()) {
                    fallback += t.count();
                    continue;
                }
                int at = t.indexOf("leaf");
                if (at < 0) {
                    continue;
                }
                leaf += t.count();
                if (t.chainAt(at, chain)) {
                    exact += t.count();
                }
            }
            System.out.printf("budget 1MiB, pid %d: %d of %d table-unwound leaf samples exact, %d fallback%n", pid, exact, leaf,
                    fallback);
            assertTrue(leaf >= MIN_TABLE_SAMPLES, "pid " + pid + ": only " + leaf + " table-unwound leaf samples");
            assertTrue(exact >= 0.99 * leaf, "pid " + pid + ": exact " + exact + " of " + leaf);
            tableSamples += leaf;
            fallbackSamples += fallback;
        }
        long fallbackMetric = metric(metrics, "loupe_unwind_fp_fallback_samples_total");
        long samplesMetric = metric(metrics, "loupe_samples_total");
        System.out.printf("budget 1MiB: %d table-unwound, %d fallback samples in the profile; /metrics %d fallback of %d%n",
                tableSamples, fallbackSamples, fallbackMetric, samplesMetric);
        assertTrue(tableSamples > 200, "table-unwound samples across the four: " + tableSamples);
        assertTrue(fallbackSamples <= MAX_FALLBACK_FRACTION * (fallbackSamples + tableSamples),
                "fallback samples " + fallbackSamples + " of " + (fallbackSamples + tableSamples));
        assertTrue(fallbackMetric <= MAX_FALLBACK_FRACTION * samplesMetric,
                "/metrics: fallback samples " + fallbackMetric + " of " + samplesMetric);
    }

    /** A BPF map as the kernel describes it. */
    record KernelMap(long id, long valueSize, long maxEntries, long bytesMemlock) {}

    /**
     * The BPF maps {@code agentPid} holds, by name, from the kernel: map ids from its file descriptors' fdinfo
     * (another agent may run at the same time), each described by bpftool.
     */
    private static Map<String, KernelMap> kernelMaps(long agentPid) throws Exception {
        Set<Long> ids = new TreeSet<>();
        Pattern mapId = Pattern.compile("(?m)^map_id:\\s*(\\d+)");
        try (var fds = Files.list(Path.of("/proc", Long.toString(agentPid), "fdinfo"))) {
            for (Path fd : fds.toList()) {
                try {
                    Matcher m = mapId.matcher(Files.readString(fd));
                    if (m.find()) {
                        ids.add(Long.parseLong(m.group(1)));
                    }
                } catch (java.io.IOException e) {
                    // closed meanwhile
                }
            }
        }
        Map<String, KernelMap> maps = new TreeMap<>();
        for (long id : ids) {
            String json = Commands.run(List.of(BPFTOOL, "-j", "map", "show", "id", Long.toString(id)), 30).check().output();
            Matcher name = Pattern.compile("\"name\":\"([^\"]*)\"").matcher(json);
            if (name.find()) {
                maps.put(name.group(1), new KernelMap(id, jsonLong(json, "bytes_value"), jsonLong(json, "max_entries"),
                        jsonLong(json, "bytes_memlock")));
            }
        }
        return maps;
    }

    private static long jsonLong(String json, String field) {
        Matcher m = Pattern.compile("\"" + field + "\":(\\d+)").matcher(json);
        assertTrue(m.find(), field + " not in " + json);
        return Long.parseLong(m.group(1));
    }

    /** Distinct executable binaries (device and inode) the processes map, the vdso counted once: one table each. */
    private static int distinctExecutableBinaries(List<Long> pids) throws Exception {
        Set<String> binaries = new HashSet<>();
        for (long pid : pids) {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "maps"))) {
                String[] f = line.trim().split("\\s+");
                if (f.length < 6 || f[1].charAt(2) != 'x') {
                    continue;
                }
                if (f[5].startsWith("/")) {
                    binaries.add(f[3] + " " + f[4]);
                } else if (f[5].equals("[vdso]")) {
                    binaries.add("[vdso]"); // [vsyscall] has no table
                }
            }
        }
        return binaries.size();
    }

    private static long metric(String text, String name) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + " (\\d+)(?:\\.0)?$").matcher(text);
        assertTrue(m.find(), name + " not in /metrics:\n" + text);
        return Long.parseLong(m.group(1));
    }
}
