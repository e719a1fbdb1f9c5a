package dev.loupe.it;

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

/** Reads our pprof files back and flattens samples into named stacks for assertions (tests and benchmarks). */
public final class Profiles {
    /**
     * One sample: function names leaf first ("?" for an unsymbolized frame), mapping file per frame, labels, and
     * its profile's time. A location with several lines (functions a compiler inlined into the last) is several
     * frames here, innermost first, as pprof shows them; {@code inlined} is true for those inlined into the next.
     */
    public record Stack(List<String> functions, List<String> files, long count, Map<String, String> labels, long timeNanos,
                        List<Boolean> inlined) {
        public long pid() {
            return Long.parseLong(labels.getOrDefault("pid", "-1"));
        }

        /** The user frames' names, leaf first (kernel frames dropped). */
        public List<String> user() {
            List<String> u = new ArrayList<>();
            for (int i = 0; i < functions.size(); i++) {
                if (!files.get(i).equals("[kernel.kallsyms]")) {
                    u.add(functions.get(i));
                }
            }
            return u;
        }

        boolean startsWith(String... leafFirst) {
            if (functions.size() < leafFirst.length) {
                return false;
            }
            for (int i = 0; i < leafFirst.length; i++) {
                if (!functions.get(i).equals(leafFirst[i])) {
                    return false;
                }
            }
            return true;
        }
    }

    private Profiles() {}

    /** The profile files in {@code dir}, oldest first; none if it does not exist (yet). */
    public static List<Path> files(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".pb.gz")).sorted().toList();
        }
    }

    public static Profile read(Path file) throws IOException {
        try (InputStream in = new GZIPInputStream(Files.newInputStream(file))) {
            return Profile.parseFrom(in);
        }
    }

    public static List<Stack> stacks(Profile p) {
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
            List<Boolean> inlined = new ArrayList<>();
            for (long id : s.getLocationIdList()) {
                Location l = locs.get(id);
                Mapping m = maps.get(l.getMappingId());
                String file = m == null ? "" : p.getStringTable((int) m.getFilename());
                for (int j = 0; j < Math.max(1, l.getLineCount()); j++) {
                    names.add(l.getLineCount() == 0 ? "?" : p.getStringTable((int) fns.get(l.getLine(j).getFunctionId()).getName()));
                    files.add(file);
                    inlined.add(j < l.getLineCount() - 1);
                }
            }
            Map<String, String> labels = new HashMap<>();
            s.getLabelList().forEach(lb -> labels.put(p.getStringTable((int) lb.getKey()),
                    lb.getStr() != 0 ? p.getStringTable((int) lb.getStr()) : Long.toString(lb.getNum())));
            out.add(new Stack(names, files, s.getValue(0), labels, p.getTimeNanos(), inlined));
        }
        return out;
    }

    /**
     * All samples of every profile file in {@code dir}. Every file is first checked the way its readers
     * check it: the real {@code go tool pprof -raw} must parse it and Parca's rules must hold.
     */
    static List<Stack> stacksOfDir(Path dir) throws Exception {
        List<Stack> all = new ArrayList<>();
        for (Path f : files(dir)) {
            all.addAll(stacks(checked(f)));
        }
        return all;
    }

    /**
     * All samples of every profile file in {@code dir}, read as they are (no {@code go tool pprof} per file): for
     * benchmarks that poll an output directory.
     */
    public static List<Stack> uncheckedStacksOfDir(Path dir) throws IOException {
        List<Stack> all = new ArrayList<>();
        for (Path f : files(dir)) {
            all.addAll(stacks(read(f)));
        }
        return all;
    }

    /**
     * The one profile file in {@code out}, checked as {@link #checked} checks it, after the agent stopped: every
     * one of {@code targets} must still run (the agent never harms a target).
     */
    static Path onlyProfile(Path out, List<Process> targets) throws Exception {
        for (Process t : targets) {
            if (!t.isAlive()) {
                throw new AssertionError("the agent never harms a target: " + t.pid() + " does not run any more");
            }
        }
        List<Path> files = files(out);
        if (files.size() != 1) {
            throw new AssertionError("one profile expected in " + out + ": " + files);
        }
        checked(files.get(0)); // go tool pprof -raw and Parca's rules
        return files.get(0);
    }

    /** Reads a profile after go tool pprof and Parca's validation accept it. */
    static Profile checked(Path file) throws Exception {
        Profile p = read(file);
        List<String> violations = dev.loupe.pprof.ParcaRules.violations(p);
        if (!violations.isEmpty()) {
            throw new AssertionError(file + " violates Parca's rules: " + violations);
        }
        String raw = PprofTool.run("-raw", file.toString());
        if (!raw.contains("PeriodType: cpu nanoseconds")) {
            throw new AssertionError("go tool pprof -raw " + file + ":\n" + raw.substring(0, Math.min(500, raw.length())));
        }
        return p;
    }

    static long total(List<Stack> stacks) {
        return stacks.stream().mapToLong(Stack::count).sum();
    }
}
