package dev.loupe.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.loupe.agent.ship.ParcaStandIn;
import dev.loupe.pprof.ParcaRules;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.parca.RawProfileSeries;
import dev.loupe.pprof.proto.Profile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.stream.Stream;

/** Which intervals the agent wrote locally and which reached a Parca stand-in, to compare the two. */
final class ShippedIntervals {
    private ShippedIntervals() {}

    /** Start times of the local files' non-empty CPU intervals. */
    static TreeSet<Long> inFiles(Path out) {
        return inFiles(out, p -> p.getSampleCount() > 0);
    }

    /** Start times of the local files' CPU intervals with samples of the process {@code pid}. */
    static TreeSet<Long> inFiles(Path out, long pid) {
        return inFiles(out, p -> {
            int key = p.getStringTableList().indexOf("pid");
            return p.getSampleList().stream().anyMatch(s -> s.getLabelList().stream()
                    .anyMatch(l -> l.getKey() == key && l.getNum() == pid));
        });
    }

    private static TreeSet<Long> inFiles(Path out, Predicate<Profile> counts) {
        TreeSet<Long> t = new TreeSet<>();
        if (!Files.isDirectory(out)) {
            return t;
        }
        try (Stream<Path> files = Files.list(out)) {
            for (Path f : files.filter(p -> p.getFileName().toString().startsWith("cpu-") && p.toString().endsWith(".pb.gz")).toList()) {
                Profile p = PprofFiles.parse(Files.readAllBytes(f));
                if (counts.test(p)) {
                    t.add(p.getTimeNanos());
                }
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return t;
    }

    /** Start times of the target's series the store accepted; fails on a duplicate or a wrong label. */
    static TreeSet<Long> atStore(ParcaStandIn standIn, long pid, Path bin, String team) {
        TreeSet<Long> t = new TreeSet<>();
        for (var r : standIn.accepted()) {
            for (RawProfileSeries s : r.request().getSeriesList()) {
                Map<String, String> labels = new TreeMap<>();
                s.getLabels().getLabelsList().forEach(l -> labels.put(l.getName(), l.getValue()));
                if (!Long.toString(pid).equals(labels.get("pid"))) {
                    continue;
                }
                assertEquals("parca_agent_cpu", labels.get("__name__"));
                assertEquals(team, labels.get("team"));
                assertEquals(bin.getFileName().toString(), labels.get("comm"));
                assertEquals(bin.toString(), labels.get("executable"));
                assertTrue(labels.containsKey("node"), labels.toString());
                Profile p = PprofFiles.parse(s.getSamples(0).getRawProfile().toByteArray());
                assertEquals(List.of(), ParcaRules.violations(p));
                if (!t.add(p.getTimeNanos())) {
                    throw new AssertionError("interval " + p.getTimeNanos() + " reached the store twice");
                }
            }
        }
        return t;
    }
}
