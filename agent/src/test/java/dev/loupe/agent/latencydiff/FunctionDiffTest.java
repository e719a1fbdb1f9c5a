package dev.loupe.agent.latencydiff;

import dev.loupe.agent.regression.FineHistogram;
import dev.loupe.agent.regression.FunctionKey;
import dev.loupe.agent.regression.LatencyComparison;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

class FunctionDiffTest {
    /** Rows by status, then function, then binary (not FunctionKey's own binary-first order): one function's binaries together. */
    @Test
    void rowsAreListedByStatusThenFunctionThenBinary() {
        FineHistogram h = new FineHistogram();
        Map<FunctionKey, FineHistogram> base = Map.of(new FunctionKey("/srv/b", "main.a"), h, new FunctionKey("/srv/a", "main.b"), h,
                new FunctionKey("/srv/a", "main.a"), h);
        Map<FunctionKey, FineHistogram> current = Map.of(new FunctionKey("/srv/a", "main.z"), h);
        List<String> rows = FunctionDiff.compare(base, current, LatencyComparison.defaults()).stream()
                .map(d -> d.status() + " " + d.key().function() + " " + d.key().binary()).toList();
        assertEquals(List.of("ONLY_IN_BASE main.a /srv/a", "ONLY_IN_BASE main.a /srv/b", "ONLY_IN_BASE main.b /srv/a",
                "ONLY_IN_CURRENT main.z /srv/a"), rows);
    }
}
