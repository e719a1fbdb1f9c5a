package dev.loupe.pprof;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.loupe.pprof.proto.Location;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProfileSplitterTest {

    /** Each part holds exactly its process's samples, stacks and labels, and only the tables they use. */
    @Test
    void splitsByPidKeepingStacksAndOnlyUsedTables() {
        ProfileBuilder b = new ProfileBuilder(10_000_000L, 1_000_000_000L);
        long libc = b.mapping(0x7f0000000000L, 0x7f0000100000L, 0, "/usr/lib/libc.so.6", "abcd", true);
        long app = b.mapping(0x400000, 0x500000, 0, "/usr/bin/app", "ef01", true);
        long other = b.mapping(0x600000, 0x700000, 0, "/usr/bin/other", null, true);
        long read = b.location(libc, 0x7f0000001000L, "read", null);
        long main = b.location(app, 0x401000, "main", null);
        long work = b.location(app, 0x402000, "work", null);
        long omain = b.location(other, 0x601000, "other_main", null);
        long kernel = b.location(0, 0xffffffff81000000L, "vfs_read", null);
        b.addSample(new long[] {kernel, read, main}, 3, List.of(Label.num("pid", 10), Label.str("comm", "app")));
        b.addSample(new long[] {work, main}, 5, List.of(Label.num("pid", 10), Label.str("comm", "app")));
        b.addSample(new long[] {read, omain}, 7, List.of(Label.num("pid", 20), Label.str("comm", "other")));
        b.addSample(new long[] {kernel}, 2, List.of(Label.str("comm", "swapper")));
        Profile host = b.build(11_000_000_000L);

        Map<Long, Profile> parts = ProfileSplitter.byNumLabel(host, "pid");
        assertEquals(List.of(0L, 10L, 20L), new ArrayList<>(parts.keySet()));
        for (Profile p : parts.values()) {
            assertEquals(List.of(), ParcaRules.violations(p), "Parca rules");
            assertEquals(host.getTimeNanos(), p.getTimeNanos());
            assertEquals(host.getDurationNanos(), p.getDurationNanos());
            assertEquals(host.getPeriod(), p.getPeriod());
        }
        Profile p10 = parts.get(10L);
        assertEquals(List.of("vfs_read;read;main", "work;main"), stacks(p10));
        assertEquals(List.of(3L, 5L), p10.getSampleList().stream().map(s -> s.getValue(0)).toList());
        assertEquals(List.of("/usr/lib/libc.so.6", "/usr/bin/app"),
                p10.getMappingList().stream().map(m -> p10.getStringTable((int) m.getFilename())).toList());
        assertEquals("ef01", p10.getStringTable((int) p10.getMapping(1).getBuildId()));
        assertTrue(!p10.getStringTableList().contains("other_main"), "no strings of other processes");
        assertEquals("app", labelStr(p10, p10.getSample(0), "comm"));

        Profile p20 = parts.get(20L);
        assertEquals(List.of("read;other_main"), stacks(p20));
        assertEquals(2, p20.getMappingCount());
        assertEquals(2, p20.getFunctionCount());
        assertEquals(List.of("vfs_read"), stacks(parts.get(0L)));

        long total = parts.values().stream().flatMap(p -> p.getSampleList().stream()).mapToLong(s -> s.getValue(0)).sum();
        assertEquals(17, total);
    }

    @Test
    void noLabelMeansOnePart() {
        ProfileBuilder b = new ProfileBuilder(1, 1);
        long l = b.location(0, 0x10, "f", null);
        b.addSample(new long[] {l}, 1, List.of());
        Map<Long, Profile> parts = ProfileSplitter.byNumLabel(b.build(2), "pid");
        assertEquals(List.of(0L), new ArrayList<>(parts.keySet()));
        assertEquals(1, parts.get(0L).getSampleCount());
    }

    private static List<String> stacks(Profile p) {
        Map<Long, Location> locs = new HashMap<>();
        for (Location l : p.getLocationList()) {
            locs.put(l.getId(), l);
        }
        List<String> out = new ArrayList<>();
        for (Sample s : p.getSampleList()) {
            List<String> names = new ArrayList<>();
            for (long id : s.getLocationIdList()) {
                long fn = locs.get(id).getLine(0).getFunctionId();
                names.add(p.getStringTable((int) p.getFunction((int) fn - 1).getName()));
            }
            out.add(String.join(";", names));
        }
        return out;
    }

    private static String labelStr(Profile p, Sample s, String key) {
        for (var l : s.getLabelList()) {
            if (p.getStringTable((int) l.getKey()).equals(key)) {
                return p.getStringTable((int) l.getStr());
            }
        }
        return null;
    }
}
