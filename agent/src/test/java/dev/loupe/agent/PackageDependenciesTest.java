package dev.loupe.agent;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.spi.ToolProvider;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The design's shape, read from the compiled classes by the JDK's own {@code jdeps}: the agent's packages
 * import only what their {@code package-info.java} says, without cycles, and the leaves (config, pprof,
 * unwinder, bpf) never import each other or the agent.
 */
class PackageDependenciesTest {
    private static final String A = "dev.loupe.agent";

    /** Agent package → the agent packages it may import (leaves are always allowed). */
    private static final Map<String, Set<String>> ALLOWED = Map.ofEntries(
            Map.entry(A, Set.of("http", "jvm", "latency", "latencydiff", "logging", "regression", "relabel", "relay", "sampling", "service", "ship", "ship.kafka", "sink", "unwind")),
            Map.entry(A + ".sampling", Set.of("labels", "logging", "sink", "unwind")),
            Map.entry(A + ".unwind", Set.of("logging")),
            Map.entry(A + ".sink", Set.of("logging")),
            Map.entry(A + ".http", Set.of("logging", "sampling", "sink", "tls", "unwind")),
            Map.entry(A + ".latency", Set.of("labels", "logging", "regression", "sampling")),
            Map.entry(A + ".ship", Set.of("files", "labels", "logging", "relabel", "sink", "tls")),
            Map.entry(A + ".ship.kafka", Set.of("logging", "ship")),
            Map.entry(A + ".relay", Set.of("logging", "ship", "ship.kafka")),
            Map.entry(A + ".logging", Set.of()),
            Map.entry(A + ".service", Set.of()),
            Map.entry(A + ".labels", Set.of()),
            Map.entry(A + ".relabel", Set.of()),
            Map.entry(A + ".regression", Set.of("files")),
            Map.entry(A + ".files", Set.of()),
            Map.entry(A + ".tls", Set.of()),
            Map.entry(A + ".latencydiff", Set.of("regression")),
            Map.entry(A + ".host", Set.of()),
            Map.entry(A + ".jvm", Set.of("sampling")));

    private static final Pattern EDGE = Pattern.compile("^\\s+(\\S+)\\s+->\\s+(\\S+)\\s", Pattern.MULTILINE);

    /** Package → packages it uses, for classes under {@code dir}, limited to {@code dev.loupe}. */
    static Map<String, Set<String>> edges(Path dir) {
        assertTrue(Files.isDirectory(dir), dir + " is not built");
        ToolProvider jdeps = ToolProvider.findFirst("jdeps").orElseThrow(() -> new AssertionError("no jdeps in this JDK"));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int rc = jdeps.run(new PrintWriter(out), new PrintWriter(err),
                "-verbose:package", "-filter:none", "-e", "dev\\.loupe\\..*", dir.toString());
        assertEquals(0, rc, "jdeps failed: " + err);
        Map<String, Set<String>> edges = new TreeMap<>();
        Matcher m = EDGE.matcher(out.toString());
        while (m.find()) {
            Set<String> to = edges.computeIfAbsent(m.group(1), k -> new TreeSet<>());
            if (!m.group(1).equals(m.group(2))) {
                to.add(m.group(2));
            }
        }
        return edges;
    }

    @Test
    void agentPackagesImportOnlyWhatTheyDeclare() throws IOException {
        Map<String, Set<String>> edges = edges(Path.of("target/classes"));
        // The test reads real edges: the root wires sampling and sinks, so an empty parse cannot pass.
        assertTrue(edges.getOrDefault(A, Set.of()).containsAll(Set.of(A + ".sampling", A + ".sink")), edges.toString());
        Set<String> packages = agentPackages(edges);
        packages.addAll(compiledPackages(Path.of("target/classes"))); // jdeps lists no package without edges
        assertEquals(new TreeSet<>(ALLOWED.keySet()), packages,
                "every agent package has a rule (and a package-info.java saying it)");
        List<String> wrong = new ArrayList<>();
        edges.forEach((from, tos) -> {
            for (String to : tos) {
                if (to.startsWith(A + ".") || to.equals(A)) {
                    String rel = to.equals(A) ? "(root)" : to.substring(A.length() + 1);
                    if (!ALLOWED.get(from).contains(rel)) {
                        wrong.add(from + " -> " + to);
                    }
                }
            }
        });
        assertEquals(List.of(), wrong, "imports that package-info.java does not allow");
        assertEquals(List.of(), cycle(edges), "package cycle");
    }

    @Test
    void everyAgentPackageSaysWhatItOwns() {
        for (String pkg : ALLOWED.keySet()) {
            Path info = Path.of("src/main/java", pkg.replace('.', '/'), "package-info.java");
            assertTrue(Files.isRegularFile(info), info + " is missing");
        }
    }

    @Test
    void leavesNeverImportEachOtherOrTheAgent() {
        List<String> wrong = new ArrayList<>();
        for (String leaf : List.of("config", "pprof", "unwinder", "bpf")) {
            Map<String, Set<String>> edges = edges(Path.of("..", leaf, "target", "classes"));
            assertTrue(edges.keySet().stream().anyMatch(p -> p.startsWith("dev.loupe." + leaf)), leaf + ": no edges read");
            edges.forEach((from, tos) -> tos.stream()
                    .filter(to -> !to.equals("dev.loupe." + leaf) && !to.startsWith("dev.loupe." + leaf + "."))
                    .forEach(to -> wrong.add(from + " -> " + to)));
        }
        assertEquals(List.of(), wrong);
    }

    @Test
    void theCycleFinderFindsACycle() {
        Map<String, Set<String>> g = Map.of("a", Set.of("b"), "b", Set.of("c"), "c", Set.of("a"), "d", Set.of("a"));
        assertEquals(List.of("a", "b", "c", "a"), cycle(g));
        assertEquals(List.of(), cycle(Map.of("a", Set.of("b"), "b", Set.of("c"))));
    }

    /** The agent packages with a compiled class in {@code classes}, whatever they import. */
    private static Set<String> compiledPackages(Path classes) throws IOException {
        Path root = classes.resolve(A.replace('.', '/'));
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(f -> f.toString().endsWith(".class"))
                    .map(f -> classes.relativize(f.getParent()).toString().replace('/', '.'))
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    private static Set<String> agentPackages(Map<String, Set<String>> edges) {
        Set<String> all = new TreeSet<>();
        edges.forEach((from, tos) -> {
            all.add(from);
            tos.stream().filter(t -> t.equals(A) || t.startsWith(A + ".")).forEach(all::add);
        });
        all.removeIf(p -> !(p.equals(A) || p.startsWith(A + ".")));
        return all;
    }

    /** One cycle as a path that ends where it starts, or an empty list. */
    static List<String> cycle(Map<String, Set<String>> g) {
        Map<String, Integer> state = new TreeMap<>(); // 1 on the path, 2 done
        for (String start : new TreeSet<>(g.keySet())) {
            List<String> path = new ArrayList<>();
            List<String> found = visit(start, g, state, path);
            if (!found.isEmpty()) {
                return found;
            }
        }
        return List.of();
    }

    private static List<String> visit(String n, Map<String, Set<String>> g, Map<String, Integer> state, List<String> path) {
        Integer s = state.get(n);
        if (s != null && s == 2) {
            return List.of();
        }
        if (s != null && s == 1) {
            List<String> c = new ArrayList<>(path.subList(path.indexOf(n), path.size()));
            c.add(n);
            return c;
        }
        state.put(n, 1);
        path.add(n);
        for (String m : new TreeSet<>(g.getOrDefault(n, Set.of()))) {
            List<String> c = visit(m, g, state, path);
            if (!c.isEmpty()) {
                return c;
            }
        }
        path.remove(path.size() - 1);
        state.put(n, 2);
        return List.of();
    }
}
