package dev.loupe.unwinder.fuzz;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.List;

/**
 * The unwinder's fuzz targets ({@link FuzzTargets}): each one's kept inputs replayed, and a short Jazzer run of
 * each. {@code ./loupe fuzz SECONDS} runs the same test with {@code -Dloupe.fuzz.seconds}.
 */
class FuzzTargetsTest {
    static List<FuzzTargets.Target> targets() {
        return FuzzTargets.of("unwinder");
    }

    @ParameterizedTest(name = "{0}", allowZeroInvocations = true)
    @MethodSource("targets")
    void keptInputsReplay(FuzzTargets.Target target) throws Exception {
        FuzzSuite.replayKept(target);
    }

    @ParameterizedTest(name = "{0}", allowZeroInvocations = true)
    @MethodSource("targets")
    void jazzerFindsNothing(FuzzTargets.Target target, @TempDir Path tmp) throws Exception {
        FuzzSuite.jazzerRun(target, tmp);
    }

    @AfterAll
    static void total() {
        FuzzSuite.printTotal("unwinder");
    }
}
