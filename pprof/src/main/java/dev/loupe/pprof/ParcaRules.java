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
 * Checks a raw profile against what Parca needs before we send it.
 *
 * <p>Parca's ingest check (ValidatePprofProfile in parca's pkg/normalizer) rejects a profile whose
 * string_table[0] is not ""; whose mapping, function or location ids are not index + 1; whose string
 * indexes (mapping filename/build_id, function name/system_name/filename, sample and period type,
 * label key/str) are out of range; whose location mapping_id or line function_id is past the end of its
 * table; that has samples but no sample types; whose samples have a value count different from the
 * number of sample types, a location id of 0 or past the end; or that has a label with key 0.
 *
 * <p>On top of that, these rules catch profiles that Parca accepts but stores or shows wrongly, or that
 * go tool pprof rejects:
 * <ul>
 *   <li>string_table non-empty (pprof reads string 0 for every unset field);</li>
 *   <li>every other string index in range too (label num_unit, comment, drop/keep_frames,
 *       default_sample_type, doc_url), as pprof rejects any out-of-range index;</li>
 *   <li>sample and period type and unit are identifiers ({@code [a-zA-Z_][a-zA-Z0-9_]*}), because Parca
 *       names series {@code name:type:unit:period_type:period_unit[:delta]} and splits that on ':';</li>
 *   <li>time_nanos != 0 (Parca's sample timestamp) and duration_nanos > 0 (Parca marks a profile as delta,
 *       which ours are, by duration > 0);</li>
 *   <li>line function_id != 0 (pprof rejects a line without a function);</li>
 *   <li>line numbers and function start lines are not negative, and a mapping claims has_filenames,
 *       has_line_numbers or has_inline_frames only when one of its locations has a function with a file name, a
 *       line number, or more than one line: Parca and pprof take these flags as "this mapping is symbolized to
 *       that level" and would not look for what is missing;</li>
 *   <li>a label has exactly one of str or num (with optional num_unit): pprof and Parca drop a label with
 *       neither, and drop num from a label with both.</li>
 * </ul>
 */
public final class ParcaRules {
    private static final Pattern IDENTIFIER = Pattern.compile("[a-zA-Z_][a-zA-Z0-9_]*");

    private ParcaRules() {}

    /** All rule violations in {@code p}, one message each; empty if the profile is fine. */
    public static List<String> violations(Profile p) {
        List<String> v = new ArrayList<>();
        int strings = p.getStringTableCount();
        if (strings == 0) {
            v.add("string_table is empty; string_table[0] must be \"\"");
        } else if (!p.getStringTable(0).isEmpty()) {
            v.add("string_table[0] must be \"\", got \"" + p.getStringTable(0) + "\"");
        }

        if (p.getSampleCount() > 0 && p.getSampleTypeCount() == 0) {
            v.add("profile has samples but no sample_type");
        }
        for (int i = 0; i < p.getSampleTypeCount(); i++) {
            valueType(p, p.getSampleType(i), "sample_type[" + i + "]", v);
        }
        if (p.hasPeriodType()) {
            valueType(p, p.getPeriodType(), "period_type", v);
        }
        if (p.getTimeNanos() == 0) {
            v.add("time_nanos is 0");
        }
        if (p.getDurationNanos() <= 0) {
            v.add("duration_nanos must be > 0 (delta profile), got " + p.getDurationNanos());
        }

        for (int i = 0; i < p.getMappingCount(); i++) {
            Mapping m = p.getMapping(i);
            String at = "mapping[" + i + "]";
            if (m.getId() != i + 1) {
                v.add(at + ".id is " + Long.toUnsignedString(m.getId()) + ", must be " + (i + 1));
            }
            str(p, m.getFilename(), at + ".filename", v);
            str(p, m.getBuildId(), at + ".build_id", v);
        }
        for (int i = 0; i < p.getFunctionCount(); i++) {
            Function f = p.getFunction(i);
            String at = "function[" + i + "]";
            if (f.getId() != i + 1) {
                v.add(at + ".id is " + Long.toUnsignedString(f.getId()) + ", must be " + (i + 1));
            }
            str(p, f.getName(), at + ".name", v);
            str(p, f.getSystemName(), at + ".system_name", v);
            str(p, f.getFilename(), at + ".filename", v);
            if (f.getStartLine() < 0) {
                v.add(at + ".start_line is negative: " + f.getStartLine());
            }
        }
        boolean[][] evidence = new boolean[p.getMappingCount()][3]; // per mapping: a file name, a line number, inlining
        for (int i = 0; i < p.getLocationCount(); i++) {
            Location l = p.getLocation(i);
            String at = "location[" + i + "]";
            if (l.getId() != i + 1) {
                v.add(at + ".id is " + Long.toUnsignedString(l.getId()) + ", must be " + (i + 1));
            }
            if (!inTable(l.getMappingId(), p.getMappingCount()) && l.getMappingId() != 0) {
                v.add(at + ".mapping_id " + Long.toUnsignedString(l.getMappingId()) + " not in 0.." + p.getMappingCount());
            }
            for (int j = 0; j < l.getLineCount(); j++) {
                Line line = l.getLine(j);
                if (!inTable(line.getFunctionId(), p.getFunctionCount())) {
                    v.add(at + ".line[" + j + "].function_id " + Long.toUnsignedString(line.getFunctionId())
                            + " not in 1.." + p.getFunctionCount());
                } else if (inTable(l.getMappingId(), p.getMappingCount())) {
                    boolean[] e = evidence[(int) l.getMappingId() - 1];
                    e[0] |= p.getFunction((int) line.getFunctionId() - 1).getFilename() != 0;
                    e[1] |= line.getLine() > 0;
                    e[2] |= l.getLineCount() > 1;
                }
                if (line.getLine() < 0) {
                    v.add(at + ".line[" + j + "].line is negative: " + line.getLine());
                }
            }
        }
        for (int i = 0; i < p.getMappingCount(); i++) {
            Mapping m = p.getMapping(i);
            if (m.getHasFilenames() && !evidence[i][0]) {
                v.add("mapping[" + i + "].has_filenames is set but none of its locations' functions has a file name");
            }
            if (m.getHasLineNumbers() && !evidence[i][1]) {
                v.add("mapping[" + i + "].has_line_numbers is set but none of its locations has a line number");
            }
            if (m.getHasInlineFrames() && !evidence[i][2]) {
                v.add("mapping[" + i + "].has_inline_frames is set but none of its locations has inlined lines");
            }
        }

        for (int i = 0; i < p.getSampleCount(); i++) {
            Sample s = p.getSample(i);
            String at = "sample[" + i + "]";
            if (s.getValueCount() != p.getSampleTypeCount()) {
                v.add(at + " has " + s.getValueCount() + " values for " + p.getSampleTypeCount() + " sample types");
            }
            for (int j = 0; j < s.getLocationIdCount(); j++) {
                long id = s.getLocationId(j);
                if (!inTable(id, p.getLocationCount())) {
                    v.add(at + ".location_id[" + j + "] " + Long.toUnsignedString(id) + " not in 1.." + p.getLocationCount());
                }
            }
            for (int j = 0; j < s.getLabelCount(); j++) {
                Label l = s.getLabel(j);
                String lat = at + ".label[" + j + "]";
                if (l.getKey() == 0) {
                    v.add(lat + " has no key");
                }
                str(p, l.getKey(), lat + ".key", v);
                str(p, l.getStr(), lat + ".str", v);
                str(p, l.getNumUnit(), lat + ".num_unit", v);
                boolean numeric = l.getNum() != 0 || l.getNumUnit() != 0;
                if (l.getStr() == 0 && !numeric) {
                    v.add(lat + " has neither str nor num");
                } else if (l.getStr() != 0 && numeric) {
                    v.add(lat + " has both str and num");
                }
            }
        }

        for (int i = 0; i < p.getCommentCount(); i++) {
            str(p, p.getComment(i), "comment[" + i + "]", v);
        }
        str(p, p.getDropFrames(), "drop_frames", v);
        str(p, p.getKeepFrames(), "keep_frames", v);
        str(p, p.getDefaultSampleType(), "default_sample_type", v);
        str(p, p.getDocUrl(), "doc_url", v);
        return v;
    }

    /** Throws if {@link #violations} finds anything, listing every violation. */
    public static void requireValid(Profile p) {
        List<String> v = violations(p);
        if (!v.isEmpty()) {
            throw new IllegalArgumentException("profile breaks " + v.size() + " Parca rule(s): " + String.join("; ", v));
        }
    }

    /**
     * Whether {@code name} may be a Prometheus (and so Parca series) label name:
     * {@code [a-zA-Z_][a-zA-Z0-9_]*}, and not starting with "__" (reserved) unless it is {@code __name__}.
     */
    public static boolean isValidPrometheusLabelName(String name) {
        return name != null && IDENTIFIER.matcher(name).matches() && (!name.startsWith("__") || name.equals("__name__"));
    }

    /** Whether a 1-based id (unsigned) refers to an entry of a table with {@code size} entries. */
    private static boolean inTable(long id, int size) {
        return id != 0 && Long.compareUnsigned(id, size) <= 0;
    }

    private static void valueType(Profile p, ValueType t, String at, List<String> v) {
        identifier(p, t.getType(), at + ".type", v);
        identifier(p, t.getUnit(), at + ".unit", v);
    }

    private static void identifier(Profile p, long idx, String at, List<String> v) {
        if (str(p, idx, at, v) && !IDENTIFIER.matcher(p.getStringTable((int) idx)).matches()) {
            v.add(at + " \"" + p.getStringTable((int) idx) + "\" is not an identifier");
        }
    }

    /** Index 0 ("") is always fine; an empty table is reported once, above. */
    private static boolean str(Profile p, long idx, String at, List<String> v) {
        int n = p.getStringTableCount();
        if (idx == 0 && n == 0) {
            return false;
        }
        if (idx < 0 || idx >= n) {
            v.add(at + " string index " + idx + " not in 0.." + (n - 1));
            return false;
        }
        return true;
    }
}
