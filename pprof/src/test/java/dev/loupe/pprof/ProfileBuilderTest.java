package dev.loupe.pprof;

import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.ValueType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProfileBuilderTest {
    private static final long PERIOD = 1_000_000_000L / 19;

    static Profile sampleProfile() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, 1_700_000_000_000_000_000L);
        long m = b.mapping(0x400000, 0x401000, 0, "/bin/app", "abcdef", true);
        long leaf = b.location(m, 0x400100, "hot", null);
        long root = b.location(m, 0x400200, "main", null);
        long bare = b.location(0, 0x7fff0000, null, null);
        List<Label> labels = List.of(Label.num("pid", 42), Label.str("comm", "app"));
        b.addSample(new long[] {leaf, root}, 1, labels);
        b.addSample(new long[] {leaf, root}, 2, labels);
        b.addSample(new long[] {bare, root}, 1, List.of(Label.num("pid", 43)));
        return b.build(1_700_000_010_000_000_000L);
    }

    @Test
    void deduplicatesAndAggregates() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, 1);
        long m1 = b.mapping(0x1000, 0x2000, 0, "/a", null, true);
        long m2 = b.mapping(0x1000, 0x2000, 0, "/a", null, true);
        long m3 = b.mapping(0x3000, 0x4000, 0, "/a", null, true);
        assertEquals(1, m1);
        assertEquals(m1, m2);
        assertEquals(2, m3);
        long l1 = b.location(m1, 0x1100, "f", null);
        assertEquals(l1, b.location(m1, 0x1100, "f", null));
        long l2 = b.location(m3, 0x3100, "f", null);
        assertEquals(2, l2);
        b.addSample(new long[] {l1}, 1, List.of(Label.num("pid", 1)));
        b.addSample(new long[] {l1}, 1, List.of(Label.num("pid", 1)));
        b.addSample(new long[] {l1}, 1, List.of(Label.num("pid", 2)));
        assertEquals(2, b.sampleCount());
        assertEquals(3, b.totalCount());
        Profile p = b.build(11);
        assertEquals(1, p.getFunctionCount(), "one function shared by two locations");
        assertEquals(List.of(2L, 2 * PERIOD), p.getSample(0).getValueList());
        assertEquals(10, p.getDurationNanos());
    }

    @Test
    void cpuProfileShape() {
        Profile p = sampleProfile();
        assertEquals("", p.getStringTable(0));
        assertEquals(List.of("samples/count", "cpu/nanoseconds"),
                p.getSampleTypeList().stream().map(t -> str(p, t)).toList());
        assertEquals("cpu/nanoseconds", str(p, p.getPeriodType()));
        assertEquals(PERIOD, p.getPeriod());
        assertEquals(1_700_000_000_000_000_000L, p.getTimeNanos());
        assertEquals(10_000_000_000L, p.getDurationNanos());
        assertEquals("abcdef", p.getStringTable((int) p.getMapping(0).getBuildId()));
        assertTrue(p.getMapping(0).getHasFunctions());
        assertEquals(0, p.getLocation(2).getLineCount(), "unsymbolized address stays bare");
        assertEquals(0, p.getLocation(2).getMappingId());
        assertEquals(List.of(), ParcaRules.violations(p));
    }

    private static String str(Profile p, ValueType t) {
        return p.getStringTable((int) t.getType()) + "/" + p.getStringTable((int) t.getUnit());
    }

    @Test
    void rejectsUnknownIds() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, 1);
        assertThrows(IllegalArgumentException.class, () -> b.location(3, 1, "x", null));
        assertThrows(IllegalArgumentException.class, () -> b.addSample(new long[] {1}, 1, List.of()));
    }

    /** Field numbers and wire types checked against bytes derived by hand from profile.proto. */
    @Test
    void wireFormatIsByteExact() {
        ProfileBuilder b = new ProfileBuilder(10, 5);
        long m = b.mapping(1, 2, 0, "f", null, true);
        long l = b.location(m, 3, "g", null);
        b.addSample(new long[] {l}, 1, List.of(Label.num("p", 7)));
        byte[] bytes = b.build(6).toByteArray();
        String hex = HexFormat.of().formatHex(bytes);
        // string table, in interning order: ""(0) f(1) g(2) samples(3) count(4) cpu(5) nanoseconds(6) p(7)
        String expected = ""
                + "0a04" + "0803" + "1004"            // field 1 sample_type {type=3 unit=4}
                + "0a04" + "0805" + "1006"            // field 1 sample_type {type=5 unit=6}
                + "120d" + "0a0101" + "1202010a"      // field 2 sample {location_id=[1] packed, value=[1,10] packed,
                + "1a04" + "0807" + "1807"            //   label {key=7 num=7}}
                + "1a0a" + "0801" + "1001" + "1802" + "2801" + "3801" // field 3 mapping {id=1 start=1 limit=2 filename=1 has_functions}
                + "220a" + "0801" + "1001" + "1803" + "2202" + "0801" // field 4 location {id=1 mapping=1 address=3 line{function_id=1}}
                + "2a06" + "0801" + "1002" + "1802"   // field 5 function {id=1 name=2 system_name=2}
                + "3200" + "3201" + "66" + "3201" + "67" + "3207" + "73616d706c6573" + "3205" + "636f756e74"
                + "3203" + "637075" + "320b" + "6e616e6f7365636f6e6473" + "3201" + "70" // field 6 string_table
                + "4805" + "5001"                     // field 9 time_nanos=5, field 10 duration_nanos=1
                + "5a04" + "0805" + "1006"            // field 11 period_type {type=5 unit=6}
                + "600a";                             // field 12 period=10
        assertEquals(expected, hex);
    }

    @Test
    void gzipRoundTripAndAtomicWrite(@TempDir Path dir) throws Exception {
        Profile p = sampleProfile();
        byte[] gz = PprofFiles.gzip(p);
        assertEquals(0x1f, gz[0] & 0xff);
        assertEquals(0x8b, gz[1] & 0xff);
        assertEquals(p, PprofFiles.parse(gz));
        assertEquals(p, PprofFiles.parse(p.toByteArray()));
        Path f = dir.resolve("sub/cpu.pb.gz");
        PprofFiles.writeAtomically(p, f);
        assertEquals(p, PprofFiles.parse(Files.readAllBytes(f)));
        try (var s = Files.list(f.getParent())) {
            assertEquals(List.of(f.getFileName().toString()), s.map(x -> x.getFileName().toString()).toList(), "no temp file left");
        }
        assertArrayEquals(gz, PprofFiles.gzip(p), "deterministic");
    }
}
