package dev.loupe.pprof;

import dev.loupe.pprof.proto.Profile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each rule broken on its own on a valid builder profile: the profile must then have exactly the one
 * expected violation (so no rule hides behind another) and requireValid must throw. Boundary values that
 * are allowed are checked to pass.
 */
class ParcaRulesTest {
    private static final Profile VALID = ProfileBuilderTest.sampleProfile();
    private static final int STRINGS = VALID.getStringTableCount();

    private static List<String> after(Consumer<Profile.Builder> edit) {
        Profile.Builder b = VALID.toBuilder();
        edit.accept(b);
        return ParcaRules.violations(b.build());
    }

    private static void onlyViolation(String expected, Consumer<Profile.Builder> edit) {
        List<String> v = after(edit);
        assertEquals(1, v.size(), "expected one violation mentioning '" + expected + "', got " + v);
        assertTrue(v.get(0).contains(expected), v.get(0) + " should mention " + expected);
        Profile.Builder b = VALID.toBuilder();
        edit.accept(b);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ParcaRules.requireValid(b.build()));
        assertTrue(e.getMessage().contains(v.get(0)), e.getMessage());
    }

    private static void accepted(Consumer<Profile.Builder> edit) {
        assertEquals(List.of(), after(edit));
    }

    private static int string(String s) {
        int i = VALID.getStringTableList().indexOf(s);
        assertTrue(i > 0, s);
        return i;
    }

    @Test
    void builderOutputIsValid() {
        assertEquals(List.of(), ParcaRules.violations(VALID));
        assertDoesNotThrow(() -> ParcaRules.requireValid(VALID));
        // Sanity: the profile exercises what the rules look at.
        assertEquals(3, VALID.getLocationCount());
        assertEquals(3, VALID.getSample(0).getLabelCount());
        assertEquals(1, VALID.getCommentCount());
    }

    @Test
    void mappingFlagsNeedLocationsThatHaveWhatTheyClaim() {
        onlyViolation("mapping[0].has_line_numbers is set but none of its locations has a line number",
                b -> b.setMapping(0, b.getMapping(0).toBuilder().setHasLineNumbers(true)));
        onlyViolation("mapping[0].has_inline_frames is set but none of its locations has inlined lines",
                b -> b.setMapping(0, b.getMapping(0).toBuilder().setHasInlineFrames(true)));
        onlyViolation("mapping[0].has_filenames is set but none of its locations' functions has a file name",
                b -> {
                    for (int i = 0; i < b.getFunctionCount(); i++) {
                        b.setFunction(i, b.getFunction(i).toBuilder().setFilename(0));
                    }
                    b.setMapping(0, b.getMapping(0).toBuilder().setHasFilenames(true));
                });
    }

    @Test
    void lineNumbersMustNotBeNegative() {
        onlyViolation("location[0].line[0].line is negative: -3", b -> b.setLocation(0,
                b.getLocation(0).toBuilder().setLine(0, b.getLocation(0).getLine(0).toBuilder().setLine(-3))));
        onlyViolation("function[0].start_line is negative: -1", b -> b.setFunction(0, b.getFunction(0).toBuilder().setStartLine(-1)));
    }

    @Test
    void stringTableMustNotBeEmpty() {
        Profile bare = Profile.newBuilder().setTimeNanos(1).setDurationNanos(1).build();
        List<String> v = ParcaRules.violations(bare);
        assertEquals(1, v.size(), v.toString());
        assertTrue(v.get(0).contains("string_table is empty"));
        assertTrue(after(Profile.Builder::clearStringTable).contains("string_table is empty; string_table[0] must be \"\""));
    }

    @Test
    void firstStringMustBeEmpty() {
        onlyViolation("string_table[0] must be \"\", got \"x\"", b -> b.setStringTable(0, "x"));
    }

    @Test
    void samplesNeedSampleTypes() {
        List<String> v = after(Profile.Builder::clearSampleType);
        assertTrue(v.contains("profile has samples but no sample_type"), v.toString());
        accepted(b -> b.clearSampleType().clearSample());
    }

    @Test
    void sampleTypeNamesMustBeIdentifiers() {
        onlyViolation("sample_type[0].type \"samples-taken\" is not an identifier",
                b -> b.setStringTable(string("samples"), "samples-taken"));
        onlyViolation("sample_type[1].unit \"\" is not an identifier",
                b -> b.getSampleTypeBuilder(1).setUnit(0));
        onlyViolation("sample_type[0].type \"1st\" is not an identifier", b -> b.setStringTable(string("samples"), "1st"));
        accepted(b -> b.setStringTable(string("samples"), "_Samples_2"));
    }

    @Test
    void periodTypeNamesMustBeIdentifiers() {
        onlyViolation("period_type.type \"/bin/app\" is not an identifier",
                b -> b.getPeriodTypeBuilder().setType(string("/bin/app")));
        onlyViolation("period_type.unit \"\" is not an identifier", b -> b.getPeriodTypeBuilder().setUnit(0));
    }

    @Test
    void timeNanosMustBeSet() {
        onlyViolation("time_nanos is 0", b -> b.setTimeNanos(0));
    }

    @Test
    void durationMustBePositive() {
        onlyViolation("duration_nanos must be > 0 (delta profile), got 0", b -> b.setDurationNanos(0));
        onlyViolation("duration_nanos must be > 0 (delta profile), got -1", b -> b.setDurationNanos(-1));
        accepted(b -> b.setDurationNanos(1));
    }

    @Test
    void mappingIdsAreIndexPlusOne() {
        onlyViolation("mapping[0].id is 2, must be 1", b -> b.getMappingBuilder(0).setId(2));
        onlyViolation("mapping[0].id is 0, must be 1", b -> b.getMappingBuilder(0).setId(0));
    }

    @Test
    void functionIdsAreIndexPlusOne() {
        onlyViolation("function[1].id is 1, must be 2", b -> b.getFunctionBuilder(1).setId(1));
    }

    @Test
    void locationIdsAreIndexPlusOne() {
        onlyViolation("location[2].id is 4, must be 3", b -> b.getLocationBuilder(2).setId(4));
        onlyViolation("location[0].id is 18446744073709551615, must be 1", b -> b.getLocationBuilder(0).setId(-1));
    }

    @Test
    void locationMappingIdIsZeroOrInRange() {
        onlyViolation("location[0].mapping_id 2 not in 0..1", b -> b.getLocationBuilder(0).setMappingId(2));
        onlyViolation("location[0].mapping_id 18446744073709551615", b -> b.getLocationBuilder(0).setMappingId(-1));
        accepted(b -> b.getLocationBuilder(0).setMappingId(0));
        accepted(b -> b.getLocationBuilder(2).setMappingId(1));
    }

    @Test
    void lineFunctionIdIsInRangeAndNotZero() {
        onlyViolation("location[0].line[0].function_id 0 not in 1..2",
                b -> b.getLocationBuilder(0).getLineBuilder(0).setFunctionId(0));
        onlyViolation("location[1].line[0].function_id 3 not in 1..2",
                b -> b.getLocationBuilder(1).getLineBuilder(0).setFunctionId(3));
        accepted(b -> b.getLocationBuilder(0).getLineBuilder(0).setFunctionId(2));
    }

    @Test
    void sampleLocationIdsAreInRangeAndNotZero() {
        onlyViolation("sample[0].location_id[1] 0 not in 1..3", b -> b.getSampleBuilder(0).setLocationId(1, 0));
        onlyViolation("sample[1].location_id[0] 4 not in 1..3", b -> b.getSampleBuilder(1).setLocationId(0, 4));
        onlyViolation("sample[1].location_id[0] 18446744073709551615", b -> b.getSampleBuilder(1).setLocationId(0, -1));
        accepted(b -> b.getSampleBuilder(0).setLocationId(0, 3));
    }

    @Test
    void eachSampleHasOneValuePerSampleType() {
        onlyViolation("sample[1] has 1 values for 2 sample types",
                b -> b.getSampleBuilder(1).clearValue().addValue(5));
        onlyViolation("sample[0] has 3 values for 2 sample types", b -> b.getSampleBuilder(0).addValue(5));
    }

    @Test
    void labelsNeedAKey() {
        onlyViolation("sample[0].label[0] has no key", b -> b.getSampleBuilder(0).getLabelBuilder(0).setKey(0));
    }

    @Test
    void labelsHaveExactlyOneOfStrOrNum() {
        onlyViolation("sample[1].label[0] has neither str nor num", b -> b.getSampleBuilder(1).getLabelBuilder(0).setNum(0));
        onlyViolation("sample[0].label[1] has both str and num", b -> b.getSampleBuilder(0).getLabelBuilder(1).setNum(7));
        onlyViolation("sample[0].label[0] has both str and num",
                b -> b.getSampleBuilder(0).getLabelBuilder(0).setStr(string("app")));
        // A zero with a unit is a real numeric label: pprof keeps it.
        accepted(b -> b.getSampleBuilder(0).getLabelBuilder(2).setNum(0));
    }

    /** Every string reference: out of range is the one violation; the last index is fine. */
    record StringRef(String name, boolean mustBeIdentifier, BiConsumer<Profile.Builder, Long> set) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<StringRef> stringRefs() {
        return Stream.of(
                new StringRef("mapping[0].filename", false, (b, i) -> b.getMappingBuilder(0).setFilename(i)),
                new StringRef("mapping[0].build_id", false, (b, i) -> b.getMappingBuilder(0).setBuildId(i)),
                new StringRef("function[0].name", false, (b, i) -> b.getFunctionBuilder(0).setName(i)),
                new StringRef("function[1].system_name", false, (b, i) -> b.getFunctionBuilder(1).setSystemName(i)),
                new StringRef("function[0].filename", false, (b, i) -> b.getFunctionBuilder(0).setFilename(i)),
                new StringRef("sample[0].label[1].key", false, (b, i) -> b.getSampleBuilder(0).getLabelBuilder(1).setKey(i)),
                new StringRef("sample[0].label[1].str", false, (b, i) -> b.getSampleBuilder(0).getLabelBuilder(1).setStr(i)),
                new StringRef("sample[0].label[2].num_unit", false,
                        (b, i) -> b.getSampleBuilder(0).getLabelBuilder(2).setNumUnit(i)),
                new StringRef("comment[0]", false, (b, i) -> b.setComment(0, i)),
                new StringRef("drop_frames", false, Profile.Builder::setDropFrames),
                new StringRef("keep_frames", false, Profile.Builder::setKeepFrames),
                new StringRef("default_sample_type", false, Profile.Builder::setDefaultSampleType),
                new StringRef("doc_url", false, Profile.Builder::setDocUrl),
                new StringRef("sample_type[1].type", true, (b, i) -> b.getSampleTypeBuilder(1).setType(i)),
                new StringRef("period_type.unit", true, (b, i) -> b.getPeriodTypeBuilder().setUnit(i)));
    }

    @ParameterizedTest
    @MethodSource("stringRefs")
    void stringIndexesAreInRange(StringRef ref) {
        onlyViolation(ref.name() + " string index " + STRINGS + " not in 0.." + (STRINGS - 1),
                b -> ref.set().accept(b, (long) STRINGS));
        onlyViolation(ref.name() + " string index -1 not in", b -> ref.set().accept(b, -1L));
        if (!ref.mustBeIdentifier()) {
            accepted(b -> ref.set().accept(b, (long) STRINGS - 1));
        }
    }

    @Test
    void requireValidListsEveryViolation() {
        Profile broken = VALID.toBuilder().setTimeNanos(0).setDurationNanos(0).build();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ParcaRules.requireValid(broken));
        assertTrue(e.getMessage().contains("2 Parca rule(s)"), e.getMessage());
        assertTrue(e.getMessage().contains("time_nanos is 0"), e.getMessage());
        assertTrue(e.getMessage().contains("duration_nanos must be > 0"), e.getMessage());
    }

    @Test
    void prometheusLabelNames() {
        for (String ok : List.of("__name__", "node", "node_1", "_x", "A9", "_")) {
            assertTrue(ParcaRules.isValidPrometheusLabelName(ok), ok);
        }
        for (String bad : List.of("", "__reserved", "__", "1abc", "a-b", "a.b", "a b", "pid:x", "é")) {
            assertFalse(ParcaRules.isValidPrometheusLabelName(bad), bad);
        }
        assertFalse(ParcaRules.isValidPrometheusLabelName(null));
    }
}
