package dev.loupe.pprof;

import dev.loupe.pprof.proto.Function;
import dev.loupe.pprof.proto.Line;
import dev.loupe.pprof.proto.Location;
import dev.loupe.pprof.proto.Mapping;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import dev.loupe.pprof.proto.ValueType;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Splits one host-wide profile into one profile per value of a numeric sample label (e.g. {@code pid}):
 * Parca stores a series per process, while local files stay host-wide. Each part keeps only the
 * mappings, locations, functions and strings its samples use, renumbered so that ids are index + 1 and
 * string 0 is "" (Parca's rules). Samples without the label go to the part keyed {@code 0}.
 */
public final class ProfileSplitter {
    private ProfileSplitter() {}

    /** Parts by label value, ascending. */
    public static Map<Long, Profile> byNumLabel(Profile profile, String key) {
        long keyIndex = profile.getStringTableList().indexOf(key);
        Map<Long, List<Sample>> groups = new TreeMap<>();
        for (Sample s : profile.getSampleList()) {
            long value = 0;
            if (keyIndex > 0) {
                for (var l : s.getLabelList()) {
                    if (l.getKey() == keyIndex && l.getStr() == 0) {
                        value = l.getNum();
                        break;
                    }
                }
            }
            groups.computeIfAbsent(value, v -> new ArrayList<>()).add(s);
        }
        Map<Long, Profile> parts = new TreeMap<>();
        for (var g : groups.entrySet()) {
            parts.put(g.getKey(), new Part(profile).build(g.getValue()));
        }
        return parts;
    }

    /** One part being built: old id → new id maps, filled on first use. */
    private static final class Part {
        private final Profile src;
        private final Profile.Builder out = Profile.newBuilder();
        private final Map<Long, Long> strings = new HashMap<>();
        private final Map<Long, Long> mappings = new HashMap<>();
        private final Map<Long, Long> locations = new HashMap<>();
        private final Map<Long, Long> functions = new HashMap<>();
        private final Map<Long, Mapping> mappingById = new HashMap<>();
        private final Map<Long, Location> locationById = new HashMap<>();
        private final Map<Long, Function> functionById = new HashMap<>();

        Part(Profile src) {
            this.src = src;
            for (Mapping m : src.getMappingList()) {
                mappingById.put(m.getId(), m);
            }
            for (Location l : src.getLocationList()) {
                locationById.put(l.getId(), l);
            }
            for (Function f : src.getFunctionList()) {
                functionById.put(f.getId(), f);
            }
            out.addStringTable("");
            strings.put(0L, 0L);
        }

        Profile build(List<Sample> samples) {
            for (ValueType t : src.getSampleTypeList()) {
                out.addSampleType(valueType(t));
            }
            if (src.hasPeriodType()) {
                out.setPeriodType(valueType(src.getPeriodType()));
            }
            out.setPeriod(src.getPeriod())
                    .setTimeNanos(src.getTimeNanos())
                    .setDurationNanos(src.getDurationNanos())
                    .setDefaultSampleType(str(src.getDefaultSampleType()))
                    .setDropFrames(str(src.getDropFrames()))
                    .setKeepFrames(str(src.getKeepFrames()))
                    .setDocUrl(str(src.getDocUrl()));
            for (long c : src.getCommentList()) {
                out.addComment(str(c));
            }
            for (Sample s : samples) {
                Sample.Builder b = Sample.newBuilder().addAllValue(s.getValueList());
                for (long id : s.getLocationIdList()) {
                    b.addLocationId(location(id));
                }
                for (var l : s.getLabelList()) {
                    b.addLabel(l.toBuilder().setKey(str(l.getKey())).setStr(str(l.getStr())).setNumUnit(str(l.getNumUnit())));
                }
                out.addSample(b);
            }
            return out.build();
        }

        private ValueType valueType(ValueType t) {
            return ValueType.newBuilder().setType(str(t.getType())).setUnit(str(t.getUnit())).build();
        }

        private long str(long index) {
            Long known = strings.get(index);
            if (known != null) {
                return known;
            }
            long id = out.getStringTableCount();
            out.addStringTable(src.getStringTable((int) index));
            strings.put(index, id);
            return id;
        }

        private long mapping(long id) {
            if (id == 0) {
                return 0;
            }
            Long known = mappings.get(id);
            if (known != null) {
                return known;
            }
            Mapping m = mappingById.get(id);
            if (m == null) {
                throw new IllegalArgumentException("location refers to mapping " + id + ", which the profile lacks");
            }
            long fresh = out.getMappingCount() + 1L;
            mappings.put(id, fresh);
            out.addMapping(m.toBuilder().setId(fresh).setFilename(str(m.getFilename())).setBuildId(str(m.getBuildId())));
            return fresh;
        }

        private long function(long id) {
            Long known = functions.get(id);
            if (known != null) {
                return known;
            }
            Function f = functionById.get(id);
            if (f == null) {
                throw new IllegalArgumentException("line refers to function " + id + ", which the profile lacks");
            }
            long fresh = out.getFunctionCount() + 1L;
            functions.put(id, fresh);
            out.addFunction(f.toBuilder().setId(fresh).setName(str(f.getName())).setSystemName(str(f.getSystemName()))
                    .setFilename(str(f.getFilename())));
            return fresh;
        }

        private long location(long id) {
            Long known = locations.get(id);
            if (known != null) {
                return known;
            }
            Location l = locationById.get(id);
            if (l == null) {
                throw new IllegalArgumentException("sample refers to location " + id + ", which the profile lacks");
            }
            Location.Builder b = l.toBuilder().setMappingId(mapping(l.getMappingId())).clearLine();
            for (Line line : l.getLineList()) {
                b.addLine(line.toBuilder().setFunctionId(function(line.getFunctionId())));
            }
            long fresh = out.getLocationCount() + 1L;
            locations.put(id, fresh);
            out.addLocation(b.setId(fresh));
            return fresh;
        }
    }
}
