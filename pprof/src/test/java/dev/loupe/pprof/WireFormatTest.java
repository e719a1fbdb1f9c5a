package dev.loupe.pprof;

import dev.loupe.pprof.proto.Function;
import dev.loupe.pprof.proto.Line;
import dev.loupe.pprof.proto.Location;
import dev.loupe.pprof.proto.Mapping;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import dev.loupe.pprof.proto.ValueType;
import org.junit.jupiter.api.Test;

import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Every field of profile.proto serialized and compared with bytes worked out by hand from the field
 * numbers: a tag byte is (field << 3) | wire type, wire type 0 = varint, 2 = length-delimited; proto3
 * packs repeated numbers into one length-delimited field. A wrong field number or type fails here.
 */
class WireFormatTest {
    private static final HexFormat HEX = HexFormat.of();

    @Test
    void valueType() {
        assertEquals("08011002", HEX.formatHex(ValueType.newBuilder().setType(1).setUnit(2).build().toByteArray()));
    }

    @Test
    void everyFieldOfEveryMessage() {
        Profile p = Profile.newBuilder()
                .addSampleType(ValueType.newBuilder().setType(1).setUnit(2))
                .addSample(Sample.newBuilder().addLocationId(1).addLocationId(2).addValue(300)
                        .addLabel(dev.loupe.pprof.proto.Label.newBuilder().setKey(3).setNum(-1).setNumUnit(2))
                        .addLabel(dev.loupe.pprof.proto.Label.newBuilder().setKey(3).setStr(1)))
                .addMapping(Mapping.newBuilder().setId(1).setMemoryStart(0x1000).setMemoryLimit(0x2000)
                        .setFileOffset(0x10).setFilename(4).setBuildId(3).setHasFunctions(true)
                        .setHasFilenames(true).setHasLineNumbers(true).setHasInlineFrames(true))
                .addLocation(Location.newBuilder().setId(1).setMappingId(1).setAddress(0x1234)
                        .addLine(Line.newBuilder().setFunctionId(1).setLine(7).setColumn(2)))
                .addLocation(Location.newBuilder().setId(2).setAddress(5).setIsFolded(true))
                .addFunction(Function.newBuilder().setId(1).setName(5).setSystemName(5).setFilename(4).setStartLine(3))
                .addStringTable("").addStringTable("cpu").addStringTable("nanoseconds").addStringTable("pid")
                .addStringTable("/bin/x").addStringTable("main")
                .setDropFrames(1).setKeepFrames(2)
                .setTimeNanos(1)
                .setDurationNanos(128)
                .setPeriodType(ValueType.newBuilder().setType(1).setUnit(2))
                .setPeriod(10_000_000)
                .addComment(3)
                .setDefaultSampleType(1)
                .setDocUrl(2)
                .build();
        String expected = ""
                // 1 sample_type {type=1 unit=2}
                + "0a04" + "0801" + "1002"
                // 2 sample, 31 bytes:
                + "121f"
                + "0a02" + "0102"                 //   1 location_id packed [1, 2]
                + "1202" + "ac02"                 //   2 value packed [300]: 300 = 0b10_0101100 -> ac 02
                + "1a0f" + "0803" + "18" + "ffffffffffffffffff01" + "2002" // 3 label {key=3 num=-1 (10-byte varint) num_unit=2}
                + "1a04" + "0803" + "1001"        //   3 label {key=3 str=1}
                // 3 mapping, 22 bytes: id=1 start=0x1000 (80 20) limit=0x2000 (80 40) offset=0x10 filename=4
                //   build_id=3 has_functions has_filenames has_line_numbers has_inline_frames (fields 7..10)
                + "1a16" + "0801" + "108020" + "188040" + "2010" + "2804" + "3003" + "3801" + "4001" + "4801" + "5001"
                // 4 location, 15 bytes: id=1 mapping_id=1 address=0x1234 (b4 24) line {function_id=1 line=7 column=2}
                + "220f" + "0801" + "1001" + "18b424" + "2206" + "0801" + "1007" + "1802"
                // 4 location: id=2 address=5 is_folded
                + "2206" + "0802" + "1805" + "2801"
                // 5 function: id=1 name=5 system_name=5 filename=4 start_line=3
                + "2a0a" + "0801" + "1005" + "1805" + "2004" + "2803"
                // 6 string_table: "" "cpu" "nanoseconds" "pid" "/bin/x" "main"
                + "3200" + "3203" + "637075" + "320b" + "6e616e6f7365636f6e6473" + "3203" + "706964"
                + "3206" + "2f62696e2f78" + "3204" + "6d61696e"
                + "3801"                          // 7 drop_frames=1
                + "4002"                          // 8 keep_frames=2
                + "4801"                          // 9 time_nanos=1
                + "508001"                        // 10 duration_nanos=128 -> 80 01
                + "5a04" + "0801" + "1002"        // 11 period_type {type=1 unit=2}
                + "6080ade204"                    // 12 period=10,000,000 = 4<<21 | 98<<14 | 45<<7 | 0
                + "6a01" + "03"                   // 13 comment packed [3]
                + "7001"                          // 14 default_sample_type=1
                + "7802";                         // 15 doc_url=2
        assertEquals(expected, HEX.formatHex(p.toByteArray()));
        assertEquals(p, PprofFiles.parse(HEX.parseHex(expected)), "and the bytes parse back");
    }
}
