package dev.loupe.it.bench;

import dev.loupe.pprof.proto.Function;
import dev.loupe.pprof.proto.Location;
import dev.loupe.pprof.proto.Mapping;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;

/**
 * The agent's pprof files read back as named stacks, for benchmarks (the tests' {@code Profiles} is package-private
 * to {@code dev.loupe.it} and also runs {@code go tool pprof} on every file, which a benchmark polling files does not
 * want).
 */
final class BenchProfiles {
    private BenchProfiles() {}

    /** One sample: names leaf first ("?" unnamed), mapping file per frame, count, labels. */
    record Stack(List<String> functions, List<String> files, long count, Map<String, String> labels, long timeNanos) {
        long pid() {
            return Long.parseLong(labels.getOrDefault("pid", "-1"));
        }

        /** The user frames' names, leaf first (kernel frames dropped). */
        List<String> user() {
            List<String> u = new ArrayList<>();
            for (int i = 0; i < functions.size(); i++) {
                if (!files.get(i).equals("[kernel.kallsyms]")) {
                    u.add(functions.get(i));
                }
            }
            return u;
        }
    }

    static List<Path> files(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".pb.gz")).sorted().toList();
        }
    }

    static List<Stack> stacks(Path file) throws IOException {
        Profile p;
        try (InputStream in = new GZIPInputStream(Files.newInputStream(file))) {
            p = Profile.parseFrom(in);
        }
        Map<Long, Location> locs = new HashMap<>();
        p.getLocationList().forEach(l -> locs.put(l.getId(), l));
        Map<Long, Function> fns = new HashMap<>();
        p.getFunctionList().forEach(f -> fns.put(f.getId(), f));
        Map<Long, Mapping> maps = new HashMap<>();
        p.getMappingList().forEach(m -> maps.put(m.getId(), m));
        List<Stack> out = new ArrayList<>();
        for (Sample s : p.getSampleList()) {
            List<String> names = new ArrayList<>();
            List<String> files = new ArrayList<>();
            for (long id : s.getLocationIdList()) {
                Location l = locs.get(id);
                names.add(l.getLineCount() == 0 ? "?" : p.getStringTable((int) fns.get(l.getLine(0).getFunctionId()).getName()));
                Mapping m = maps.get(l.getMappingId());
                files.add(m == null ? "" : p.getStringTable((int) m.getFilename()));
            }
            Map<String, String> labels = new HashMap<>();
            s.getLabelList().forEach(lb -> labels.put(p.getStringTable((int) lb.getKey()),
                    lb.getStr() != 0 ? p.getStringTable((int) lb.getStr()) : Long.toString(lb.getNum())));
            out.add(new Stack(names, files, s.getValue(0), labels, p.getTimeNanos()));
        }
        return out;
    }

    static List<Stack> stacksOfDir(Path dir) throws IOException {
        List<Stack> all = new ArrayList<>();
        for (Path f : files(dir)) {
            all.addAll(stacks(f));
        }
        return all;
    }
}
