package dev.loupe.pprof;

import dev.loupe.pprof.proto.Function;
import dev.loupe.pprof.proto.Line;
import dev.loupe.pprof.proto.Location;
import dev.loupe.pprof.proto.Mapping;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import dev.loupe.pprof.proto.ValueType;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Builds one CPU profile for one time window, valid for go tool pprof and for Parca's stricter checks:
 * string_table[0] == "", mapping/location/function ids == index + 1, sample types
 * {@code samples/count} + {@code cpu/nanoseconds}, period type {@code cpu/nanoseconds}.
 * Identical stacks with identical labels are aggregated. Not thread-safe.
 */
public final class ProfileBuilder {
    private final long periodNanos;
    private final long startEpochNanos;

    private final Map<String, Long> strings = new HashMap<>();
    private final List<String> stringTable = new ArrayList<>();
    private final Map<MappingKey, Long> mappingIds = new HashMap<>();
    private final List<Mapping> mappings = new ArrayList<>();
    private final Map<FunctionKey, Long> functionIds = new HashMap<>();
    private final List<Function> functions = new ArrayList<>();
    private final Map<LocationKey, Long> locationIds = new HashMap<>();
    private final List<Location> locations = new ArrayList<>();
    private final Map<SampleKey, long[]> samples = new LinkedHashMap<>();
    private final List<Long> comments = new ArrayList<>();
    private long totalCount;

    private record MappingKey(long start, long limit, long offset, String file, String buildId, boolean hasFunctions) {}

    private record FunctionKey(String name, String file) {}

    private record LocationKey(long mappingId, long address, String function) {}

    /** Stack ids plus labels; arrays compared by content. */
    private record SampleKey(long[] stack, List<Label> labels) {
        @Override
        public boolean equals(Object o) {
            return o instanceof SampleKey k && Arrays.equals(stack, k.stack) && labels.equals(k.labels);
        }

        @Override
        public int hashCode() {
            return 31 * Arrays.hashCode(stack) + labels.hashCode();
        }
    }

    public ProfileBuilder(long periodNanos, long startEpochNanos) {
        if (periodNanos <= 0) {
            throw new IllegalArgumentException("period must be positive: " + periodNanos);
        }
        this.periodNanos = periodNanos;
        this.startEpochNanos = startEpochNanos;
        intern("");
    }

    private long intern(String s) {
        Long id = strings.get(s);
        if (id == null) {
            id = (long) stringTable.size();
            strings.put(s, id);
            stringTable.add(s);
        }
        return id;
    }

    /** Returns the id of the mapping with exactly these fields, adding it if new. */
    public long mapping(long memoryStart, long memoryLimit, long fileOffset, String filename, String buildId,
                        boolean hasFunctions) {
        MappingKey key = new MappingKey(memoryStart, memoryLimit, fileOffset, Objects.requireNonNullElse(filename, ""),
                buildId, hasFunctions);
        Long id = mappingIds.get(key);
        if (id == null) {
            id = (long) mappings.size() + 1;
            mappings.add(Mapping.newBuilder().setId(id).setMemoryStart(memoryStart).setMemoryLimit(memoryLimit)
                    .setFileOffset(fileOffset).setFilename(intern(key.file()))
                    .setBuildId(buildId == null ? 0 : intern(buildId)).setHasFunctions(hasFunctions).build());
            mappingIds.put(key, id);
        }
        return id;
    }

    /**
     * Returns the id of a location (mapping 0 = none). With a function name the location gets one line;
     * without, it stays a bare address.
     */
    public long location(long mappingId, long address, String functionName, String functionFile) {
        if (mappingId < 0 || mappingId > mappings.size()) {
            throw new IllegalArgumentException("unknown mapping id " + mappingId);
        }
        LocationKey key = new LocationKey(mappingId, address, functionName);
        Long id = locationIds.get(key);
        if (id == null) {
            id = (long) locations.size() + 1;
            Location.Builder b = Location.newBuilder().setId(id).setMappingId(mappingId).setAddress(address);
            if (functionName != null) {
                b.addLine(Line.newBuilder().setFunctionId(function(functionName, functionFile)));
            }
            locations.add(b.build());
            locationIds.put(key, id);
        }
        return id;
    }

    private long function(String name, String file) {
        FunctionKey key = new FunctionKey(name, file);
        Long id = functionIds.get(key);
        if (id == null) {
            id = (long) functions.size() + 1;
            long n = intern(name);
            functions.add(Function.newBuilder().setId(id).setName(n).setSystemName(n)
                    .setFilename(file == null ? 0 : intern(file)).build());
            functionIds.put(key, id);
        }
        return id;
    }

    /** Adds {@code count} samples of this stack (location ids, leaf first) with these labels. */
    public void addSample(long[] locationIds, long count, List<Label> labels) {
        for (long id : locationIds) {
            if (id < 1 || id > locations.size()) {
                throw new IllegalArgumentException("unknown location id " + id);
            }
        }
        SampleKey key = new SampleKey(locationIds.clone(), List.copyOf(labels));
        long[] c = samples.computeIfAbsent(key, k -> new long[1]);
        c[0] += count;
        totalCount += count;
    }

    public void comment(String text) {
        comments.add(intern(text));
    }

    /** Distinct (stack, labels) samples so far. */
    public int sampleCount() {
        return samples.size();
    }

    public long totalCount() {
        return totalCount;
    }

    /** Builds the profile; duration = end - start, at least 1 ns (Parca treats duration > 0 as a delta profile). */
    public Profile build(long endEpochNanos) {
        Profile.Builder p = Profile.newBuilder();
        p.addSampleType(valueType("samples", "count"));
        p.addSampleType(valueType("cpu", "nanoseconds"));
        p.setPeriodType(valueType("cpu", "nanoseconds"));
        p.setPeriod(periodNanos);
        p.setTimeNanos(startEpochNanos);
        p.setDurationNanos(Math.max(1, endEpochNanos - startEpochNanos));
        for (Map.Entry<SampleKey, long[]> e : samples.entrySet()) {
            Sample.Builder s = Sample.newBuilder();
            for (long id : e.getKey().stack()) {
                s.addLocationId(id);
            }
            long n = e.getValue()[0];
            s.addValue(n).addValue(n * periodNanos);
            for (Label l : e.getKey().labels()) {
                dev.loupe.pprof.proto.Label.Builder lb = dev.loupe.pprof.proto.Label.newBuilder().setKey(intern(l.key()));
                if (l.isNumeric()) {
                    lb.setNum(l.num());
                    if (l.unit() != null) {
                        lb.setNumUnit(intern(l.unit()));
                    }
                } else {
                    lb.setStr(intern(l.str()));
                }
                s.addLabel(lb);
            }
            p.addSample(s);
        }
        p.addAllMapping(mappings).addAllLocation(locations).addAllFunction(functions);
        p.addAllComment(comments);
        p.addAllStringTable(stringTable); // last: building samples above may intern label strings
        return p.build();
    }

    private ValueType valueType(String type, String unit) {
        return ValueType.newBuilder().setType(intern(type)).setUnit(intern(unit)).build();
    }
}
