package dev.loupe.pprof;

import dev.loupe.pprof.proto.Function;
import dev.loupe.pprof.proto.Label;
import dev.loupe.pprof.proto.Line;
import dev.loupe.pprof.proto.Location;
import dev.loupe.pprof.proto.Mapping;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import dev.loupe.pprof.proto.ValueType;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The checks Parca's server applies to a raw pprof profile before accepting it. A profile that passes
 * here is not rejected by Parca for its shape.
 */
public final class ParcaRules {
    private static final Pattern IDENTIFIER = Pattern.compile("[a-zA-Z_][a-zA-Z0-9_]*");

    private ParcaRules() {}

    public static List<String> violations(Profile p) {
        List<String> v = new ArrayList<>();
        int strings = p.getStringTableCount();
        if (strings == 0 || !p.getStringTable(0).isEmpty()) {
            v.add("string_table[0] must be \"\"");
        }
        for (int i = 0; i < p.getSampleTypeCount(); i++) {
            valueType(p, p.getSampleType(i), "sample_type[" + i + "]", v);
        }
        if (p.hasPeriodType()) {
            valueType(p, p.getPeriodType(), "period_type", v);
        }
        if (p.getTimeNanos() == 0) {
            v.add("time_nanos must be set");
        }
        if (p.getDurationNanos() <= 0) {
            v.add("duration_nanos must be > 0 (delta profile), got " + p.getDurationNanos());
        }
        for (int i = 0; i < p.getMappingCount(); i++) {
            Mapping m = p.getMapping(i);
            if (m.getId() != i + 1) {
                v.add("mapping[" + i + "].id is " + m.getId() + ", must be " + (i + 1));
            }
            str(p, m.getFilename(), "mapping[" + i + "].filename", v);
            str(p, m.getBuildId(), "mapping[" + i + "].build_id", v);
        }
        for (int i = 0; i < p.getFunctionCount(); i++) {
            Function f = p.getFunction(i);
            if (f.getId() != i + 1) {
                v.add("function[" + i + "].id is " + f.getId() + ", must be " + (i + 1));
            }
            str(p, f.getName(), "function[" + i + "].name", v);
            str(p, f.getSystemName(), "function[" + i + "].system_name", v);
            str(p, f.getFilename(), "function[" + i + "].filename", v);
        }
        for (int i = 0; i < p.getLocationCount(); i++) {
            Location l = p.getLocation(i);
            if (l.getId() != i + 1) {
                v.add("location[" + i + "].id is " + l.getId() + ", must be " + (i + 1));
            }
            if (Long.compareUnsigned(l.getMappingId(), p.getMappingCount()) > 0) {
                v.add("location[" + i + "].mapping_id " + l.getMappingId() + " out of range");
            }
            for (Line line : l.getLineList()) {
                if (line.getFunctionId() == 0 || Long.compareUnsigned(line.getFunctionId(), p.getFunctionCount()) > 0) {
                    v.add("location[" + i + "] line function_id " + line.getFunctionId() + " out of range");
                }
            }
        }
        for (int i = 0; i < p.getSampleCount(); i++) {
            Sample s = p.getSample(i);
            if (s.getValueCount() != p.getSampleTypeCount()) {
                v.add("sample[" + i + "] has " + s.getValueCount() + " values for " + p.getSampleTypeCount() + " sample types");
            }
            for (long id : s.getLocationIdList()) {
                if (id == 0 || Long.compareUnsigned(id, p.getLocationCount()) > 0) {
                    v.add("sample[" + i + "] location id " + id + " out of range");
                }
            }
            for (Label l : s.getLabelList()) {
                if (l.getKey() == 0) {
                    v.add("sample[" + i + "] label with empty key");
                }
                str(p, l.getKey(), "sample[" + i + "] label key", v);
                str(p, l.getStr(), "sample[" + i + "] label str", v);
                str(p, l.getNumUnit(), "sample[" + i + "] label num_unit", v);
            }
        }
        for (long c : p.getCommentList()) {
            str(p, c, "comment", v);
        }
        return v;
    }

    public static void requireValid(Profile p) {
        List<String> v = violations(p);
        if (!v.isEmpty()) {
            throw new IllegalArgumentException("profile violates Parca's rules: " + String.join("; ", v));
        }
    }

    /** Prometheus label names; names starting with "__" are reserved, except __name__. */
    public static boolean isValidPrometheusLabelName(String name) {
        return name != null && IDENTIFIER.matcher(name).matches() && (!name.startsWith("__") || name.equals("__name__"));
    }

    private static void valueType(Profile p, ValueType t, String what, List<String> v) {
        for (long idx : new long[] {t.getType(), t.getUnit()}) {
            if (idx < 0 || idx >= p.getStringTableCount()) {
                v.add(what + " string index " + idx + " out of range");
                return;
            }
            String s = p.getStringTable((int) idx);
            if (!IDENTIFIER.matcher(s).matches()) {
                v.add(what + " \"" + s + "\" is not identifier-like");
            }
        }
    }

    private static void str(Profile p, long idx, String what, List<String> v) {
        if (idx < 0 || idx >= p.getStringTableCount()) {
            v.add(what + " string index " + idx + " out of range");
        }
    }
}
