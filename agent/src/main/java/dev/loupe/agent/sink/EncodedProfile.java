package dev.loupe.agent.sink;

import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * One finished profile, serialized and gzipped once for every sink, with the labels of the series it
 * belongs to (Parca's series labels; Kafka derives its record key from them).
 *
 * @param profileType    what it measures, e.g. {@code cpu}; also the file name prefix
 * @param labels         series labels, sorted by name; always contains {@code __name__}
 * @param timeNanos      start, wall clock, ns since the epoch (the profile's time_nanos)
 * @param durationNanos  length of the window (monotonic)
 * @param gzippedPprof   the serialized profile.proto, gzipped, with the series labels (but {@code __name__}) and the
 *                       external labels on every sample: what local files hold
 * @param samples        number of samples in it (0: an empty interval)
 * @param profile        the same profile decoded (immutable), for sinks that re-shape it (one series per process)
 */
public record EncodedProfile(String profileType, SortedMap<String, String> labels, long timeNanos, long durationNanos,
                             byte[] gzippedPprof, int samples, dev.loupe.pprof.proto.Profile profile) {
    public EncodedProfile {
        Objects.requireNonNull(profileType, "profileType");
        Objects.requireNonNull(gzippedPprof, "gzippedPprof");
        Objects.requireNonNull(profile, "profile");
        labels = java.util.Collections.unmodifiableSortedMap(new TreeMap<>(labels));
        if (!labels.containsKey("__name__")) {
            throw new IllegalArgumentException("series labels need __name__: " + labels);
        }
    }

    /** A stable id of the series (name and labels), e.g. for a Kafka record key. */
    public String seriesId() {
        StringBuilder b = new StringBuilder(labels.get("__name__")).append('{');
        boolean first = true;
        for (Map.Entry<String, String> e : labels.entrySet()) {
            if (e.getKey().equals("__name__")) {
                continue;
            }
            if (!first) {
                b.append(',');
            }
            first = false;
            b.append(e.getKey()).append("=\"").append(e.getValue().replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
        }
        return b.append('}').toString();
    }
}
