package dev.loupe.agent.latencydiff;

import dev.loupe.agent.regression.FineHistogram;
import dev.loupe.agent.regression.FunctionKey;
import dev.loupe.pprof.Label;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.ProfileBuilder;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Latency profiles read back into one fine histogram per (binary, function), from their le_ns labels. */
class LatencyProfileReaderTest {
    private static final List<ProfileBuilder.SampleType> TYPES = List.of(
            new ProfileBuilder.SampleType("calls", "count"), new ProfileBuilder.SampleType("latency", "nanoseconds"));

    private final ProfileBuilder builder = new ProfileBuilder(1_000, TYPES, 0, 1);

    private void sample(String binary, String function, int pid, String caller, long leNs, long calls) {
        long mapping = builder.mapping(0, 0x1000_0000, 0, binary, null, true);
        long leaf = builder.location(mapping, 0x1000 + function.hashCode() % 256, function, null);
        long parent = builder.location(mapping, 0x9000, caller, null);
        List<Label> labels = new ArrayList<>(List.of(Label.str("function", function), Label.str("binary", binary),
                Label.num("pid", pid), Label.str("comm", "app"), Label.num("le_us", 1024, "microseconds")));
        if (leNs != 0) {
            labels.add(Label.num("le_ns", leNs, "nanoseconds"));
        }
        builder.addSample(new long[] {leaf, parent}, new long[] {calls, calls * Math.max(1, leNs / 2)}, labels);
    }

    private Map<FunctionKey, FineHistogram> read() throws LatencyProfileReader.BadProfile {
        return LatencyProfileReader.histograms(LatencyProfileReader.parse(PprofFiles.gzip(builder.build(2_000))));
    }

    private String problem() {
        return assertThrows(LatencyProfileReader.BadProfile.class, this::read).getMessage();
    }

    @Test
    void callsAreSummedPerBinaryAndFunctionOverProcessesAndCallersIntoTheBucketLeNsBounds() throws Exception {
        int b = FineHistogram.bucketOf(1_000_000);
        long le = FineHistogram.upperBound(b);
        sample("/srv/app", "main.work", 1, "main.a", le, 5);
        sample("/srv/app", "main.work", 2, "main.b", le, 7);
        sample("/srv/app", "main.work", 2, "main.b", Long.MAX_VALUE, 2);
        sample("/srv/other", "main.work", 3, "main.a", FineHistogram.upperBound(0), 4);

        Map<FunctionKey, FineHistogram> read = read();

        FineHistogram app = new FineHistogram();
        app.addToBucket(b, 12);
        app.addToBucket(FineHistogram.bucketOf(Long.MAX_VALUE), 2);
        FineHistogram other = new FineHistogram();
        other.addToBucket(0, 4);
        assertEquals(Map.of(new FunctionKey("/srv/app", "main.work"), app, new FunctionKey("/srv/other", "main.work"), other),
                read);
    }

    @Test
    void aProfileWithoutSamplesHasNoFunctions() throws Exception {
        assertEquals(Map.of(), read());
    }

    @Test
    void aRawProfileIsReadLikeAGzippedOne() throws Exception {
        sample("/srv/app", "main.work", 1, "main.a", FineHistogram.upperBound(3), 9);
        byte[] raw = builder.build(2_000).toByteArray();

        Map<FunctionKey, FineHistogram> read = LatencyProfileReader.histograms(LatencyProfileReader.parse(raw));

        assertEquals(9, read.get(new FunctionKey("/srv/app", "main.work")).totalCount());
    }

    @Test
    void someSamplesWithoutLeNsAreCorruption() {
        sample("/srv/app", "main.work", 1, "main.a", FineHistogram.upperBound(3), 9);
        sample("/srv/app", "main.work", 1, "main.a", 0, 9);

        assertEquals("corrupt: 1 of 2 samples have no le_ns label", problem());
    }

    @Test
    void aNonPositiveLeNsIsCorruption() {
        sample("/srv/app", "main.work", 1, "main.a", -5, 9);

        assertEquals("corrupt: sample 0 (main.work) has 9 calls at le_ns -5", problem());
    }

    @Test
    void aSampleWithoutFunctionIsNotALatencyProfile() {
        long m = builder.mapping(0, 0x1000, 0, "/srv/app", null, true);
        builder.addSample(new long[] {builder.location(m, 0x10, "f", null)}, new long[] {1, 1},
                List.of(Label.str("binary", "/srv/app"), Label.num("le_ns", 1024)));

        assertEquals("not a latency profile: sample 0 has no function and binary labels", problem());
    }
}
