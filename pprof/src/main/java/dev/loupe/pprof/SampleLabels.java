package dev.loupe.pprof;

import dev.loupe.pprof.proto.Label;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;

import java.util.Map;

/** Labels put on every sample of a finished profile (e.g. {@code node} in a host's local files). */
public final class SampleLabels {
    private SampleLabels() {}

    /**
     * {@code profile} with each string label of {@code labels} on every sample, unless the sample already has a
     * label of that key (its own value wins). Strings are appended to the table: ids already used stay valid.
     */
    public static Profile withEverySample(Profile profile, Map<String, String> labels) {
        if (labels.isEmpty() || profile.getSampleCount() == 0) {
            return profile;
        }
        Profile.Builder b = profile.toBuilder();
        long[][] pairs = new long[labels.size()][];
        int i = 0;
        for (var e : labels.entrySet()) {
            long key = b.getStringTableCount();
            b.addStringTable(e.getKey());
            long value = b.getStringTableCount();
            b.addStringTable(e.getValue());
            pairs[i++] = new long[] {key, value};
        }
        for (int s = 0; s < b.getSampleCount(); s++) {
            Sample sample = b.getSample(s);
            Sample.Builder sb = null;
            for (long[] kv : pairs) {
                String key = b.getStringTable((int) kv[0]);
                boolean has = false;
                for (Label l : sample.getLabelList()) {
                    has |= b.getStringTable((int) l.getKey()).equals(key);
                }
                if (!has) {
                    sb = sb == null ? sample.toBuilder() : sb;
                    sb.addLabel(Label.newBuilder().setKey(kv[0]).setStr(kv[1]));
                }
            }
            if (sb != null) {
                b.setSample(s, sb);
            }
        }
        return b.build();
    }
}
