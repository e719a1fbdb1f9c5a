package dev.loupe.agent.latency;

import dev.loupe.bpf.LatencyHistogram;
import dev.loupe.pprof.proto.Function;
import dev.loupe.pprof.proto.Label;
import dev.loupe.pprof.proto.Line;
import dev.loupe.pprof.proto.Location;
import dev.loupe.pprof.proto.Mapping;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import dev.loupe.pprof.proto.ValueType;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The latency profile of one window, from the kernel's per-function histograms: sample types
 * {@code calls/count} and {@code latency/nanoseconds}, one location per probed function (in a mapping named
 * after its binary), labels {@code function} and {@code binary}.
 *
 * <p>The kernel keeps, per function, a count per bucket and one exact sum. So each non-empty bucket is a
 * sample of {@code calls} with the numeric label {@code le_us} (the bucket's upper bound, 2^k µs;
 * {@value #INF_LE_US} for the +Inf bucket), latency 0; and each function with calls has one more sample,
 * without {@code le_us}, carrying the exact total {@code latency} and 0 calls. Totals per function are
 * therefore exact in both sample types; latency per bucket is not invented.
 */
final class LatencyProfile {
    /** le_us of the +Inf bucket: no upper bound. */
    static final long INF_LE_US = Long.MAX_VALUE;

    private final Map<String, Long> strings = new HashMap<>();
    private final Profile.Builder p = Profile.newBuilder();

    private LatencyProfile() {
        str("");
    }

    private long str(String s) {
        Long id = strings.get(s);
        if (id == null) {
            id = (long) p.getStringTableCount();
            p.addStringTable(s);
            strings.put(s, id);
        }
        return id;
    }

    /**
     * @param deltas calls per probe id within the window (functions without calls are left out)
     */
    static Profile build(List<ProbedFunction> functions, Map<Integer, LatencyHistogram> deltas, long timeNanos,
                         long durationNanos) {
        LatencyProfile b = new LatencyProfile();
        Profile.Builder p = b.p;
        ValueType calls = ValueType.newBuilder().setType(b.str("calls")).setUnit(b.str("count")).build();
        ValueType latency = ValueType.newBuilder().setType(b.str("latency")).setUnit(b.str("nanoseconds")).build();
        p.addSampleType(calls).addSampleType(latency).setPeriodType(calls).setPeriod(1)
                .setTimeNanos(timeNanos).setDurationNanos(Math.max(1, durationNanos));
        p.addComment(b.str("latency/nanoseconds: exact total per function, on its sample without le_us;"
                + " calls per bucket on samples with le_us (upper bound in microseconds)"));
        long kFunction = b.str("function");
        long kBinary = b.str("binary");
        long kLe = b.str("le_us");
        long usUnit = b.str("microseconds");
        Map<String, Long> mappingIds = new LinkedHashMap<>();
        Map<String, Long> mappingLimit = new HashMap<>();
        for (ProbedFunction f : functions) {
            mappingLimit.merge(f.binary(), f.entryAddress() + 1, Math::max);
        }
        for (ProbedFunction f : functions) {
            LatencyHistogram h = deltas.get(f.id());
            if (h == null || h.count() == 0 && h.sumNanos() == 0) {
                continue;
            }
            Long mapping = mappingIds.get(f.binary());
            if (mapping == null) {
                mapping = (long) p.getMappingCount() + 1;
                p.addMapping(Mapping.newBuilder().setId(mapping).setMemoryStart(0).setMemoryLimit(mappingLimit.get(f.binary()))
                        .setFilename(b.str(f.binary())).setHasFunctions(true));
                mappingIds.put(f.binary(), mapping);
            }
            long name = b.str(f.function());
            long functionId = p.getFunctionCount() + 1;
            p.addFunction(Function.newBuilder().setId(functionId).setName(name).setSystemName(name));
            long locationId = p.getLocationCount() + 1;
            p.addLocation(Location.newBuilder().setId(locationId).setMappingId(mapping).setAddress(f.entryAddress())
                    .addLine(Line.newBuilder().setFunctionId(functionId)));
            List<Label> common = new ArrayList<>(List.of(
                    Label.newBuilder().setKey(kFunction).setStr(name).build(),
                    Label.newBuilder().setKey(kBinary).setStr(b.str(f.binary())).build()));
            for (int k = 0; k < LatencyHistogram.BUCKETS; k++) {
                long n = h.bucket(k);
                if (n == 0) {
                    continue;
                }
                long le = k < LatencyHistogram.FINITE_BUCKETS ? 1L << k : INF_LE_US;
                p.addSample(Sample.newBuilder().addLocationId(locationId).addValue(n).addValue(0).addAllLabel(common)
                        .addLabel(Label.newBuilder().setKey(kLe).setNum(le).setNumUnit(usUnit)));
            }
            p.addSample(Sample.newBuilder().addLocationId(locationId).addValue(0).addValue(h.sumNanos()).addAllLabel(common));
        }
        return p.build();
    }

    /** {@code now - before} per probe id; probes absent before count from 0. */
    static Map<Integer, LatencyHistogram> delta(Map<Integer, LatencyHistogram> now, Map<Integer, LatencyHistogram> before) {
        Map<Integer, LatencyHistogram> out = new HashMap<>();
        for (var e : now.entrySet()) {
            LatencyHistogram a = e.getValue();
            LatencyHistogram z = before.get(e.getKey());
            long[] buckets = a.buckets();
            long sum = a.sumNanos();
            long count = a.count();
            if (z != null) {
                for (int k = 0; k < buckets.length; k++) {
                    buckets[k] = Math.max(0, buckets[k] - z.bucket(k));
                }
                sum = Math.max(0, sum - z.sumNanos());
                count = Math.max(0, count - z.count());
            }
            out.put(e.getKey(), new LatencyHistogram(e.getKey(), buckets, sum, count));
        }
        return out;
    }
}
