package dev.loupe.agent.latencydiff;

import dev.loupe.agent.latencydiff.SyntheticLatencyProfiles.Calls;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static dev.loupe.agent.latencydiff.SyntheticLatencyProfiles.logNormal;
import static dev.loupe.agent.latencydiff.SyntheticLatencyProfiles.scaled;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code loupe latency-diff} run in-process on profiles built from known latencies: the rows it prints (checked
 * against the true quantiles of those latencies), its exit codes and its one-line complaints about bad files.
 */
class LatencyDiffCommandTest {
    private static final String APP = "/srv/app";
    private static final Pattern CELL = Pattern.compile("\\S+(?: \\S+)*");
    private static final Pattern DURATION = Pattern.compile("([0-9.]+)(ns|us|ms|s)");
    private static final String SUMMARY_TAIL = " (regressed: rank test p < 0.001 and p50 or p90 at least 1.2x the base's; "
            + "a verdict needs 200 calls on each side)";

    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {}

    private Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = LatencyDiffCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private Path write(String name, byte[] bytes) throws IOException {
        return Files.write(dir.resolve(name), bytes);
    }

    private Path profile(String name, Calls... functions) throws IOException {
        return write(name, SyntheticLatencyProfiles.latencyProfile(List.of(functions)));
    }

    /**
     * Base and current profiles of one function: {@code calls} log-normal latencies around 800 µs on each side
     * (seeds {@code seed} and {@code seed + 1}), the current ones times {@code slowdown}.
     */
    private String[] pair(String function, long seed, int calls, double sigma, double slowdown) throws IOException {
        Path base = profile("base.pb.gz", new Calls(APP, function, logNormal(seed, calls, 800_000, sigma)));
        Path current = profile("current.pb.gz",
                new Calls(APP, function, scaled(logNormal(seed + 1, calls, 800_000, sigma), slowdown)));
        return new String[] {base.toString(), current.toString()};
    }

    private Run run(String[] files, String... options) {
        return run(Stream.concat(Stream.of(options), Stream.of(files)).toArray(String[]::new));
    }

    @Test
    void aKnownPairPrintsOneRowPerFunctionRegressedFirstWithTheTrueQuantiles() throws IOException {
        long[] handle = logNormal(1, 1000, 1_000_000, 0.25);
        long[] parse = logNormal(3, 1000, 40_000, 0.3);
        // 190 calls (under the minimum) in a narrow spread: the p99 of so few calls rests on the top two, which a
        // wide spread leaves too far apart to check a histogram against
        long[] rare = logNormal(5, 190, 5_000_000, 0.1);
        Calls handleBase = new Calls(APP, "main.handle", handle);
        Calls handleNow = new Calls(APP, "main.handle", scaled(logNormal(2, 1000, 1_000_000, 0.25), 1.3));
        Calls parseBase = new Calls(APP, "main.parse", parse);
        Calls parseNow = new Calls(APP, "main.parse", logNormal(4, 1000, 40_000, 0.3));
        Calls rareBase = new Calls("/srv/worker", "main.rare", rare);
        Calls rareNow = new Calls("/srv/worker", "main.rare", scaled(logNormal(6, 190, 5_000_000, 0.1), 1.5));
        Calls gone = new Calls(APP, "main.gone", logNormal(7, 500, 200_000, 0.2));
        Calls added = new Calls(APP, "main.added", logNormal(8, 300, 3_000, 0.2));
        Path base = profile("base.pb.gz", handleBase, parseBase, rareBase, gone);
        Path current = profile("current.pb.gz", rareNow, added, parseNow, handleNow);

        Run r = run(base.toString(), current.toString());

        assertEquals(1, r.exit(), r.err() + r.out());
        assertEquals("", r.err());
        List<String> lines = r.out().lines().toList();
        assertEquals(7, lines.size(), r.out());
        assertEquals(DiffTable.HEADER, cells(lines.get(0)), r.out());
        checkRow(lines.get(1), "regressed", handleBase, handleNow);
        checkRow(lines.get(2), "not regressed", parseBase, parseNow);
        checkRow(lines.get(3), "too few calls", rareBase, rareNow);
        checkRow(lines.get(4), "only in base", gone, null);
        checkRow(lines.get(5), "only in current", null, added);
        assertEquals("5 functions: 1 regressed, 1 not regressed, 1 too few calls, 1 only in base, 1 only in current"
                + SUMMARY_TAIL, lines.get(6));
        assertAligned(lines.subList(0, 6));
    }

    @Test
    void aFunctionOneAndAThirdTimesSlowerOverAThousandCallsIsFlaggedAndExits1() throws IOException {
        Run r = run(pair("main.slow", 11, 1000, 0.3, 1.3));

        assertEquals(1, r.exit(), r.out());
        assertEquals("regressed", cells(r.out().lines().toList().get(1)).getFirst(), r.out());
        assertEquals("1 function: 1 regressed, 0 not regressed, 0 too few calls, 0 only in base, 0 only in current"
                + SUMMARY_TAIL, r.out().lines().toList().getLast());
    }

    @Test
    void anEqualFunctionIsNotFlaggedAndExits0() throws IOException {
        Run r = run(pair("main.same", 21, 1000, 0.3, 1.0));

        assertEquals(0, r.exit(), r.out());
        assertEquals("not regressed", cells(r.out().lines().toList().get(1)).getFirst(), r.out());
    }

    @Test
    void tooFewCallsGiveNoVerdictAndExit0UnlessTheMinimumIsLowered() throws IOException {
        String[] files = pair("main.few", 31, 150, 0.2, 1.5);

        Run defaults = run(files);
        Run lowered = run(files, "--latency-regression-min-calls", "100");

        assertEquals(0, defaults.exit(), defaults.out());
        assertEquals("too few calls", cells(defaults.out().lines().toList().get(1)).getFirst(), defaults.out());
        assertEquals(1, lowered.exit(), lowered.out());
        assertEquals("regressed", cells(lowered.out().lines().toList().get(1)).getFirst(), lowered.out());
        assertTrue(lowered.out().endsWith("a verdict needs 100 calls on each side)\n"), lowered.out());
    }

    @Test
    void aHigherThresholdLetsAOneAndAThirdSlowdownPass() throws IOException {
        Run r = run(pair("main.slow", 11, 1000, 0.3, 1.3), "--latency-regression-threshold=1.5");

        assertEquals(0, r.exit(), r.out());
        assertEquals("not regressed", cells(r.out().lines().toList().get(1)).getFirst(), r.out());
    }

    @Test
    void jsonHasOneObjectPerFunctionInTheTablesOrder() throws IOException {
        Calls slowBase = new Calls(APP, "main.slow", logNormal(11, 1000, 800_000, 0.3));
        Calls slowNow = new Calls(APP, "main.slow", scaled(logNormal(12, 1000, 800_000, 0.3), 1.3));
        Calls gone = new Calls(APP, "main.\"quoted\"", logNormal(13, 10, 1_000, 0.1));
        Path base = profile("base.pb.gz", slowBase, gone);
        Path current = profile("current.pb.gz", slowNow);

        Run r = run("--format", "json", base.toString(), current.toString());

        assertEquals(1, r.exit(), r.out());
        List<String> lines = r.out().lines().toList();
        assertEquals(4, lines.size(), r.out());
        assertEquals("[", lines.get(0));
        Matcher slow = Pattern.compile("\\{\"function\":\"main.slow\",\"binary\":\"/srv/app\",\"verdict\":\"regressed\","
                + "\"base_calls\":1000,\"current_calls\":1000,\"base_p50_ns\":(\\d+),\"current_p50_ns\":(\\d+),"
                + "\"base_p90_ns\":\\d+,\"current_p90_ns\":\\d+,\"base_p99_ns\":\\d+,\"current_p99_ns\":\\d+,"
                + "\"ratio_p50\":([0-9.]+),\"ratio_p90\":[0-9.]+,\"ratio_p99\":[0-9.]+,\"p_value\":[0-9.E-]+,"
                + "\"reason\":\"slower: p50 \\\\u00d7[^\"]+\"},").matcher(lines.get(1));
        assertTrue(slow.matches(), lines.get(1));
        assertWithin10Percent(slowBase.trueQuantile(0.5), Double.parseDouble(slow.group(1)), "base p50");
        assertWithin10Percent(slowNow.trueQuantile(0.5), Double.parseDouble(slow.group(2)), "current p50");
        assertWithin10Percent(slowNow.trueQuantile(0.5) / slowBase.trueQuantile(0.5), Double.parseDouble(slow.group(3)),
                "p50 ratio");
        assertTrue(Pattern.matches("\\{\"function\":\"main.\\\\\"quoted\\\\\"\",\"binary\":\"/srv/app\","
                + "\"verdict\":\"only in base\",\"base_calls\":10,\"current_calls\":0,\"base_p50_ns\":\\d+,"
                + "\"current_p50_ns\":null,\"base_p90_ns\":\\d+,\"current_p90_ns\":null,\"base_p99_ns\":\\d+,"
                + "\"current_p99_ns\":null,\"ratio_p50\":null,\"ratio_p90\":null,\"ratio_p99\":null,\"p_value\":null,"
                + "\"reason\":null}", lines.get(2)), lines.get(2));
        assertEquals("]", lines.get(3));
    }

    @Test
    void profilesWithoutCallsCompareToAnEmptyTableAndExit0() throws IOException {
        Path base = profile("base.pb.gz");
        Path current = profile("current.pb.gz");

        Run r = run(base.toString(), current.toString());

        assertEquals(0, r.exit(), r.err());
        assertEquals(List.of(String.join("  ", DiffTable.HEADER),
                "0 functions: 0 regressed, 0 not regressed, 0 too few calls, 0 only in base, 0 only in current"
                        + SUMMARY_TAIL), r.out().lines().toList());
    }

    @Test
    void helpPrintsTheUsageAndExits0() {
        Run r = run("--help");

        assertEquals(0, r.exit());
        assertTrue(r.out().startsWith("Usage: loupe latency-diff [options] BASE.pb.gz CURRENT.pb.gz\n"), r.out());
        for (String flag : List.of("--latency-regression-min-calls", "--latency-regression-threshold", "--format")) {
            assertTrue(r.out().contains(flag), flag + " in " + r.out());
        }
    }

    @Test
    void usageErrorsExit2WithOneMessage() throws IOException {
        Path p = profile("p.pb.gz", new Calls(APP, "main.x", logNormal(1, 10, 1000, 0.1)));

        assertEquals(new Run(2, "", "loupe latency-diff: CURRENT.pb.gz: missing (see --help)\n"
                + "Try 'loupe latency-diff --help'.\n"), run(p.toString()));
        assertEquals(new Run(2, "", "loupe latency-diff: third: unexpected argument (options start with --; see --help)\n"
                + "Try 'loupe latency-diff --help'.\n"), run(p.toString(), p.toString(), "third"));
        assertEquals(new Run(2, "", "loupe latency-diff: --format: must be table or json, got \"csv\"\n"
                + "Try 'loupe latency-diff --help'.\n"), run("--format", "csv", p.toString(), p.toString()));
        assertEquals(new Run(2, "", "loupe latency-diff: --latency-regression-threshold: must be between 1.0 and 100, "
                + "got 0.9\nTry 'loupe latency-diff --help'.\n"),
                run("--latency-regression-threshold", "0.9", p.toString(), p.toString()));
    }

    @Test
    void badFilesExit2WithOneLineNamingTheFileAndWhatIsWrong() throws IOException {
        Calls calls = new Calls(APP, "main.x", logNormal(41, 300, 1_000_000, 0.2));
        Path good = profile("good.pb.gz", calls);
        byte[] goodBytes = Files.readAllBytes(good);
        Path missing = dir.resolve("missing.pb.gz");
        Path empty = write("empty.pb.gz", new byte[0]);
        Path text = write("notes.txt", "this is not a profile\n".getBytes(StandardCharsets.UTF_8));
        Path corrupt = write("corrupt.pb.gz", new byte[] {0x1f, (byte) 0x8b, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8});
        Path truncated = write("truncated.pb.gz", Arrays.copyOf(goodBytes, goodBytes.length / 2));
        Path cpu = write("cpu.pb.gz", SyntheticLatencyProfiles.cpuProfile());
        Path old = write("old.pb.gz", SyntheticLatencyProfiles.withoutLeNs(List.of(calls)));

        assertEquals(List.of(missing + ": no such file"), complaint(missing, good));
        assertEquals(List.of(empty + ": empty file"), complaint(good, empty));
        assertEquals(List.of(text + ": neither gzip nor a pprof profile"), complaint(text, good));
        assertEquals(List.of(cpu + ": not a latency profile: its sample types are samples/count, cpu/nanoseconds, "
                + "not calls/count and latency/nanoseconds"), complaint(good, cpu));
        assertEquals(List.of(old + ": its samples have no le_ns label: written by an older Loupe, whose le_us buckets "
                + "(powers of two) are too coarse for a verdict; compare profiles written by this version"),
                complaint(old, good));
        assertEquals(List.of(dir + ": cannot read: Is a directory"), complaint(good, dir));
        List<String> corruptLine = complaint(corrupt, good);
        assertEquals(1, corruptLine.size(), corruptLine.toString());
        assertTrue(corruptLine.getFirst().startsWith(corrupt + ": corrupt gzip data ("), corruptLine.toString());
        List<String> truncatedLine = complaint(good, truncated);
        assertEquals(List.of(truncated + ": corrupt gzip data (Unexpected end of ZLIB input stream)"), truncatedLine);
    }

    /** The stderr lines of a run that must exit 2 and print nothing on stdout, without the command's prefix. */
    private List<String> complaint(Path base, Path current) {
        Run r = run(base.toString(), current.toString());
        assertEquals(2, r.exit(), r.out() + r.err());
        assertEquals("", r.out());
        List<String> lines = r.err().lines().toList();
        assertTrue(lines.stream().allMatch(l -> l.startsWith("loupe latency-diff: ")), r.err());
        return lines.stream().map(l -> l.substring("loupe latency-diff: ".length())).toList();
    }

    /** A row's cells: names and calls exact, quantiles and ratios within 10 % of the true ones, "-" where a side has none. */
    private static void checkRow(String line, String verdict, Calls base, Calls current) {
        List<String> c = cells(line);
        Calls any = base != null ? base : current;
        assertEquals(List.of(verdict, any.function(), any.binary(), calls(base), calls(current)), c.subList(0, 5), line);
        checkDuration(c.get(5), base, 0.5, line);
        checkDuration(c.get(6), current, 0.5, line);
        checkDuration(c.get(7), base, 0.99, line);
        checkDuration(c.get(8), current, 0.99, line);
        double[] qs = {0.5, 0.9, 0.99};
        for (int i = 0; i < qs.length; i++) {
            if (base == null || current == null) {
                assertEquals("-", c.get(9 + i), line);
            } else {
                assertWithin10Percent(current.trueQuantile(qs[i]) / base.trueQuantile(qs[i]),
                        Double.parseDouble(c.get(9 + i)), "ratio at " + qs[i] + " in " + line);
            }
        }
    }

    private static String calls(Calls side) {
        return side == null ? "-" : Long.toString(side.nanos().length);
    }

    private static void checkDuration(String cell, Calls side, double q, String line) {
        if (side == null) {
            assertEquals("-", cell, line);
            return;
        }
        Matcher m = DURATION.matcher(cell);
        assertTrue(m.matches(), cell + " in " + line);
        double scale = switch (m.group(2)) {
            case "ns" -> 1;
            case "us" -> 1e3;
            case "ms" -> 1e6;
            default -> 1e9;
        };
        assertWithin10Percent(side.trueQuantile(q), Double.parseDouble(m.group(1)) * scale, "p" + q + " " + cell + " in " + line);
    }

    private static void assertWithin10Percent(double expected, double actual, String what) {
        assertTrue(Math.abs(actual - expected) <= 0.1 * expected, what + ": " + actual + ", true value " + expected);
    }

    private static List<String> cells(String line) {
        return spans(line).stream().map(s -> line.substring(s[0], s[1])).toList();
    }

    private static List<int[]> spans(String line) {
        List<int[]> out = new ArrayList<>();
        Matcher m = CELL.matcher(line);
        while (m.find()) {
            out.add(new int[] {m.start(), m.end()});
        }
        return out;
    }

    /** Fixed width: every line as long as the header; text columns start, number columns end, where the header's do. */
    private static void assertAligned(List<String> table) {
        List<int[]> header = spans(table.getFirst());
        for (String line : table) {
            List<int[]> cells = spans(line);
            assertEquals(table.getFirst().length(), line.length(), line);
            assertEquals(header.size(), cells.size(), line);
            for (int i = 0; i < header.size(); i++) {
                if (i < 3) {
                    assertEquals(header.get(i)[0], cells.get(i)[0], "column " + i + " of " + line);
                } else {
                    assertEquals(header.get(i)[1], cells.get(i)[1], "column " + i + " of " + line);
                }
            }
        }
    }
}
