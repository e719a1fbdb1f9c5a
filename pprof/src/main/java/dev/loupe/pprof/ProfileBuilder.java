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
 * Builds one CPU profile for one time window.
 *
 * <p>The output satisfies go tool pprof and {@link ParcaRules}: {@code string_table[0] == ""}; mapping,
 * location and function ids equal index + 1; sample types {@code samples/count} and
 * {@code cpu/nanoseconds} (values {@code [count, count * period]}); period type {@code cpu/nanoseconds};
 * {@code duration_nanos > 0}, which Parca reads as "delta profile". {@code default_sample_type} is left
 * unset: pprof then shows the last sample type, cpu.
 *
 * <p>Mappings, locations, functions and strings are deduplicated; samples with the same stack and the same
 * labels (same order) are aggregated. Output order is insertion order, so the same calls give the same
 * bytes. Labels pprof cannot represent (see {@link Label#isEncodable()}) are left out before aggregating.
 *
 * <p>Not thread-safe: callers that feed one builder from several threads must synchronize.
 */
public final class ProfileBuilder {
    /** A pprof sample type by name, e.g. {@code ("calls", "count")}. */
    public record SampleType(String type, String unit) {}

    /**
     * One line of a location: {@code function} at {@code line} (0: unknown) of {@code file} (null: unknown), the function
     * starting at {@code startLine} (0: unknown).
     */
    public record SourceLine(String function, String file, long line, long startLine) {
        public SourceLine {
            java.util.Objects.requireNonNull(function, "function");
        }
    }

    private final long period;
    private final long startEpochNanos;

    private final Map<String, Integer> stringIds = new HashMap<>();
    private final List<String> strings = new ArrayList<>();
    // Mappings and locations are looked up once per frame: their ids are filed under primitive keys, and the
    // remaining fields (kept by id - 1) compared along each key's chain, so a lookup neither boxes nor allocates.
    private final LongPairIndex mappingIds = new LongPairIndex(64); // by (start, limit)
    private final List<MappingKey> mappingKeys = new ArrayList<>();
    private final List<Mapping> mappings = new ArrayList<>();
    // Per mapping (by id - 1): whether any of its locations has a function with a file, a line number, inlined lines;
    // the mapping's has_filenames / has_line_numbers / has_inline_frames are set from these at build, so only when true.
    private final List<boolean[]> mappingSourceInfo = new ArrayList<>();
    private final Map<FunctionKey, Integer> functionIds = new HashMap<>();
    private final List<Function> functions = new ArrayList<>();
    private final LongPairIndex locationIds = new LongPairIndex(1024); // by (mapping id, address)
    private final List<String> locationFunctions = new ArrayList<>();
    private final List<Location> locations = new ArrayList<>();
    // Label lists repeat on nearly every sample (one per thread, roughly): encode each list once and key
    // samples by its small int id instead of hashing the labels into every sample key.
    private final Map<List<Label>, Integer> labelSetIds = new HashMap<>();
    private final List<List<dev.loupe.pprof.proto.Label>> labelSets = new ArrayList<>();
    private final Map<SampleKey, long[]> samples = new LinkedHashMap<>(); // insertion order = output order
    private final List<Long> comments = new ArrayList<>();
    private final List<ValueType> sampleTypes = new ArrayList<>();
    private final int periodTypeIndex;
    private final boolean cpu; // samples/count + cpu/nanoseconds, added by count
    private long totalCount;

    private record MappingKey(long start, long limit, long offset, String file, String buildId, boolean hasFunctions) {}

    private record FunctionKey(String name, String file, long startLine) {}

    /** A stack (compared by content) plus a label-set id; the hash is computed once. */
    private static final class SampleKey {
        final long[] stack;
        final int labelSet;
        final int hash;

        SampleKey(long[] stack, int labelSet, int hash) {
            this.stack = stack;
            this.labelSet = labelSet;
            this.hash = hash;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof SampleKey k && k.hash == hash && k.labelSet == labelSet && Arrays.equals(k.stack, stack);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    /**
     * @param periodNanos     CPU time one sample stands for (1e9 / sampling frequency), > 0
     * @param startEpochNanos window start, wall clock nanoseconds since the epoch (becomes time_nanos)
     */
    public ProfileBuilder(long periodNanos, long startEpochNanos) {
        this(startEpochNanos, List.of(new SampleType("samples", "count"), new SampleType("cpu", "nanoseconds")), 1,
                periodNanos, true);
    }

    /**
     * A profile with other sample types (e.g. latency: calls/count and latency/nanoseconds); samples are
     * added with {@link #addSample(long[], long[], List)}, one value per type.
     *
     * @param periodTypeIndex which of {@code types} the period is counted in
     * @param period          what one count of that type stands for, > 0
     */
    public ProfileBuilder(long startEpochNanos, List<SampleType> types, int periodTypeIndex, long period) {
        this(startEpochNanos, types, periodTypeIndex, period, false);
    }

    private ProfileBuilder(long startEpochNanos, List<SampleType> types, int periodTypeIndex, long period, boolean cpu) {
        if (period <= 0) {
            throw new IllegalArgumentException("period must be positive: " + period);
        }
        if (types.isEmpty() || periodTypeIndex < 0 || periodTypeIndex >= types.size()) {
            throw new IllegalArgumentException("period type " + periodTypeIndex + " of " + types.size() + " sample types");
        }
        this.period = period;
        this.startEpochNanos = startEpochNanos;
        this.periodTypeIndex = periodTypeIndex;
        this.cpu = cpu;
        intern(""); // pprof requires string_table[0] == ""
        for (SampleType t : types) {
            sampleTypes.add(valueType(t.type(), t.unit()));
        }
    }

    /**
     * Returns the id of the mapping with exactly these fields, adding it if new. Ids are 1, 2, 3... in
     * order of first use.
     *
     * @param filename path of the mapped file (null = "")
     * @param buildId  GNU build id as hex, or null (or "") if unknown
     */
    public long mapping(long memoryStart, long memoryLimit, long fileOffset, String filename, String buildId,
                        boolean hasFunctions) {
        if (buildId != null && buildId.isEmpty()) {
            buildId = null; // both encode as string 0; one key keeps them one mapping
        }
        if (filename == null) {
            filename = "";
        }
        for (int id = mappingIds.first(memoryStart, memoryLimit); id != 0; id = mappingIds.next(id)) {
            MappingKey k = mappingKeys.get(id - 1);
            if (k.offset() == fileOffset && k.hasFunctions() == hasFunctions && Objects.equals(k.file(), filename)
                    && Objects.equals(k.buildId(), buildId)) {
                return id;
            }
        }
        int id = mappings.size() + 1;
        mappingKeys.add(new MappingKey(memoryStart, memoryLimit, fileOffset, filename, buildId, hasFunctions));
        mappings.add(Mapping.newBuilder().setId(id).setMemoryStart(memoryStart).setMemoryLimit(memoryLimit)
                .setFileOffset(fileOffset).setFilename(intern(filename))
                .setBuildId(buildId == null ? 0 : intern(buildId)).setHasFunctions(hasFunctions).build());
        mappingIds.add(memoryStart, memoryLimit, id);
        mappingSourceInfo.add(new boolean[3]);
        return id;
    }

    /**
     * Returns the id of the location for this address, adding it if new; deduplicated on (mappingId,
     * address, functionName). A named location gets one line pointing at a function deduplicated on
     * (name, file); an unsymbolized one (null name) has no lines, so pprof shows the address.
     *
     * @param mappingId    an id from {@link #mapping}, or 0 for none
     * @param functionFile source file of the function, or null; only used when the location is new
     */
    public long location(long mappingId, long address, String functionName, String functionFile) {
        for (int id = locationIds.first(mappingId, address); id != 0; id = locationIds.next(id)) {
            if (Objects.equals(locationFunctions.get(id - 1), functionName)) {
                return id;
            }
        }
        return newLocation(mappingId, address, functionName, functionFile);
    }

    /**
     * Returns the id of the first location added at this address in this mapping, whatever its function, or
     * adds one named {@code functionName} (no file) if there is none: one lookup on two longs, no name
     * compared. For callers whose address in a mapping names one function while the builder lives (a CPU
     * profile window); a later name for a known address is not recorded.
     *
     * @param mappingId an id from {@link #mapping}, or 0 for none
     */
    public long locationAt(long mappingId, long address, String functionName) {
        int id = locationIds.first(mappingId, address);
        return id != 0 ? id : newLocation(mappingId, address, functionName, null, List.of());
    }

    /**
     * As {@link #locationAt(long, long, String)}, for an address where a compiler inlined other functions into
     * {@code functionName}: a new location gets a line for each of {@code inlined} (innermost first), then one for
     * {@code functionName}, as pprof wants it ("the last entry represents the caller into which the preceding
     * entries were inlined").
     */
    public long locationAt(long mappingId, long address, String functionName, List<String> inlined) {
        int id = locationIds.first(mappingId, address);
        return id != 0 ? id : newLocation(mappingId, address, functionName, null, functionName == null ? List.of() : inlined);
    }

    /**
     * As {@link #locationAt(long, long, String, List)}, for a frame whose source position is known (a runtime's
     * frame): {@code functionName}'s line gets {@code line} (if positive) and its function the file {@code file} (if
     * not null). The location is the first at this address, as above.
     */
    public long locationAt(long mappingId, long address, String functionName, List<String> inlined, String file, long line) {
        int id = locationIds.first(mappingId, address);
        return id != 0 ? id : newLocation(mappingId, address, functionName, file, functionName == null ? List.of() : inlined, line);
    }

    /**
     * The first location at this address in this mapping, or a new one with these lines: {@code lines} innermost first,
     * the last one the function the others were inlined into (pprof's order), each with its file, line and function
     * start line where known. An empty list makes a location without lines (pprof shows the address).
     */
    public long locationWithLines(long mappingId, long address, List<SourceLine> lines) {
        int id = locationIds.first(mappingId, address);
        if (id != 0) {
            return id;
        }
        checkMapping(mappingId);
        id = locations.size() + 1;
        Location.Builder b = Location.newBuilder().setId(id).setMappingId(mappingId).setAddress(address);
        for (SourceLine l : lines) {
            b.addLine(Line.newBuilder().setFunctionId(function(l.function(), l.file(), l.startLine())).setLine(Math.max(0, l.line())));
        }
        Location loc = b.build();
        noteSourceInfo(mappingId, loc);
        locations.add(loc);
        locationFunctions.add(lines.isEmpty() ? null : lines.get(lines.size() - 1).function());
        locationIds.add(mappingId, address, id);
        return id;
    }

    /** The id of the first location at this address in this mapping, 0 if there is none yet. */
    public long existingLocation(long mappingId, long address) {
        return locationIds.first(mappingId, address);
    }

    private void checkMapping(long mappingId) {
        if (mappingId < 0 || mappingId > mappings.size()) {
            throw new IllegalArgumentException("unknown mapping id " + mappingId);
        }
    }

    /** Records what source information a new location brings to its mapping. */
    private void noteSourceInfo(long mappingId, Location loc) {
        if (mappingId == 0) {
            return;
        }
        boolean[] info = mappingSourceInfo.get((int) mappingId - 1);
        for (Line l : loc.getLineList()) {
            info[0] |= functions.get((int) l.getFunctionId() - 1).getFilename() != 0;
            info[1] |= l.getLine() > 0;
        }
        info[2] |= loc.getLineCount() > 1;
    }

    private int newLocation(long mappingId, long address, String functionName, String functionFile) {
        return newLocation(mappingId, address, functionName, functionFile, List.of(), 0);
    }

    private int newLocation(long mappingId, long address, String functionName, String functionFile, List<String> inlined) {
        return newLocation(mappingId, address, functionName, functionFile, inlined, 0);
    }

    /** Adds a location; a known one was checked when it was added, so only new ones check their mapping. */
    private int newLocation(long mappingId, long address, String functionName, String functionFile, List<String> inlined,
                            long line) {
        checkMapping(mappingId);
        int id = locations.size() + 1;
        Location.Builder b = Location.newBuilder().setId(id).setMappingId(mappingId).setAddress(address);
        for (String callee : inlined) {
            b.addLine(Line.newBuilder().setFunctionId(function(callee, null, 0)));
        }
        if (functionName != null) {
            b.addLine(Line.newBuilder().setFunctionId(function(functionName, functionFile, 0)).setLine(Math.max(0, line)));
        }
        Location loc = b.build();
        noteSourceInfo(mappingId, loc);
        locations.add(loc);
        locationFunctions.add(functionName);
        locationIds.add(mappingId, address, id);
        return id;
    }

    private int function(String name, String file, long startLine) {
        if (file != null && file.isEmpty()) {
            file = null; // same encoding (string 0), so the same function
        }
        startLine = Math.max(0, startLine);
        FunctionKey key = new FunctionKey(name, file, startLine);
        Integer id = functionIds.get(key);
        if (id == null) {
            id = functions.size() + 1;
            int n = intern(name);
            // system_name = name: we only have one (possibly demangled) name.
            functions.add(Function.newBuilder().setId(id).setName(n).setSystemName(n)
                    .setFilename(file == null ? 0 : intern(file)).setStartLine(startLine).build());
            functionIds.put(key, id);
        }
        return id;
    }

    /**
     * Adds {@code count} samples of one stack. Identical stacks with equal label lists are summed.
     *
     * @param locationIds ids from {@link #location}, leaf first; copied, so the caller may reuse the array
     * @param count       number of samples, > 0
     * @param labels      labels in a fixed order (order matters for aggregation); null = none
     */
    public void addSample(long[] locationIds, long count, List<Label> labels) {
        if (count <= 0) {
            throw new IllegalArgumentException("count must be positive: " + count);
        }
        if (!cpu) {
            throw new IllegalStateException("addSample(count) is for CPU profiles; give one value per sample type");
        }
        long[] total = totals(locationIds, labels);
        total[0] += count;
        total[1] += count * period;
        totalCount += count;
    }

    /**
     * Adds one value per sample type to the sample of this stack and labels (summed with an identical one).
     *
     * @param values one per sample type, in the constructor's order
     */
    public void addSample(long[] locationIds, long[] values, List<Label> labels) {
        if (values.length != sampleTypes.size()) {
            throw new IllegalArgumentException(values.length + " values for " + sampleTypes.size() + " sample types");
        }
        long[] total = totals(locationIds, labels);
        for (int i = 0; i < values.length; i++) {
            total[i] += values[i];
        }
        totalCount += values[0];
    }

    /** The running values of the sample with this stack and labels (a new one at zero). */
    private long[] totals(long[] locationIds, List<Label> labels) {
        int known = locations.size();
        for (long id : locationIds) {
            if (id < 1 || id > known) {
                throw new IllegalArgumentException("unknown location id " + id);
            }
        }
        int set = labelSet(labels == null ? List.of() : labels);
        int hash = 31 * Arrays.hashCode(locationIds) + set;
        long[] total = samples.get(new SampleKey(locationIds, set, hash));
        if (total == null) {
            total = new long[sampleTypes.size()];
            samples.put(new SampleKey(locationIds.clone(), set, hash), total); // copy only when new
        }
        return total;
    }

    private int labelSet(List<Label> labels) {
        Integer id = labelSetIds.get(labels);
        if (id != null) {
            return id;
        }
        List<Label> kept = labels.stream().filter(Label::isEncodable).toList();
        // Lists that differ only in dropped labels encode the same, so they must share an id to aggregate.
        id = labelSetIds.get(kept);
        if (id == null) {
            id = labelSets.size();
            List<dev.loupe.pprof.proto.Label> encoded = new ArrayList<>(kept.size());
            for (Label l : kept) {
                var b = dev.loupe.pprof.proto.Label.newBuilder().setKey(intern(l.key()));
                if (l.isNumeric()) {
                    b.setNum(l.num()).setNumUnit(l.unit() == null ? 0 : intern(l.unit()));
                } else {
                    b.setStr(intern(l.str()));
                }
                encoded.add(b.build());
            }
            labelSets.add(List.copyOf(encoded));
            labelSetIds.put(kept, id);
        }
        labelSetIds.put(List.copyOf(labels), id); // the caller's list may be mutable
        return id;
    }

    /** Adds a free-text comment (pprof shows these in its header). */
    public void comment(String text) {
        comments.add((long) intern(text));
    }

    /** Distinct (stack, labels) samples so far. */
    public int sampleCount() {
        return samples.size();
    }

    /** Sum of all sample counts (the first sample type's values) so far. */
    public long totalCount() {
        return totalCount;
    }

    /**
     * Builds the profile. Does not change the builder, so it may be called again (e.g. after more samples).
     *
     * @param endEpochNanos window end; duration_nanos = end - start, at least 1 (a zero duration would make
     *                      Parca treat the profile as cumulative)
     */
    public Profile build(long endEpochNanos) {
        Profile.Builder p = Profile.newBuilder()
                .addAllSampleType(sampleTypes)
                .setPeriodType(sampleTypes.get(periodTypeIndex))
                .setPeriod(period)
                .setTimeNanos(startEpochNanos)
                .setDurationNanos(Math.max(1, endEpochNanos - startEpochNanos));
        for (Map.Entry<SampleKey, long[]> e : samples.entrySet()) {
            Sample.Builder s = p.addSampleBuilder();
            for (long id : e.getKey().stack) {
                s.addLocationId(id);
            }
            for (long v : e.getValue()) {
                s.addValue(v);
            }
            s.addAllLabel(labelSets.get(e.getKey().labelSet));
        }
        for (int i = 0; i < mappings.size(); i++) {
            boolean[] info = mappingSourceInfo.get(i);
            Mapping m = mappings.get(i);
            p.addMapping(info[0] || info[1] || info[2]
                    ? m.toBuilder().setHasFilenames(info[0]).setHasLineNumbers(info[1]).setHasInlineFrames(info[2]).build() : m);
        }
        return p
                .addAllLocation(locations)
                .addAllFunction(functions)
                .addAllStringTable(strings)
                .addAllComment(comments)
                .build();
    }

    private int intern(String s) {
        Integer id = stringIds.get(s);
        if (id == null) {
            id = strings.size();
            strings.add(s);
            stringIds.put(s, id);
        }
        return id;
    }

    private ValueType valueType(String type, String unit) {
        return ValueType.newBuilder().setType(intern(type)).setUnit(intern(unit)).build();
    }
}
