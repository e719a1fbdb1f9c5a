package dev.loupe.agent.sampling;

import dev.loupe.pprof.Label;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.MappingRef;
import org.junit.jupiter.api.Test;

import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

class ProfileWindowTest {
    private static final long PERIOD = 1_000_000_000L / 19;
    private static final long WALL = 1_700_000_000_000_000_000L;
    private static final long MONO = 5_000_000_000L;

    /**
     * Many samples over mappings that repeat as equal but distinct instances (a process's maps read again),
     * spell an unknown path or build id two ways, frames without a mapping or a name, and one address
     * symbolized under two names (the window keeps the first).
     */
    static Profile mixedWindow() {
        List<MappingRef> mappings = List.of(
                new MappingRef(0x400000, 0x480000, 0, "/usr/bin/app", "aa11", true),
                new MappingRef(0x400000, 0x480000, 0, "/usr/bin/app", "aa11", true), // same again, new instance
                new MappingRef(0x7f0000000000L, 0x7f0000200000L, 0x1000, "/lib/libc.so.6", "", true),
                new MappingRef(0x7f0000000000L, 0x7f0000200000L, 0x1000, "/lib/libc.so.6", null, true),
                new MappingRef(0x7f1000000000L, 0x7f1000010000L, 0, null, null, false),
                new MappingRef(0x7f1000000000L, 0x7f1000010000L, 0, "", null, false),
                new MappingRef(0xffffffff81000000L, 0xffffffff82000000L, 0, "[kernel.kallsyms]", null, true),
                new MappingRef(0x400000, 0x480000, 0, "/usr/bin/other", "bb22", true)); // same range, other file
        List<String> names = List.of("main", "work", "hot_loop", "memcpy", "read", "schedule", "do_syscall_64");
        List<List<Label>> labels = List.of(
                List.of(Label.num("pid", 10), Label.num("tid", 10), Label.str("comm", "app"), Label.str("thread_comm", "app")),
                List.of(Label.num("pid", 10), Label.num("tid", 11), Label.str("comm", "app"), Label.str("thread_comm", "worker"),
                        Label.str("unwind", "frame_pointers")),
                List.of(Label.num("pid", 0), Label.num("tid", 0), Label.str("comm", "swapper"), Label.str("thread_comm", "")));
        Random r = new Random(14);
        ProfileWindow w = new ProfileWindow(PERIOD, WALL, MONO);
        List<Frame> frames = new ArrayList<>();
        for (int sample = 0; sample < 3000; sample++) {
            frames.clear();
            int depth = 1 + r.nextInt(24);
            for (int i = 0; i < depth; i++) {
                int kind = r.nextInt(10);
                if (kind == 0) {
                    // No mapping: the same few addresses, named differently from sample to sample.
                    frames.add(new Frame(0x10 + r.nextInt(4), null, r.nextBoolean() ? null : names.get(r.nextInt(2)),
                            false));
                } else {
                    MappingRef m = mappings.get(r.nextInt(mappings.size()));
                    long address = m.start() + 4L * r.nextInt(64);
                    String name = r.nextInt(8) == 0 ? null : names.get((int) ((address >>> 2) % names.size()));
                    if (kind == 1) {
                        name = names.get(r.nextInt(names.size())); // a second name at a known address
                    }
                    frames.add(new Frame(address, m, name, m.start() < 0));
                }
            }
            w.add(frames, labels.get(r.nextInt(labels.size())));
        }
        Profile p = w.finish(MONO + 10_000_000_000L);
        w.add(frames, labels.get(0)); // after finish: ignored
        return p;
    }

    /** A frame with its binary's lines becomes a location with those lines (inlined first) and a flagged mapping. */
    @Test
    void aFrameWithSourceLinesBecomesALocationWithThoseLines() {
        MappingRef go = new MappingRef(0x400000, 0x480000, 0, "/srv/goapp", "g1", true);
        List<dev.loupe.unwinder.lines.SourceLine> lines = List.of(
                new dev.loupe.unwinder.lines.SourceLine("main.add", "/src/main.go", 6, 5),
                new dev.loupe.unwinder.lines.SourceLine("main.loop", "/src/main.go", 13, 10));
        ProfileWindow w = new ProfileWindow(PERIOD, WALL, MONO);
        Frame leaf = new Frame(0x401000, go, "main.loop", false, List.of(), null, 0, lines);
        w.add(List.of(leaf), List.of());
        w.add(List.of(leaf), List.of());
        Profile p = w.finish(MONO + 1);
        assertEquals(1, p.getLocationCount());
        assertEquals(List.of("main.add:6", "main.loop:13"), p.getLocation(0).getLineList().stream()
                .map(l -> p.getStringTable((int) p.getFunction((int) l.getFunctionId() - 1).getName()) + ":" + l.getLine()).toList());
        assertEquals(List.of(5L, 10L), p.getFunctionList().stream().map(f -> f.getStartLine()).toList());
        assertEquals(List.of(true, true, true), List.of(p.getMapping(0).getHasFilenames(), p.getMapping(0).getHasLineNumbers(),
                p.getMapping(0).getHasInlineFrames()));
        assertEquals(2, p.getSample(0).getValue(0));
    }

    @Test
    void encodesTheSameBytesAsBeforeTheBuilderOwnedTheIdTables() throws Exception {
        // Captured from the window that kept its own location and mapping tables (commit ebe7c12).
        byte[] bytes = mixedWindow().toByteArray();
        String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        assertEquals("156751 4568848391455c7babe1eac1961e3142259ef0849e05982b1f5075c16e74ae25", bytes.length + " " + sha);
    }

    @Test
    void oneMappingPerDistinctMappingAndOneLocationPerAddressInIt() {
        Profile p = mixedWindow();
        // app twice, libc with "" and null build ids, the anonymous mapping with null and "" paths: one each.
        assertEquals(5, p.getMappingCount());
        assertEquals(p.getLocationCount(), p.getLocationList().stream()
                .map(l -> l.getMappingId() + ":" + l.getAddress()).distinct().count(),
                "an address keeps the name it was first seen with");
        assertEquals(3000, p.getSampleList().stream().mapToLong(s -> s.getValue(0)).sum());
    }
}
