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
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.MappingRef;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The latency profile of one window, from the groups the kernel summed at each return: sample types
 * {@code calls/count} and {@code latency/nanoseconds}, one sample per (function, process, goroutine, caller
 * stack, bucket) with the calls and their exact total duration.
 *
 * <p>Locations: the probed function is the leaf, one location per function (in a mapping named after its
 * binary, at its link-time entry address); with {@code stacks: true} its callers follow, symbolized like the
 * CPU profile's frames ({@code [stack unavailable]} when the kernel's stack table was full). Labels:
 * {@code function}, {@code binary}, {@code pid} (numeric), {@code comm}, {@code goid} (numeric, Go only) and
 * {@code le_us}: the bucket's upper bound in microseconds (2^k), {@value #INF_LE_US} ({@code Long.MAX_VALUE})
 * for the +Inf bucket — numeric so that {@code -tagfocus=le_us=1024:} selects calls slower than 512 µs.
 */
final class LatencyProfile {
    /** le_us of the +Inf bucket: no upper bound. */
    static final long INF_LE_US = Long.MAX_VALUE;
    static final String LOST_STACK = "[stack unavailable]";

    private final Map<String, Long> strings = new HashMap<>();
    private final Profile.Builder p = Profile.newBuilder();
    private final Map<MappingRef, Long> mappings = new HashMap<>();
    private final Map<String, Long> functionIds = new HashMap<>();
    private record LocationKey(long mappingId, long address, String function) {}

    private final Map<LocationKey, Long> locations = new HashMap<>();

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

    private long function(String name) {
        Long id = functionIds.get(name);
        if (id == null) {
            id = (long) p.getFunctionCount() + 1;
            long n = str(name);
            p.addFunction(Function.newBuilder().setId(id).setName(n).setSystemName(n));
            functionIds.put(name, id);
        }
        return id;
    }

    private long mapping(MappingRef m) {
        Long id = mappings.get(m);
        if (id == null) {
            id = (long) p.getMappingCount() + 1;
            Mapping.Builder b = Mapping.newBuilder().setId(id).setMemoryStart(m.start()).setMemoryLimit(m.limit())
                    .setFileOffset(m.fileOffset()).setFilename(str(m.path() == null ? "" : m.path()))
                    .setHasFunctions(m.hasFunctions());
            if (m.buildId() != null) {
                b.setBuildId(str(m.buildId()));
            }
            p.addMapping(b);
            mappings.put(m, id);
        }
        return id;
    }

    private long location(long mappingId, long address, String functionName) {
        LocationKey key = new LocationKey(mappingId, address, functionName);
        Long id = locations.get(key);
        if (id == null) {
            id = (long) p.getLocationCount() + 1;
            Location.Builder b = Location.newBuilder().setId(id).setMappingId(mappingId).setAddress(address);
            if (functionName != null) {
                b.addLine(Line.newBuilder().setFunctionId(function(functionName)));
            }
            p.addLocation(b);
            locations.put(key, id);
        }
        return id;
    }

    static Profile build(List<ProbedFunction> functions, LatencyGroups groups, long timeNanos, long durationNanos) {
        LatencyProfile b = new LatencyProfile();
        Profile.Builder p = b.p;
        ValueType calls = ValueType.newBuilder().setType(b.str("calls")).setUnit(b.str("count")).build();
        ValueType latency = ValueType.newBuilder().setType(b.str("latency")).setUnit(b.str("nanoseconds")).build();
        p.addSampleType(calls).addSampleType(latency).setPeriodType(calls).setPeriod(1)
                .setTimeNanos(timeNanos).setDurationNanos(Math.max(1, durationNanos));
        p.addComment(b.str("one sample per function, process, goroutine (goid, Go only), caller stack and bucket"
                + " (le_us: upper bound in microseconds; " + INF_LE_US + " = +Inf)"));
        if (groups.droppedCalls() > 0) {
            p.addComment(b.str(groups.droppedCalls() + " calls left out: too many groups in this window (/metrics is exact)"));
        }
        long kFunction = b.str("function");
        long kBinary = b.str("binary");
        long kPid = b.str("pid");
        long kComm = b.str("comm");
        long kGoid = b.str("goid");
        long kLe = b.str("le_us");
        long usUnit = b.str("microseconds");
        Map<Integer, ProbedFunction> byId = new HashMap<>();
        Map<String, Long> limit = new HashMap<>();
        for (ProbedFunction f : functions) {
            byId.put(f.id(), f);
            limit.merge(f.binary(), f.entryAddress() + 1, Math::max);
        }
        Map<String, Long> binaryMappings = new HashMap<>();
        Map<Integer, Long> functionLocations = new HashMap<>();
        for (var e : groups.entries()) {
            LatencyGroups.Key k = e.getKey();
            LatencyGroups.Sums s = e.getValue();
            ProbedFunction f = byId.get(k.probe());
            if (f == null || s.calls == 0 && s.nanos == 0) {
                continue;
            }
            Long leaf = functionLocations.get(f.id());
            if (leaf == null) {
                Long mapping = binaryMappings.get(f.binary());
                if (mapping == null) {
                    mapping = (long) p.getMappingCount() + 1;
                    p.addMapping(Mapping.newBuilder().setId(mapping).setMemoryStart(0).setMemoryLimit(limit.get(f.binary()))
                            .setFilename(b.str(f.binary())).setHasFunctions(true));
                    binaryMappings.put(f.binary(), mapping);
                }
                leaf = (long) p.getLocationCount() + 1;
                p.addLocation(Location.newBuilder().setId(leaf).setMappingId(mapping).setAddress(f.entryAddress())
                        .addLine(Line.newBuilder().setFunctionId(b.function(f.function()))));
                functionLocations.put(f.id(), leaf);
            }
            Sample.Builder sample = Sample.newBuilder().addLocationId(leaf);
            for (Frame fr : k.callers()) {
                sample.addLocationId(b.location(fr.mapping() == null ? 0 : b.mapping(fr.mapping()), fr.address(), fr.function()));
            }
            if (k.stackLost()) {
                sample.addLocationId(b.location(0, 0, LOST_STACK));
            }
            long le = k.bucket() < LatencyHistogram.FINITE_BUCKETS ? 1L << k.bucket() : INF_LE_US;
            List<Label> labels = new ArrayList<>(6);
            labels.add(Label.newBuilder().setKey(kFunction).setStr(b.str(f.function())).build());
            labels.add(Label.newBuilder().setKey(kBinary).setStr(b.str(f.binary())).build());
            labels.add(Label.newBuilder().setKey(kPid).setNum(k.pid()).build());
            if (s.comm != null && !s.comm.isEmpty()) {
                labels.add(Label.newBuilder().setKey(kComm).setStr(b.str(s.comm)).build());
            }
            if (f.spec().kind() == dev.loupe.bpf.ProbeSpec.Kind.GO && k.goid() != 0) {
                labels.add(Label.newBuilder().setKey(kGoid).setNum(k.goid()).build());
            }
            labels.add(Label.newBuilder().setKey(kLe).setNum(le).setNumUnit(usUnit).build());
            p.addSample(sample.addValue(s.calls).addValue(s.nanos).addAllLabel(labels));
        }
        return p.build();
    }
}
