package dev.loupe.pprof;

import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each of Parca's rules, broken one at a time on an otherwise valid profile. */
class ParcaRulesTest {
    private static final Profile VALID = ProfileBuilderTest.sampleProfile();

    private static void rejects(String expect, UnaryOperator<Profile.Builder> breakIt) {
        List<String> v = ParcaRules.violations(breakIt.apply(VALID.toBuilder()).build());
        assertFalse(v.isEmpty(), "should be rejected: " + expect);
        assertTrue(v.stream().anyMatch(s -> s.contains(expect)), v + " should mention " + expect);
        assertThrows(IllegalArgumentException.class, () -> ParcaRules.requireValid(breakIt.apply(VALID.toBuilder()).build()));
    }

    @Test
    void validProfilePasses() {
        assertEquals(List.of(), ParcaRules.violations(VALID));
        ParcaRules.requireValid(VALID);
    }

    @Test
    void stringTableMustStartEmpty() {
        rejects("string_table[0]", b -> b.setStringTable(0, "x"));
        rejects("string_table[0]", Profile.Builder::clearStringTable);
    }

    @Test
    void typeNamesMustBeIdentifiers() {
        rejects("not identifier-like", b -> b.setStringTable((int) VALID.getSampleType(0).getType(), "alloc-size"));
    }

    @Test
    void timeAndDurationRequired() {
        rejects("time_nanos", b -> b.setTimeNanos(0));
        rejects("duration_nanos", b -> b.setDurationNanos(0));
    }

    @Test
    void idsEqualIndexPlusOne() {
        rejects("mapping[0].id", b -> b.setMapping(0, b.getMapping(0).toBuilder().setId(5)));
        rejects("location[1].id", b -> b.setLocation(1, b.getLocation(1).toBuilder().setId(1)));
        rejects("function[0].id", b -> b.setFunction(0, b.getFunction(0).toBuilder().setId(0)));
    }

    @Test
    void referencesInRange() {
        rejects("mapping_id", b -> b.setLocation(0, b.getLocation(0).toBuilder().setMappingId(9)));
        rejects("function_id", b -> b.setLocation(0, b.getLocation(0).toBuilder().setLine(0,
                b.getLocation(0).getLine(0).toBuilder().setFunctionId(0))));
        rejects("location id 0", b -> b.setSample(0, b.getSample(0).toBuilder().setLocationId(0, 0)));
        rejects("location id 99", b -> b.setSample(0, b.getSample(0).toBuilder().setLocationId(0, 99)));
        rejects("string index", b -> b.setMapping(0, b.getMapping(0).toBuilder().setFilename(1000)));
    }

    @Test
    void valuesMatchSampleTypes() {
        rejects("values for 2 sample types", b -> b.setSample(0, Sample.newBuilder(b.getSample(0)).clearValue().addValue(1)));
    }

    @Test
    void labelsNeedKeys() {
        rejects("empty key", b -> b.setSample(0, b.getSample(0).toBuilder().setLabel(0,
                b.getSample(0).getLabel(0).toBuilder().setKey(0))));
    }

    @Test
    void prometheusLabelNames() {
        assertTrue(ParcaRules.isValidPrometheusLabelName("__name__"));
        assertTrue(ParcaRules.isValidPrometheusLabelName("node_1"));
        assertFalse(ParcaRules.isValidPrometheusLabelName("__reserved"));
        assertFalse(ParcaRules.isValidPrometheusLabelName("1abc"));
        assertFalse(ParcaRules.isValidPrometheusLabelName("a-b"));
    }
}
