package dev.loupe.agent.ship;

import dev.loupe.pprof.Label;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.ProfileBuilder;
import dev.loupe.pprof.parca.LabelSet;
import dev.loupe.pprof.parca.RawProfileSeries;
import dev.loupe.pprof.parca.RawSample;
import dev.loupe.pprof.parca.WriteRawRequest;
import dev.loupe.pprof.proto.Profile;

import java.util.List;

/** WriteRawRequests as the agent will send them: one series, a gzipped pprof, a sequence label. */
final class TestBatches {
    static final long START = 1_763_000_000_000_000_000L;
    static final long PERIOD = 10_101_010L;

    private TestBatches() {}

    static Profile profile(long index) {
        ProfileBuilder b = new ProfileBuilder(PERIOD, START + index * 10_000_000_000L);
        long mapping = b.mapping(0x400000, 0x500000, 0, "/usr/bin/target", "abcdef0123", true);
        long leaf = b.location(mapping, 0x401000, "leaf", "target.c");
        long root = b.location(mapping, 0x402000, "main", "target.c");
        b.addSample(new long[] {leaf, root}, 3 + index, List.of(Label.num("pid", 42), Label.str("comm", "target")));
        return b.build(START + (index + 1) * 10_000_000_000L);
    }

    /** A request Parca accepts; its series carries {@code seq=<index>} so the receiver can check order. */
    static WriteRawRequest request(long index) {
        return WriteRawRequest.newBuilder()
                .addSeries(RawProfileSeries.newBuilder()
                        .setLabels(LabelSet.newBuilder()
                                .addLabels(label("__name__", "parca_agent_cpu"))
                                .addLabels(label("node", "test-node"))
                                .addLabels(label("pid", "42"))
                                .addLabels(label("seq", Long.toString(index))))
                        .addSamples(RawSample.newBuilder()
                                .setRawProfile(com.google.protobuf.ByteString.copyFrom(PprofFiles.gzip(profile(index))))))
                .build();
    }

    static byte[] bytes(long index) {
        return request(index).toByteArray();
    }

    static dev.loupe.pprof.parca.Label label(String name, String value) {
        return dev.loupe.pprof.parca.Label.newBuilder().setName(name).setValue(value).build();
    }

    /** The seq label of the first series. */
    static long seqOf(WriteRawRequest r) {
        for (var l : r.getSeries(0).getLabels().getLabelsList()) {
            if (l.getName().equals("seq")) {
                return Long.parseLong(l.getValue());
            }
        }
        throw new AssertionError("no seq label in " + r);
    }
}
