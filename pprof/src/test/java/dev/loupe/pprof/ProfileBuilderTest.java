package dev.loupe.pprof;

import dev.loupe.pprof.proto.Function;
import dev.loupe.pprof.proto.Line;
import dev.loupe.pprof.proto.Location;
import dev.loupe.pprof.proto.Mapping;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import dev.loupe.pprof.proto.ValueType;
import org.junit.jupiter.api.Test;

import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProfileBuilderTest {
    static final long PERIOD = 1_000_000_000L / 19;
    static final long T0 = 1_700_000_000_000_000_000L;

    /** A small profile using every builder feature; {@link ParcaRulesTest} breaks it rule by rule. */
    static Profile sampleProfile() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        long m = b.mapping(0x400000, 0x401000, 0, "/bin/app", "abcdef", true);
        long leaf = b.location(m, 0x400100, "hot", "app.c");
        long root = b.location(m, 0x400200, "main", "app.c");
        long bare = b.location(0, 0xffffffff81000000L, null, null);
        b.addSample(new long[] {leaf, root}, 2,
                List.of(Label.num("pid", 42), Label.str("comm", "app"), Label.num("rss", 4096, "bytes")));
        b.addSample(new long[] {bare, leaf, root}, 1, List.of(Label.num("pid", 43)));
        b.comment("loupe test");
        return b.build(T0 + 10_000_000_000L);
    }

    /**
     * Many locations through {@link ProfileBuilder#location}: repeated and new addresses, one address under
     * several names, mappings spelled with an unknown build id or path two ways, functions in two files.
     */
    static Profile mixedProfile() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        Random r = new Random(14);
        List<String> names = List.of("main", "work", "hot", "memcpy", "read");
        long[] stack = new long[16];
        for (int sample = 0; sample < 2000; sample++) {
            int depth = 1 + r.nextInt(stack.length);
            for (int i = 0; i < depth; i++) {
                int mapping = r.nextInt(5);
                long m = switch (mapping) {
                    case 0 -> 0;
                    case 1 -> b.mapping(0x400000, 0x480000, 0, "/bin/app", r.nextBoolean() ? "" : null, true);
                    case 2 -> b.mapping(0x400000, 0x480000, 0, r.nextBoolean() ? "" : null, null, false);
                    case 3 -> b.mapping(0x400000, 0x480000, 0x1000, "/bin/app", "abc", true);
                    default -> b.mapping(0x7f0000000000L, 0x7f0000100000L, 0, "/lib/libc.so.6", "def", true);
                };
                String name = r.nextInt(6) == 0 ? null : names.get(r.nextInt(names.size()));
                String file = r.nextInt(3) == 0 ? null : r.nextBoolean() ? "" : name + ".c";
                stack[i] = b.location(m, 0x400000 + 4L * r.nextInt(100), name, file);
            }
            long[] s = java.util.Arrays.copyOf(stack, depth);
            b.addSample(s, 1 + r.nextInt(3), List.of(Label.num("pid", r.nextInt(3)), Label.str("comm", "app")));
        }
        return b.build(T0 + 10_000_000_000L);
    }

    @Test
    void encodesTheSameBytesAsBeforeTheLocationTableWasKeyedOnLongs() throws Exception {
        // Captured from the builder with record-keyed hash maps (commit ebe7c12); +8 bytes since issue 28: the four
        // mappings whose functions have a file now say has_filenames.
        byte[] bytes = mixedProfile().toByteArray();
        String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        assertEquals("119933 20f4b3f7ecd2c16ba3bfa91823550acaf6e0b78eacaed874b03fd44faa2fdb30", bytes.length + " " + sha);
    }

    private static String s(Profile p, long index) {
        return p.getStringTable((int) index);
    }

    @Test
    void otherSampleTypesTakeOneValuePerTypeAndSumThem() {
        ProfileBuilder b = new ProfileBuilder(T0, List.of(new ProfileBuilder.SampleType("calls", "count"),
                new ProfileBuilder.SampleType("latency", "nanoseconds")), 0, 1);
        long m = b.mapping(0, 0x1000, 0, "/bin/app", null, true);
        long f = b.location(m, 0x100, "work", null);
        b.addSample(new long[] {f}, new long[] {3, 3_000}, List.of(Label.num("le_us", 4, "microseconds")));
        b.addSample(new long[] {f}, new long[] {2, 7_000}, List.of(Label.num("le_us", 4, "microseconds")));
        b.addSample(new long[] {f}, new long[] {1, 9_000}, List.of(Label.num("le_us", 16, "microseconds")));
        assertThrows(IllegalArgumentException.class, () -> b.addSample(new long[] {f}, new long[] {1}, List.of()));
        assertThrows(IllegalStateException.class, () -> b.addSample(new long[] {f}, 1, List.of()),
                "the CPU form needs the CPU sample types");
        Profile p = b.build(T0 + 5);
        assertEquals(List.of("calls", "latency"), p.getSampleTypeList().stream().map(t -> s(p, t.getType())).toList());
        assertEquals("calls", s(p, p.getPeriodType().getType()));
        assertEquals(1, p.getPeriod());
        assertEquals(2, p.getSampleCount());
        assertEquals(List.of(5L, 10_000L), p.getSample(0).getValueList(), "identical stack and labels are summed");
        assertEquals(List.of(1L, 9_000L), p.getSample(1).getValueList());
        assertEquals(6, b.totalCount());
    }

    @Test
    void mappingsAreDeduplicatedOnEveryField() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        assertEquals(1, b.mapping(0x1000, 0x2000, 0, "/a", "b1", true));
        assertEquals(1, b.mapping(0x1000, 0x2000, 0, "/a", "b1", true));
        // Changing any one field makes a new mapping, numbered in order of first use.
        assertEquals(2, b.mapping(0x1001, 0x2000, 0, "/a", "b1", true));
        assertEquals(3, b.mapping(0x1000, 0x2001, 0, "/a", "b1", true));
        assertEquals(4, b.mapping(0x1000, 0x2000, 1, "/a", "b1", true));
        assertEquals(5, b.mapping(0x1000, 0x2000, 0, "/b", "b1", true));
        assertEquals(6, b.mapping(0x1000, 0x2000, 0, "/a", "b2", true));
        assertEquals(7, b.mapping(0x1000, 0x2000, 0, "/a", "b1", false));
        assertEquals(8, b.mapping(0x1000, 0x2000, 0, "/a", null, true));
        assertEquals(8, b.mapping(0x1000, 0x2000, 0, "/a", "", true), "\"\" and null build ids encode alike");

        Profile p = b.build(T0 + 1);
        assertEquals(8, p.getMappingCount());
        Mapping m = p.getMapping(3);
        assertEquals(4, m.getId());
        assertEquals(0x1000, m.getMemoryStart());
        assertEquals(0x2000, m.getMemoryLimit());
        assertEquals(1, m.getFileOffset());
        assertEquals("/a", s(p, m.getFilename()));
        assertEquals("b1", s(p, m.getBuildId()));
        assertTrue(m.getHasFunctions());
        assertFalse(p.getMapping(6).getHasFunctions());
        assertEquals(0, p.getMapping(7).getBuildId(), "unknown build id is string 0");
    }

    @Test
    void locationsAreDeduplicatedOnMappingAddressAndName() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        long m = b.mapping(0x1000, 0x2000, 0, "/a", null, true);
        long a = b.location(m, 0x1100, "f", "f.c");
        assertEquals(1, a);
        assertEquals(a, b.location(m, 0x1100, "f", "f.c"));
        assertEquals(a, b.location(m, 0x1100, "f", "other.c"), "file is not part of the location key");
        assertEquals(2, b.location(0, 0x1100, "f", "f.c"), "different mapping");
        assertEquals(3, b.location(m, 0x1104, "f", "f.c"), "different address");
        assertEquals(4, b.location(m, 0x1100, "g", "f.c"), "different name");
        assertEquals(5, b.location(m, 0x1100, null, null), "unsymbolized");
        assertEquals(5, b.location(m, 0x1100, null, "ignored.c"));

        Profile p = b.build(T0 + 1);
        assertEquals(5, p.getLocationCount());
        Location first = p.getLocation(0);
        assertEquals(1, first.getId());
        assertEquals(m, first.getMappingId());
        assertEquals(0x1100, first.getAddress());
        assertEquals(1, first.getLineCount());
        Function f = p.getFunction((int) first.getLine(0).getFunctionId() - 1);
        assertEquals("f", s(p, f.getName()));
        assertEquals("f", s(p, f.getSystemName()));
        assertEquals("f.c", s(p, f.getFilename()));
        assertEquals(0, p.getLocation(1).getMappingId());
        assertEquals(0, p.getLocation(4).getLineCount(), "no name, no line: pprof shows the address");
        assertEquals(0x1100, p.getLocation(4).getAddress());
    }

    @Test
    void locationAtKeepsTheFirstLocationAtAnAddress() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        long m = b.mapping(0x1000, 0x2000, 0, "/a", null, true);
        long f = b.location(m, 0x1100, "f", "f.c");
        long g = b.location(m, 0x1100, "g", null);
        assertEquals(f, b.locationAt(m, 0x1100, "h"), "the first location there, whatever its name");
        assertEquals(f, b.locationAt(m, 0x1100, null));
        long bare = b.locationAt(0, 0x1100, null);
        assertEquals(3, bare, "another mapping: new");
        assertEquals(bare, b.locationAt(0, 0x1100, "named later"));
        assertEquals(4, b.locationAt(m, 0x1200, "h"));
        assertEquals(4, b.location(m, 0x1200, "h", "ignored.c"), "the exact lookup finds it too");
        assertEquals(g, b.location(m, 0x1100, "g", null));
        assertThrows(IllegalArgumentException.class, () -> b.locationAt(2, 0x1100, "f"), "no mapping 2");

        Profile p = b.build(T0 + 1);
        assertEquals(4, p.getLocationCount());
        assertEquals(0, p.getLocation(2).getLineCount());
        Location h = p.getLocation(3);
        assertEquals("h", s(p, p.getFunction((int) h.getLine(0).getFunctionId() - 1).getName()));
        assertEquals(0, p.getFunction((int) h.getLine(0).getFunctionId() - 1).getFilename(), "no file");
    }

    @Test
    void inlinedFunctionsAreTheLocationsFirstLinesInnermostFirst() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        long m = b.mapping(0x1000, 0x2000, 0, "[jit] java", null, true);
        long at = b.locationAt(m, 0x1100, "A.outer", List.of("A.mid", "A.inner"));
        assertEquals(at, b.locationAt(m, 0x1100, "A.outer"), "one location per address");
        long plain = b.locationAt(m, 0x1200, "A.inner", List.of());
        long unnamed = b.locationAt(m, 0x1300, null, List.of("A.never"));
        b.addSample(new long[] {at, plain, unnamed}, 1, List.of());
        Profile p = b.build(T0 + 1);
        Location l = p.getLocation((int) at - 1);
        List<String> lines = l.getLineList().stream()
                .map(x -> s(p, p.getFunction((int) x.getFunctionId() - 1).getName())).toList();
        assertEquals(List.of("A.mid", "A.inner", "A.outer"), lines, "the caller the others were inlined into last");
        assertEquals(l.getLine(1).getFunctionId(), p.getLocation((int) plain - 1).getLine(0).getFunctionId(),
                "an inlined function is the same Function as its own compiled code's");
        assertEquals(0, p.getLocation((int) unnamed - 1).getLineCount(), "no name: no lines at all, not inlined ones alone");
        assertEquals(List.of(), ParcaRules.violations(p));
    }

    /** A runtime's frame with a source position: its line carries the line, its function the file. */
    @Test
    void aRuntimesFrameCarriesItsFileAndLine() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        long m = b.mapping(0x4000_0000_0000_0000L, 0x4100_0000_0000_0000L, 0, "[interpreted] python3", null, true);
        long at = b.locationAt(m, 0x4000_7f00_0000_1000L, "app.handle", List.of(), "/srv/app.py", 42);
        assertEquals(at, b.locationAt(m, 0x4000_7f00_0000_1000L, "app.handle"), "one location per address");
        long noLine = b.locationAt(m, 0x4000_7f00_0000_2000L, "app.main", List.of("app.inlined"), "/srv/app.py", 0);
        b.addSample(new long[] {at, noLine}, 1, List.of());
        Profile p = b.build(T0 + 1);
        Line line = p.getLocation((int) at - 1).getLine(0);
        assertEquals(42, line.getLine());
        assertEquals("/srv/app.py", s(p, p.getFunction((int) line.getFunctionId() - 1).getFilename()));
        Location l = p.getLocation((int) noLine - 1);
        assertEquals(2, l.getLineCount());
        assertEquals(0, l.getLine(1).getLine(), "no line known");
        assertEquals(List.of(), ParcaRules.violations(p));
    }

    /**
     * Source lines (a Go pc with an inlined call): each line its function, file, line number and the function's start
     * line; the mapping's has_* flags set because some location has them, and left unset on a mapping without.
     */
    @Test
    void sourceLinesCarryFileLineStartLineAndSetTheMappingsFlagsOnlyWhenTrue() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        long go = b.mapping(0x400000, 0x500000, 0, "/srv/goapp", "gobuild", true);
        long libc = b.mapping(0x7f0000000000L, 0x7f0000100000L, 0, "/usr/lib/libc.so.6", "cafe", true);
        long at = b.locationWithLines(go, 0x401234, List.of(
                new ProfileBuilder.SourceLine("main.add", "/src/app/main.go", 12, 10),
                new ProfileBuilder.SourceLine("main.loop", "/src/app/main.go", 27, 20)));
        assertEquals(at, b.locationWithLines(go, 0x401234, List.of()), "one location per address, the first kept");
        assertEquals(at, b.existingLocation(go, 0x401234));
        assertEquals(0, b.existingLocation(go, 0x401235));
        long plain = b.locationAt(libc, 0x7f0000001000L, "memcpy");
        b.addSample(new long[] {at, plain}, 1, List.of());
        Profile p = b.build(T0 + 1);
        Location l = p.getLocation((int) at - 1);
        assertEquals(2, l.getLineCount());
        Function inner = p.getFunction((int) l.getLine(0).getFunctionId() - 1);
        Function outer = p.getFunction((int) l.getLine(1).getFunctionId() - 1);
        assertEquals("main.add 12 /src/app/main.go 10", s(p, inner.getName()) + " " + l.getLine(0).getLine() + " "
                + s(p, inner.getFilename()) + " " + inner.getStartLine());
        assertEquals("main.loop 27 /src/app/main.go 20", s(p, outer.getName()) + " " + l.getLine(1).getLine() + " "
                + s(p, outer.getFilename()) + " " + outer.getStartLine());
        Mapping m = p.getMapping((int) go - 1);
        assertEquals(List.of(true, true, true, true),
                List.of(m.getHasFunctions(), m.getHasFilenames(), m.getHasLineNumbers(), m.getHasInlineFrames()));
        Mapping c = p.getMapping((int) libc - 1);
        assertEquals(List.of(true, false, false, false),
                List.of(c.getHasFunctions(), c.getHasFilenames(), c.getHasLineNumbers(), c.getHasInlineFrames()));
        assertEquals(List.of(), ParcaRules.violations(p));
    }

    /** A line without a file (DWARF gave none) sets has_line_numbers alone; one line: no inline frames. */
    @Test
    void aLineWithoutAFileSetsOnlyHasLineNumbers() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        long m = b.mapping(0x400000, 0x500000, 0, "/bin/c", null, true);
        long at = b.locationWithLines(m, 0x400010, List.of(new ProfileBuilder.SourceLine("hot", null, 7, 0)));
        b.addSample(new long[] {at}, 1, List.of());
        Mapping out = b.build(T0 + 1).getMapping(0);
        assertEquals(List.of(false, true, false), List.of(out.getHasFilenames(), out.getHasLineNumbers(), out.getHasInlineFrames()));
    }

    @Test
    void functionsAreDeduplicatedOnNameAndFile() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        b.location(0, 1, "f", "f.c");
        b.location(0, 2, "f", "f.c"); // same function, second location
        b.location(0, 3, "f", null);
        b.location(0, 4, "f", ""); // "" and null encode alike
        b.location(0, 5, "g", "f.c");
        Profile p = b.build(T0 + 1);
        assertEquals(List.of(1L, 1L, 2L, 2L, 3L),
                p.getLocationList().stream().map(l -> l.getLine(0).getFunctionId()).toList());
        assertEquals(3, p.getFunctionCount());
        for (int i = 0; i < 3; i++) {
            assertEquals(i + 1, p.getFunction(i).getId());
        }
        assertEquals(0, p.getFunction(1).getFilename());
    }

    @Test
    void samplesWithSameStackAndLabelsAreSummed() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        long x = b.location(0, 1, "x", null);
        long y = b.location(0, 2, "y", null);
        List<Label> pid1 = List.of(Label.num("pid", 1));
        b.addSample(new long[] {x, y}, 1, pid1);
        b.addSample(new long[] {x, y}, 2, new ArrayList<>(pid1)); // equal labels in another list type
        b.addSample(new long[] {x, y}, 1, List.of(Label.num("pid", 2))); // other labels
        b.addSample(new long[] {y, x}, 1, pid1); // other order of frames
        b.addSample(new long[] {x}, 1, pid1); // prefix of a stack
        b.addSample(new long[] {x, y}, 4, pid1);
        assertEquals(4, b.sampleCount());
        assertEquals(10, b.totalCount());

        Profile p = b.build(T0 + 1);
        assertEquals(4, p.getSampleCount());
        Sample first = p.getSample(0);
        assertEquals(List.of(x, y), first.getLocationIdList(), "leaf first, as given");
        assertEquals(List.of(7L, 7 * PERIOD), first.getValueList());
        assertEquals(List.of(1L, PERIOD), p.getSample(1).getValueList());
        assertEquals(List.of(y, x), p.getSample(2).getLocationIdList());
        assertEquals(List.of(x), p.getSample(3).getLocationIdList());
    }

    @Test
    void callerMayReuseItsArrayAndList() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        long x = b.location(0, 1, "x", null);
        long y = b.location(0, 2, "y", null);
        long[] stack = {x};
        List<Label> labels = new ArrayList<>(List.of(Label.num("pid", 1)));
        b.addSample(stack, 1, labels);
        stack[0] = y;
        labels.set(0, Label.num("pid", 2));
        b.addSample(stack, 1, labels);
        Profile p = b.build(T0 + 1);
        assertEquals(2, p.getSampleCount());
        assertEquals(List.of(x), p.getSample(0).getLocationIdList());
        assertEquals(1, p.getSample(0).getLabel(0).getNum());
        assertEquals(2, p.getSample(1).getLabel(0).getNum());
    }

    @Test
    void labelsAreEncodedAsStringsOrNumbersWithUnits() {
        Profile p = sampleProfile();
        List<dev.loupe.pprof.proto.Label> labels = p.getSample(0).getLabelList();
        assertEquals(3, labels.size());
        assertEquals("pid", s(p, labels.get(0).getKey()));
        assertEquals(42, labels.get(0).getNum());
        assertEquals(0, labels.get(0).getStr());
        assertEquals(0, labels.get(0).getNumUnit());
        assertEquals("comm", s(p, labels.get(1).getKey()));
        assertEquals("app", s(p, labels.get(1).getStr()));
        assertEquals(0, labels.get(1).getNum());
        assertEquals("rss", s(p, labels.get(2).getKey()));
        assertEquals(4096, labels.get(2).getNum());
        assertEquals("bytes", s(p, labels.get(2).getNumUnit()));
    }

    @Test
    void labelsPprofWouldDropAreLeftOutAndDoNotSplitSamples() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        long x = b.location(0, 1, "x", null);
        // The plain spelling first, so the droppable one has to be matched by what is left after dropping.
        b.addSample(new long[] {x}, 1, List.of(Label.str("comm", "a")));
        b.addSample(new long[] {x}, 1, List.of(Label.num("pid", 0), Label.str("comm", "a")));
        b.addSample(new long[] {x}, 1, null);
        b.addSample(new long[] {x}, 1, List.of(Label.str("comm", ""), Label.num("cpu", 0, "")));
        b.addSample(new long[] {x}, 1, List.of(Label.num("cpu", 0, "index"))); // a unit makes 0 encodable
        assertEquals(3, b.sampleCount());
        Profile p = b.build(T0 + 1);
        assertEquals(List.of(2L, 2 * PERIOD), p.getSample(0).getValueList());
        assertEquals(1, p.getSample(0).getLabelCount());
        assertEquals("comm", s(p, p.getSample(0).getLabel(0).getKey()));
        assertEquals(List.of(2L, 2 * PERIOD), p.getSample(1).getValueList());
        assertEquals(0, p.getSample(1).getLabelCount());
        assertEquals("index", s(p, p.getSample(2).getLabel(0).getNumUnit()));
        assertEquals(List.of(), ParcaRules.violations(p));
    }

    @Test
    void labelRecordChecksItsArguments() {
        assertThrows(IllegalArgumentException.class, () -> Label.num("", 1));
        assertThrows(IllegalArgumentException.class, () -> Label.str(null, "x"));
        assertThrows(IllegalArgumentException.class, () -> new Label("k", "x", 1, null));
        assertEquals(Label.num("k", 1), Label.num("k", 1, ""), "empty unit is no unit");
        assertEquals("", Label.str("k", null).str());
        assertFalse(Label.num("k", 0).isEncodable());
        assertTrue(Label.num("k", -1).isEncodable());
        assertFalse(Label.str("k", "").isEncodable());
    }

    @Test
    void cpuProfileShape() {
        Profile p = sampleProfile();
        assertEquals("", p.getStringTable(0));
        assertEquals(List.of("samples/count", "cpu/nanoseconds"), p.getSampleTypeList().stream().map(t -> type(p, t)).toList());
        assertEquals("cpu/nanoseconds", type(p, p.getPeriodType()));
        assertEquals(PERIOD, p.getPeriod());
        assertEquals(T0, p.getTimeNanos());
        assertEquals(10_000_000_000L, p.getDurationNanos());
        assertEquals(0, p.getDefaultSampleType(), "unset: pprof picks the last type, cpu");
        assertEquals(List.of("loupe test"), p.getCommentList().stream().map(c -> s(p, c)).toList());
        assertEquals(2, p.getSampleCount());
        assertEquals(List.of(2L, 2 * PERIOD), p.getSample(0).getValueList());
        assertEquals(List.of(1L, PERIOD), p.getSample(1).getValueList());
        assertEquals(List.of(3L, 1L, 2L), p.getSample(1).getLocationIdList());
        assertEquals(p.getStringTableCount(), p.getStringTableList().stream().distinct().count(), "strings interned once");
    }

    private static String type(Profile p, ValueType t) {
        return s(p, t.getType()) + "/" + s(p, t.getUnit());
    }

    @Test
    void durationIsAtLeastOneNanosecond() {
        assertEquals(1, new ProfileBuilder(PERIOD, T0).build(T0).getDurationNanos());
        assertEquals(1, new ProfileBuilder(PERIOD, T0).build(T0 - 5).getDurationNanos());
        assertEquals(2, new ProfileBuilder(PERIOD, T0).build(T0 + 2).getDurationNanos());
    }

    @Test
    void rejectsUnknownIdsAndBadCounts() {
        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        assertThrows(IllegalArgumentException.class, () -> new ProfileBuilder(0, T0));
        assertThrows(IllegalArgumentException.class, () -> b.location(1, 1, "x", null), "no mapping 1 yet");
        assertThrows(IllegalArgumentException.class, () -> b.location(-1, 1, "x", null));
        long x = b.location(0, 1, "x", null);
        assertThrows(IllegalArgumentException.class, () -> b.addSample(new long[] {x + 1}, 1, List.of()));
        assertThrows(IllegalArgumentException.class, () -> b.addSample(new long[] {0}, 1, List.of()));
        assertThrows(IllegalArgumentException.class, () -> b.addSample(new long[] {x}, 0, List.of()));
        assertThrows(IllegalArgumentException.class, () -> b.addSample(new long[] {x}, -1, List.of()));
        assertEquals(0, b.sampleCount());
        assertEquals(0, b.totalCount());
    }

    @Test
    void sameCallsGiveSameBytesAndBuildDoesNotChangeTheBuilder() {
        byte[] once = sampleProfile().toByteArray();
        assertArrayEquals(once, sampleProfile().toByteArray());

        ProfileBuilder b = new ProfileBuilder(PERIOD, T0);
        long x = b.location(0, 1, "x", null);
        b.addSample(new long[] {x}, 1, List.of(Label.str("comm", "a")));
        Profile first = b.build(T0 + 1);
        assertEquals(first, b.build(T0 + 1));
        b.addSample(new long[] {x}, 1, List.of(Label.str("comm", "b")));
        Profile second = b.build(T0 + 1);
        assertNotEquals(first, second);
        assertEquals(2, second.getSampleCount());
        assertEquals(first.getSample(0), second.getSample(0));
    }
}
