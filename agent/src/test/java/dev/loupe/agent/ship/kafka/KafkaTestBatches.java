package dev.loupe.agent.ship.kafka;

import com.google.protobuf.ByteString;
import dev.loupe.agent.ship.SpooledBatch;
import dev.loupe.pprof.Label;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.ProfileBuilder;
import dev.loupe.pprof.parca.LabelSet;
import dev.loupe.pprof.parca.RawProfileSeries;
import dev.loupe.pprof.parca.RawSample;
import dev.loupe.pprof.parca.WriteRawRequest;
import dev.loupe.pprof.proto.Profile;

import java.util.List;
import java.util.Map;

/**
 * Batches as the agent spools them for Kafka: one WriteRawRequest per interval, one series per process
 * (labels __name__, node, pid, comm, executable, and seq = the interval number so receivers can check
 * order), raw_profile a gzipped pprof Parca accepts.
 */
public final class KafkaTestBatches {
    public static final long START = 1_763_000_000_000_000_000L;
    public static final long INTERVAL = 10_000_000_000L;
    public static final String NODE = "test-node";

    private KafkaTestBatches() {}

    public static long start(long interval) {
        return START + interval * INTERVAL;
    }

    public static Profile profile(long interval, int pid) {
        ProfileBuilder b = new ProfileBuilder(10_101_010L, start(interval));
        long mapping = b.mapping(0x400000, 0x500000, 0, "/usr/bin/target", "abcdef0123", true);
        // Source lines (issue 28): an inlined call, files, line numbers and start lines, which the Kafka path must carry.
        long leaf = b.locationWithLines(mapping, 0x401000, List.of(new ProfileBuilder.SourceLine("inlined", "target.h", 12, 10),
                new ProfileBuilder.SourceLine("leaf", "target.c", 30, 25)));
        long root = b.location(mapping, 0x402000, "main", "target.c");
        b.addSample(new long[] {leaf, root}, 3 + interval, List.of(Label.num("pid", pid), Label.str("comm", "target")));
        return b.build(start(interval + 1));
    }

    public static RawProfileSeries series(long interval, int pid, byte[] rawProfile) {
        return RawProfileSeries.newBuilder()
                .setLabels(LabelSet.newBuilder()
                        .addLabels(label("__name__", "parca_agent_cpu"))
                        .addLabels(label("node", NODE))
                        .addLabels(label("pid", Integer.toString(pid)))
                        .addLabels(label("comm", "target"))
                        .addLabels(label("executable", "/usr/bin/target"))
                        .addLabels(label("seq", Long.toString(interval))))
                .addSamples(RawSample.newBuilder().setRawProfile(ByteString.copyFrom(rawProfile)))
                .build();
    }

    /** The interval's request: one series per pid. */
    public static WriteRawRequest request(long interval, List<Integer> pids) {
        WriteRawRequest.Builder r = WriteRawRequest.newBuilder().setNormalized(true);
        for (int pid : pids) {
            r.addSeries(series(interval, pid, PprofFiles.gzip(profile(interval, pid))));
        }
        return r.build();
    }

    public static Map<String, String> attributes(long interval) {
        return Map.of("profile_type", "cpu", "start_nanos", Long.toString(start(interval)),
                "end_nanos", Long.toString(start(interval + 1)), "node", NODE);
    }

    public static SpooledBatch batch(long sequence, long interval, List<Integer> pids) {
        return new SpooledBatch(sequence, attributes(interval), request(interval, pids).toByteArray());
    }

    public static dev.loupe.pprof.parca.Label label(String name, String value) {
        return dev.loupe.pprof.parca.Label.newBuilder().setName(name).setValue(value).build();
    }

    public static String labelOf(RawProfileSeries s, String name) {
        for (var l : s.getLabels().getLabelsList()) {
            if (l.getName().equals(name)) {
                return l.getValue();
            }
        }
        throw new AssertionError("no label " + name + " in " + s.getLabels());
    }
}
