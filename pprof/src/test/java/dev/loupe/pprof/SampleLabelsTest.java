package dev.loupe.pprof;

import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

class SampleLabelsTest {
    @Test
    void everySampleGetsTheLabelUnlessItHasItsOwn() {
        ProfileBuilder b = new ProfileBuilder(10_000_000L, 1_000_000_000L);
        long app = b.mapping(0x400000, 0x500000, 0, "/usr/bin/app", "ef01", true);
        long main = b.location(app, 0x401000, "main", null);
        b.addSample(new long[] {main}, 3, List.of(Label.num("pid", 7)));
        b.addSample(new long[] {main}, 2, List.of(Label.str("node", "elsewhere")));
        Profile p = b.build(2_000_000_000L);

        Profile labelled = SampleLabels.withEverySample(p, Map.of("node", "host-a"));
        assertEquals(List.of("pid=7 node=host-a", "node=elsewhere"), labels(labelled));
        assertEquals(p.getSampleCount(), labelled.getSampleCount());
        assertEquals(p.getLocationList(), labelled.getLocationList());
        assertEquals(List.of(), ParcaRules.violations(labelled));
        assertSame(p, SampleLabels.withEverySample(p, Map.of()));
    }

    private static List<String> labels(Profile p) {
        List<String> out = new ArrayList<>();
        for (Sample s : p.getSampleList()) {
            List<String> l = new ArrayList<>();
            for (var label : s.getLabelList()) {
                String key = p.getStringTable((int) label.getKey());
                l.add(key + "=" + (label.getStr() != 0 ? p.getStringTable((int) label.getStr()) : Long.toString(label.getNum())));
            }
            out.add(String.join(" ", l));
        }
        return out;
    }
}
