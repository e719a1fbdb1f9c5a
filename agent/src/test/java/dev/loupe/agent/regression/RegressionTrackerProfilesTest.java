package dev.loupe.agent.regression;

import dev.loupe.agent.regression.IntervalProfiles.Group;
import dev.loupe.pprof.proto.Profile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static dev.loupe.agent.regression.RegressionTrackerTest.F;
import static dev.loupe.agent.regression.RegressionTrackerTest.MINUTE;
import static dev.loupe.agent.regression.RegressionTrackerTest.SETTINGS;
import static dev.loupe.agent.regression.RegressionTrackerTest.T0;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The baseline and window latency profiles: merged by stack across processes, per build, capped. */
class RegressionTrackerProfilesTest {
    private static final List<String> HANDLER = List.of("main.handler", "net/http.serve");
    private static final String LEAF = "/srv/shop:main.checkout";
    private static final String VIA_HANDLER = LEAF + "</usr/lib/libserve.so:main.handler</usr/lib/libserve.so:net/http.serve";
    private static final String VIA_BATCH = LEAF + "</usr/lib/libserve.so:main.batch";

    @TempDir
    Path state;
    final AtomicLong clock = new AtomicLong(T0);

    RegressionTracker open(RegressionTracker.Settings settings) {
        return RegressionTracker.open(state.resolve("latency-baselines"), settings, clock::get);
    }

    static FineHistogram calls(long n) {
        return Samples.histogram(Samples.lognormal(n, (int) n, 2_000_000, 0.5, 1));
    }

    /** Two processes (other pids, goids, comms, library addresses) with the same stack and bucket, and more. */
    static Profile interval(String build, long scale) {
        return IntervalProfiles.of(List.of(
                new Group(F, build, 100, 1, "shop", HANDLER, 2048, 2_097_152, 3 * scale, 6_000_000 * scale),
                new Group(F, build, 200, 7, "shop-2", HANDLER, 2048, 2_097_152, 2 * scale, 4_100_000 * scale),
                new Group(F, build, 100, 2, "shop", HANDLER, 4096, 4_194_304, scale, 3_000_000 * scale),
                new Group(F, build, 100, 3, "shop", List.of("main.batch"), 2048, 1_900_000, 4 * scale, 8_000_000 * scale),
                // A function with no recorded calls, and a build with none: skipped.
                new Group(new FunctionKey("/srv/shop", "main.idle"), build, 100, 4, "shop", List.of(), 2048, 2_097_152, 9, 9),
                new Group(F, "b9", 100, 5, "shop", HANDLER, 2048, 2_097_152, 9, 9)));
    }

    static String labels(String build, long leUs, long leNs) {
        return " [function=main.checkout binary=/srv/shop build_id=" + build + " le_us=" + leUs + " le_ns=" + leNs + "]";
    }

    /** {@link #interval}'s samples of {@code build} merged, each {@code times} over. */
    static Map<String, List<Long>> merged(String build, long times) {
        return Map.of(
                VIA_HANDLER + labels(build, 2048, 2_097_152), List.of(5 * times, 10_100_000 * times),
                VIA_HANDLER + labels(build, 4096, 4_194_304), List.of(times, 3_000_000 * times),
                VIA_BATCH + labels(build, 2048, 1_900_000), List.of(4 * times, 8_000_000 * times));
    }

    @Test
    void theWindowMergesProcessesByStackAndDropsPidGoidAndComm() {
        try (RegressionTracker t = open(SETTINGS)) {
            t.record(F, "b1", calls(200));
            t.recordProfile(interval("b1", 1));
            clock.addAndGet(MINUTE);
            t.record(F, "b1", calls(200));
            t.recordProfile(interval("b1", 10));
            Profile window = t.currentWindowProfile().orElseThrow();
            assertEquals(merged("b1", 11), IntervalProfiles.samples(window));
            Profile in = interval("b1", 1);
            assertEquals(types(in), types(window));
            assertEquals(List.of("calls", "count", "1"), List.of(window.getStringTable((int) window.getPeriodType().getType()),
                    window.getStringTable((int) window.getPeriodType().getUnit()), Long.toString(window.getPeriod())));
            assertEquals((T0 - 30_000 - 8 * MINUTE) * 1_000_000, window.getTimeNanos()); // the window's first slot
            assertEquals((9 * MINUTE + 30_000) * 1_000_000, window.getDurationNanos()); // up to now
            // Nothing has left the window yet, and there was no deploy.
            assertEquals(Map.of(), IntervalProfiles.samples(t.baselineProfile(BaselineKind.TRAILING).orElseThrow()));
            assertTrue(t.baselineProfile(BaselineKind.PREVIOUS_BUILD).isEmpty());
        }
    }

    @Test
    void samplesMoveToTheTrailingProfileAndADeployMakesThemThePreviousBuildsProfile() {
        try (RegressionTracker t = open(SETTINGS)) {
            t.record(F, "b1", calls(200));
            t.recordProfile(interval("b1", 1));
            clock.addAndGet(10 * MINUTE);
            assertEquals(Map.of(), IntervalProfiles.samples(t.currentWindowProfile().orElseThrow()));
            assertEquals(merged("b1", 1), IntervalProfiles.samples(t.baselineProfile(BaselineKind.TRAILING).orElseThrow()));
            t.record(F, "b1", calls(200));
            t.recordProfile(interval("b1", 2));
            // Deploy: b2's processes and b1's old ones in the same interval.
            clock.addAndGet(MINUTE);
            t.record(F, "b2", calls(200));
            t.record(F, "b1", calls(50));
            t.recordProfile(IntervalProfiles.of(List.of(
                    new Group(F, "b2", 300, 1, "shop", HANDLER, 8192, 8_388_608, 7, 50_000_000),
                    new Group(F, "b1", 100, 9, "shop", HANDLER, 2048, 2_097_152, 1, 2_000_000))));
            Map<String, List<Long>> previous = new java.util.TreeMap<>(merged("b1", 3));
            previous.put(VIA_HANDLER + labels("b1", 2048, 2_097_152), List.of(5L * 3 + 1, 10_100_000L * 3 + 2_000_000));
            assertEquals(previous, IntervalProfiles.samples(t.baselineProfile(BaselineKind.PREVIOUS_BUILD).orElseThrow()));
            assertEquals(Map.of(VIA_HANDLER + labels("b2", 8192, 8_388_608), List.of(7L, 50_000_000L)),
                    IntervalProfiles.samples(t.currentWindowProfile().orElseThrow()));
            assertEquals(Map.of(), IntervalProfiles.samples(t.baselineProfile(BaselineKind.TRAILING).orElseThrow()));
            // The profiles survive an agent restart.
            t.close();
            try (RegressionTracker again = open(SETTINGS)) {
                assertEquals(previous, IntervalProfiles.samples(again.baselineProfile(BaselineKind.PREVIOUS_BUILD).orElseThrow()));
                assertEquals(Map.of(VIA_HANDLER + labels("b2", 8192, 8_388_608), List.of(7L, 50_000_000L)),
                        IntervalProfiles.samples(again.currentWindowProfile().orElseThrow()));
            }
        }
    }

    @Test
    void samplesBeyondTheCapAreLeftOutAndCounted() {
        RegressionTracker.Settings capped = new RegressionTracker.Settings(Duration.ofMinutes(10), 200, 1.2,
                Duration.ZERO, Duration.ofHours(24), 2);
        try (RegressionTracker t = open(capped)) {
            t.record(F, "b1", calls(200));
            t.recordProfile(interval("b1", 1)); // 3 merged samples, room for 2: the batch one left out
            assertEquals(1, t.droppedProfileSamples());
            clock.addAndGet(MINUTE);
            t.record(F, "b1", calls(200));
            // A new slot: its samples are new ones too, and none fits (the two processes' samples each counted).
            t.recordProfile(interval("b1", 1));
            assertEquals(1 + 4, t.droppedProfileSamples());
            Profile window = t.currentWindowProfile().orElseThrow();
            Map<String, List<Long>> kept = new java.util.HashMap<>(merged("b1", 1));
            kept.remove(VIA_BATCH + labels("b1", 2048, 1_900_000));
            assertEquals(kept, IntervalProfiles.samples(window));
            assertEquals(List.of("latency current window: the current builds' calls over the last 10m; one sample per"
                            + " function, build, caller stack and bucket (pid, goid and comm merged)",
                    "5 interval profile samples (14 calls) left out of baselines and windows since start: more than 2"
                            + " samples (the verdicts count every call)"),
                    window.getCommentList().stream().map(i -> window.getStringTable(i.intValue())).toList());
        }
    }

    private static List<String> types(Profile p) {
        return p.getSampleTypeList().stream()
                .map(t -> p.getStringTable((int) t.getType()) + "/" + p.getStringTable((int) t.getUnit())).toList();
    }
}
