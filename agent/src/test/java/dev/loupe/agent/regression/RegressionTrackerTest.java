package dev.loupe.agent.regression;

import dev.loupe.agent.logging.LogCapture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Baselines on an injected clock, no BPF: deploys, restarts of the agent and of the probed processes, window and
 * trailing slots, rollbacks and old processes, and the files. One record per minute, 200 calls each, lognormal
 * (sigma 0.5) around 2 ms, 3× slower for a slow build; window 10 minutes, min calls 200, threshold 1.2.
 */
class RegressionTrackerTest {
    static final FunctionKey F = new FunctionKey("/srv/shop", "main.checkout");
    static final RegressionTracker.Settings SETTINGS = new RegressionTracker.Settings(Duration.ofMinutes(10), 200, 1.2, Duration.ZERO);
    static final long MINUTE = 60_000;
    /** A whole minute (slots are aligned to the minute), plus 30 s: records fall mid-slot. */
    static final long T0 = 28_333_333L * MINUTE + 30_000;
    static final double MEDIAN = 2_000_000;

    @TempDir
    Path state;
    final AtomicLong clock = new AtomicLong(T0);

    Path dir() {
        return state.resolve("latency-baselines");
    }

    RegressionTracker open() {
        return RegressionTracker.open(dir(), SETTINGS, clock::get);
    }

    /** {@code minutes} records of 200 calls, one a minute (the clock moves a minute after each). */
    void run(RegressionTracker t, FunctionKey f, String build, int minutes, double slowdown, long seed) {
        for (int m = 0; m < minutes; m++) {
            t.record(f, build, Samples.histogram(Samples.lognormal(seed + m, 200, MEDIAN, 0.5, slowdown)));
            clock.addAndGet(MINUTE);
        }
    }

    static FunctionStatus status(List<FunctionStatus> all, FunctionKey f, BaselineKind kind) {
        List<FunctionStatus> found = all.stream().filter(s -> s.function().equals(f) && s.kind() == kind).toList();
        assertEquals(1, found.size(), all.toString());
        return found.getFirst();
    }

    @Test
    void aThreeTimesSlowerBuildRegressesAgainstThePreviousBuild() {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 60, 1, 1);
            run(t, F, "b2", 10, 3, 1_000);
            List<FunctionStatus> all = t.evaluate();
            assertEquals(2, all.size(), all.toString());
            FunctionStatus previous = status(all, F, BaselineKind.PREVIOUS_BUILD);
            assertEquals("b2", previous.buildId());
            assertEquals("b1", previous.baselineBuildId());
            assertEquals(RegressionVerdict.Outcome.REGRESSED, previous.verdict().outcome(), previous.verdict().reason());
            assertEquals(60 * 200, previous.verdict().baselineCalls()); // all of b1's hour
            // Evaluated a minute after the last record: the window is the 10 slots up to now, 9 of them recorded.
            assertEquals(9 * 200, previous.verdict().currentCalls());
            assertEquals(3, previous.verdict().ratioP50(), 0.3);
            // The new build's trailing history started empty: it holds only b2's first minute, out of the window now.
            FunctionStatus trailing = status(all, F, BaselineKind.TRAILING);
            assertEquals(List.of("b2", "b2"), List.of(trailing.buildId(), trailing.baselineBuildId()));
            assertEquals(200, trailing.verdict().baselineCalls());
            assertEquals(RegressionVerdict.Outcome.NOT_REGRESSED, trailing.verdict().outcome());
        }
    }

    @Test
    void anEquallyFastBuildDoesNotRegress() {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 60, 1, 1);
            run(t, F, "b2", 10, 1, 1_000);
            FunctionStatus previous = status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            assertEquals(RegressionVerdict.Outcome.NOT_REGRESSED, previous.verdict().outcome(), previous.verdict().reason());
            assertEquals(9 * 200, previous.verdict().currentCalls());
        }
    }

    @Test
    void aNewBuildsWarmUpIsLeftOutOfItsWindow() {
        RegressionTracker.Settings warm = new RegressionTracker.Settings(Duration.ofMinutes(10), 200, 1.2, Duration.ofMinutes(2));
        try (RegressionTracker t = RegressionTracker.open(dir(), warm, clock::get)) {
            run(t, F, "b1", 60, 1, 1);
            // b2's first two minutes are three times slower (a cold start), then as fast as b1.
            run(t, F, "b2", 2, 3, 1_000);
            FunctionStatus during = status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            assertEquals(RegressionVerdict.Outcome.TOO_FEW_CALLS, during.verdict().outcome(), during.verdict().reason());
            assertEquals(0, during.verdict().currentCalls());
            run(t, F, "b2", 5, 1, 2_000);
            FunctionStatus after = status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            assertEquals(RegressionVerdict.Outcome.NOT_REGRESSED, after.verdict().outcome(), after.verdict().reason());
            assertEquals(5 * 200, after.verdict().currentCalls(), "only the calls after the warm-up");
            assertEquals(1, after.verdict().ratioP50(), 0.1);
        }
        // Without the warm-up the same calls are a regression at p90: the cold start is in the window.
        clock.set(T0);
        Path other = state.resolve("no-warmup");
        try (RegressionTracker t = RegressionTracker.open(other, SETTINGS, clock::get)) {
            run(t, F, "b1", 60, 1, 1);
            run(t, F, "b2", 2, 3, 1_000);
            run(t, F, "b2", 5, 1, 2_000);
            FunctionStatus after = status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            assertEquals(RegressionVerdict.Outcome.REGRESSED, after.verdict().outcome(), after.verdict().reason());
        }
    }

    @Test
    void anAgentRestartKeepsBaselinesAndVerdicts() {
        List<FunctionStatus> before;
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 60, 1, 1);
            run(t, F, "b2", 10, 3, 1_000);
            before = t.evaluate();
        }
        try (RegressionTracker t = open()) {
            assertEquals(before, t.evaluate());
            // The same build after the restart is not a deploy: it goes on in the same window and history.
            run(t, F, "b2", 1, 3, 2_000);
            FunctionStatus previous = status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            assertEquals("b1", previous.baselineBuildId());
            assertEquals(60 * 200, previous.verdict().baselineCalls());
            assertEquals(9 * 200, previous.verdict().currentCalls());
        }
    }

    @Test
    void aDeployWhileTheAgentWasDownTakesThePersistedBuildAsPrevious() {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 60, 1, 1);
        }
        clock.addAndGet(90 * MINUTE); // down for an hour and a half, the binary replaced meanwhile
        try (RegressionTracker t = open()) {
            run(t, F, "b2", 10, 3, 1_000);
            FunctionStatus previous = status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            assertEquals(List.of("b2", "b1"), List.of(previous.buildId(), previous.baselineBuildId()));
            assertEquals(60 * 200, previous.verdict().baselineCalls());
            assertEquals(RegressionVerdict.Outcome.REGRESSED, previous.verdict().outcome(), previous.verdict().reason());
        }
    }

    @Test
    void aProcessRestartWithTheSameBuildIsNotADeploy() {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 30, 1, 1);
            clock.addAndGet(5 * MINUTE); // the process restarts: no calls for a while, then the same build id
            run(t, F, "b1", 10, 1, 1_000);
            List<FunctionStatus> all = t.evaluate();
            assertEquals(List.of(BaselineKind.TRAILING), all.stream().map(FunctionStatus::kind).toList());
            assertEquals(30 * 200 + 200, all.getFirst().verdict().baselineCalls()); // the window holds the last 9 records
        }
    }

    @Test
    void windowSlotsExpireIntoTheTrailingHistory() {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 1, 1, 1); // one record at T0, in the slot [T0 - 30 s, T0 + 30 s)
            clock.set(T0 + 9 * MINUTE); // the slot is the window's oldest
            FunctionStatus s = status(t.evaluate(), F, BaselineKind.TRAILING);
            assertEquals(List.of(200L, 0L), List.of(s.verdict().currentCalls(), s.verdict().baselineCalls()));
            clock.set(T0 + 9 * MINUTE + 29_999);
            s = status(t.evaluate(), F, BaselineKind.TRAILING);
            assertEquals(List.of(200L, 0L), List.of(s.verdict().currentCalls(), s.verdict().baselineCalls()));
            clock.set(T0 + 9 * MINUTE + 30_000); // a new slot starts: the oldest leaves the window
            s = status(t.evaluate(), F, BaselineKind.TRAILING);
            assertEquals(List.of(0L, 200L), List.of(s.verdict().currentCalls(), s.verdict().baselineCalls()));
        }
    }

    @Test
    void theTrailingBaselineExcludesTheWindowAndEndsAfterItsSpan() {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 20, 1, 1);
            FunctionStatus s = status(t.evaluate(), F, BaselineKind.TRAILING);
            // 20 records; evaluated a minute after the last: 9 in the window, 11 behind it.
            assertEquals(List.of(9 * 200L, 11 * 200L), List.of(s.verdict().currentCalls(), s.verdict().baselineCalls()));
            assertEquals(RegressionVerdict.Outcome.NOT_REGRESSED, s.verdict().outcome(), s.verdict().reason());
            // Calls go on once an hour; the first 20 minutes leave the trailing span once their hourly slot ends
            // 24 h before the window: between 24 and 25 hours after the window left them.
            for (int hour = 1; hour <= 26; hour++) {
                clock.set(T0 + hour * 60 * MINUTE);
                run(t, F, "b1", 1, 1, 100 + hour);
            }
            s = status(t.evaluate(), F, BaselineKind.TRAILING);
            // The 26 hourly records: 1 in the window, 24 behind it; the first 20 minutes and hour 1 are gone, their
            // hourly slots having ended more than 24 h before the window.
            assertEquals(List.of(200L, 24 * 200L), List.of(s.verdict().currentCalls(), s.verdict().baselineCalls()));
        }
    }

    @Test
    void anIdleFunctionKeepsItsLastSpanOfActivity() {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 60, 1, 1);
            clock.addAndGet(3 * 24 * 60 * MINUTE); // idle over a long weekend
            FunctionStatus s = status(t.evaluate(), F, BaselineKind.TRAILING);
            assertEquals(List.of(0L, 60 * 200L), List.of(s.verdict().currentCalls(), s.verdict().baselineCalls()));
            run(t, F, "b2", 10, 3, 1_000); // Monday's deploy still has Friday's build to compare with
            FunctionStatus previous = status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            assertEquals(60 * 200, previous.verdict().baselineCalls());
            assertEquals(RegressionVerdict.Outcome.REGRESSED, previous.verdict().outcome());
        }
    }

    @Test
    void tooFewCallsIsNoVerdict() {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 60, 1, 1);
            for (int m = 0; m < 10; m++) { // 10 calls a minute, 10 times slower: 90 in the window
                t.record(F, "b2", Samples.histogram(Samples.lognormal(500 + m, 10, MEDIAN, 0.5, 10)));
                clock.addAndGet(MINUTE);
            }
            FunctionStatus previous = status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            assertEquals(RegressionVerdict.Outcome.TOO_FEW_CALLS, previous.verdict().outcome());
            assertEquals(90, previous.verdict().currentCalls());
            assertTrue(previous.verdict().ratioP50() > 5, previous.verdict().toString());
            assertFalse(previous.verdict().regressed());
        }
    }

    @Test
    void oldProcessesOfThePreviousBuildFeedItsBaselineWhileTheNewOneRuns() {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 60, 1, 1);
            for (int m = 0; m < 10; m++) { // both builds each minute; the old one listed after the new one
                t.record(F, "b2", Samples.histogram(Samples.lognormal(1_000 + m, 200, MEDIAN, 0.5, 3)));
                t.record(F, "b1", Samples.histogram(Samples.lognormal(2_000 + m, 50, MEDIAN, 0.5, 1)));
                clock.addAndGet(MINUTE);
            }
            FunctionStatus previous = status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            assertEquals(List.of("b2", "b1"), List.of(previous.buildId(), previous.baselineBuildId()));
            assertEquals(60 * 200 + 10 * 50, previous.verdict().baselineCalls());
            assertEquals(9 * 200, previous.verdict().currentCalls());
        }
    }

    @Test
    void aRollbackMakesThePreviousBuildCurrentOnceTheNewOneIsGone() {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 60, 1, 1);
            run(t, F, "b2", 20, 3, 1_000);
            // b2 stops; b1 is back. Within the hold (the window) its calls are taken for old processes...
            t.record(F, "b1", Samples.histogram(Samples.lognormal(3_000, 200, MEDIAN, 0.5, 1)));
            FunctionStatus s = status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            assertEquals(List.of("b2", "b1"), List.of(s.buildId(), s.baselineBuildId()));
            // ...after it, b1 is current again and b2, with its 20 minutes, is the previous build.
            clock.addAndGet(10 * MINUTE);
            run(t, F, "b1", 10, 1, 4_000);
            s = status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            assertEquals(List.of("b1", "b2"), List.of(s.buildId(), s.baselineBuildId()));
            assertEquals(20 * 200, s.verdict().baselineCalls());
            assertEquals(9 * 200, s.verdict().currentCalls());
            assertEquals(RegressionVerdict.Outcome.NOT_REGRESSED, s.verdict().outcome()); // faster is not slower
        }
    }

    @Test
    void aSecondDeployReplacesThePreviousBaseline() {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 30, 1, 1);
            run(t, F, "b2", 20, 1, 1_000);
            run(t, F, "b3", 10, 1, 2_000);
            FunctionStatus s = status(t.evaluate(), F, BaselineKind.PREVIOUS_BUILD);
            assertEquals(List.of("b3", "b2"), List.of(s.buildId(), s.baselineBuildId()));
            assertEquals(20 * 200, s.verdict().baselineCalls());
        }
    }

    @Test
    void aCorruptFileIsSetAsideOnceAndItsFunctionStartsFresh() throws IOException {
        FunctionKey other = new FunctionKey("/srv/shop", "main.search");
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 30, 1, 1);
            run(t, other, "b1", 30, 1, 100);
        }
        Path file = dir().resolve(BaselineStore.fileName(F));
        byte[] bytes = Files.readAllBytes(file);
        bytes[bytes.length / 2] ^= 0x40;
        Files.write(file, bytes);
        try (LogCapture log = new LogCapture(BaselineStore.class.getName()); RegressionTracker t = open()) {
            List<FunctionStatus> all = t.evaluate();
            assertEquals(List.of(other), all.stream().map(FunctionStatus::function).toList());
            assertFalse(Files.exists(file));
            assertArrayEquals(bytes, Files.readAllBytes(dir().resolve(file.getFileName() + ".unreadable")));
            assertEquals(1, log.lines().size(), log.text());
            assertTrue(log.text().contains(file + " is unreadable (checksum mismatch (damaged or partly written)); set aside as "
                    + file.getFileName() + ".unreadable"), log.text());
            run(t, F, "b2", 10, 1, 1_000); // starts fresh: a first build, not a deploy
            assertEquals(List.of(BaselineKind.TRAILING), t.evaluate().stream().filter(s -> s.function().equals(F))
                    .map(FunctionStatus::kind).toList());
        }
        assertTrue(Files.exists(file)); // written again at close
    }

    @Test
    void filesOfANewerFormatOrAnotherFunctionAndTempFilesDoNotStopTheStart() throws IOException {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 30, 1, 1);
        }
        Path file = dir().resolve(BaselineStore.fileName(F));
        Path renamed = dir().resolve("0123456789abcdef0123456789abcdef.baseline");
        Files.copy(file, renamed);
        Path newer = dir().resolve("ffffffffffffffffffffffffffffffff.baseline");
        Files.write(newer, withChecksum("LOUPEBL\n\u0002later".getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
        Files.writeString(dir().resolve(BaselineStore.fileName(F) + ".tmp"), "half written");
        try (LogCapture log = new LogCapture(BaselineStore.class.getName()); RegressionTracker t = open()) {
            assertEquals(30 * 200 - 9 * 200, status(t.evaluate(), F, BaselineKind.TRAILING).verdict().baselineCalls());
            assertEquals(2, log.lines().size(), log.text());
            assertTrue(log.text().contains(renamed + " is unreadable (holds FunctionKey[binary=/srv/shop, "
                    + "function=main.checkout], which is not the function its name says)"), log.text());
            assertTrue(log.text().contains(newer + " is unreadable (format version 2, this agent reads 1)"), log.text());
        }
        try (var files = Files.list(dir())) {
            assertEquals(List.of("0123456789abcdef0123456789abcdef.baseline.unreadable", BaselineStore.fileName(F),
                    "ffffffffffffffffffffffffffffffff.baseline.unreadable"),
                    files.map(p -> p.getFileName().toString()).sorted().toList());
        }
    }

    static byte[] withChecksum(byte[] body) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(body);
        return java.nio.ByteBuffer.allocate(body.length + 4).put(body).putInt((int) crc.getValue()).array();
    }

    @Test
    void persistWritesADeployAtOnceAndOtherChangesAtMostEveryFiveMinutes() throws IOException {
        Path file = dir().resolve(BaselineStore.fileName(F));
        try (RegressionTracker t = open()) {
            t.record(F, "b1", Samples.histogram(Samples.lognormal(1, 200, MEDIAN, 0.5, 1)));
            // Persisted every 10 s: written once within five minutes, at the function's phase.
            while (!Files.exists(file) && clock.get() < T0 + 5 * MINUTE) {
                clock.addAndGet(10_000);
                t.persist();
            }
            assertTrue(Files.exists(file));
            long written = clock.get();
            Files.delete(file);
            t.persist(); // nothing changed since: not written again
            assertFalse(Files.exists(file));
            t.record(F, "b1", Samples.histogram(Samples.lognormal(2, 200, MEDIAN, 0.5, 1)));
            clock.set(written + 5 * MINUTE - 1);
            t.persist(); // changed, but written less than five minutes ago
            assertFalse(Files.exists(file));
            clock.set(written + 5 * MINUTE);
            t.persist();
            assertTrue(Files.exists(file));
            Files.delete(file);
            t.record(F, "b2", Samples.histogram(Samples.lognormal(3, 200, MEDIAN, 0.5, 1)));
            t.persist(); // a deploy: at once
            FunctionBaselines read = BaselineFile.decode(Files.readAllBytes(file), new Interner<>(16));
            assertEquals(List.of("b2", "b1"), List.of(read.currentBuild(), read.previousBuild()));
        }
    }

    @Test
    void aFunctionIdleForThirtyDaysIsForgottenWithItsFile() {
        Path file = dir().resolve(BaselineStore.fileName(F));
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 10, 1, 1);
            t.close();
            assertTrue(Files.exists(file));
            clock.set(T0 + 9 * MINUTE + RegressionTracker.FORGET_AFTER.toMillis()); // 30 days after the last call
            t.persist();
            assertTrue(Files.exists(file));
            clock.addAndGet(1);
            t.persist();
            assertFalse(Files.exists(file));
            assertEquals(List.of(), t.evaluate());
        }
    }

    @Test
    void aClockGoingBackHoldsTimeAtItsLatest() {
        try (RegressionTracker t = open()) {
            run(t, F, "b1", 20, 1, 1);
            clock.addAndGet(-60 * MINUTE);
            run(t, F, "b1", 5, 1, 100); // all 5 into the latest slot, none lost
            clock.set(T0 + 20 * MINUTE);
            FunctionStatus s = status(t.evaluate(), F, BaselineKind.TRAILING);
            assertEquals(25 * 200, s.verdict().currentCalls() + s.verdict().baselineCalls());
            assertEquals((9 + 5) * 200, s.verdict().currentCalls()); // 9 slots, and the 5 held in the latest
        }
    }
}
