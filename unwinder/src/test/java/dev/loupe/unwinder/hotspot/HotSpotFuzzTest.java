package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.runtime.RuntimeFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link HotSpotFuzzTarget}: its seeds are JVMs the readers accept in full; its regression corpus
 * ({@code src/test/resources/fuzz/HotSpotFuzzTarget}: the seeds and every finding's input) replays clean; and Jazzer
 * run over it in a child JVM finds nothing: a short run in the normal suite, a long one on demand:
 * <pre>
 * mvn -B -o -pl unwinder -am test -Dtest=HotSpotFuzzTest#jazzerFindsNothing -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dloupe.fuzz.seconds=300 [-Dloupe.fuzz.corpus=/var/tmp/loupe-hotspot-corpus]
 * </pre>
 * Findings (crash-*, timeout-*, oom-* inputs) go to {@code unwinder/target/fuzz-findings-hotspot/} and fail the test.
 */
class HotSpotFuzzTest {
    static final Path CORPUS = Path.of("src/test/resources/fuzz", HotSpotFuzzTarget.class.getSimpleName());

    @TempDir
    Path tmp;

    static Path seed(SyntheticJvm.Flavour f) {
        return CORPUS.resolve("seed-" + f.name().toLowerCase());
    }

    /** The corpus's seeds are the synthetic JVMs as {@link SyntheticJvm} makes them now (regenerate: loupe.fuzz.writeSeeds). */
    @ParameterizedTest
    @EnumSource(SyntheticJvm.Flavour.class)
    void seedsAreTheSyntheticJvms(SyntheticJvm.Flavour f) throws Exception {
        byte[] image = SyntheticJvm.image(f);
        if (Boolean.getBoolean("loupe.fuzz.writeSeeds")) {
            Files.createDirectories(CORPUS);
            Files.write(seed(f), image);
        }
        assertArrayEquals(image, Files.readAllBytes(seed(f)), seed(f) + " is not SyntheticJvm's " + f);
    }

    /** A seed is read in full, directly and behind the seam: the fuzzer starts from the deepest paths. */
    @ParameterizedTest
    @EnumSource(SyntheticJvm.Flavour.class)
    void aSeedIsReadInFull(SyntheticJvm.Flavour f) throws Exception {
        HotSpotFuzzTarget.Report r = HotSpotFuzzTarget.run(Files.readAllBytes(seed(f)));
        assertNull(r.failure());
        assertEquals(List.of(new CodeCache.Range(SyntheticJvm.CODE0, SyntheticJvm.CODE0 + 4096),
                new CodeCache.Range(SyntheticJvm.CODE1, SyntheticJvm.CODE1 + 2048)), r.heaps());
        assertEquals(List.of(CodeBlob.Kind.INTERPRETER, CodeBlob.Kind.RUNTIME_STUB, CodeBlob.Kind.NMETHOD,
                CodeBlob.Kind.NMETHOD, CodeBlob.Kind.ADAPTER), r.blobs().stream().map(CodeBlob::kind).toList());
        assertEquals(List.of("Interpreter", "_complete_monitor_locking_Java", "nmethod", "nmethod", "I2C/C2I adapters"),
                r.blobs().stream().map(CodeBlob::name).toList());
        CodeBlob outer = r.blobs().get(2);
        CodeBlob spinA = r.blobs().get(3);
        assertEquals("HotSpotTarget.outer", r.names().get(outer.method()));
        assertEquals("HotSpotTarget.spinA", r.names().get(spinA.method()));
        assertEquals(List.of("HotSpotTarget.mid", "HotSpotTarget.inner", "HotSpotTarget.outer"), r.inlinedAt40().get(outer.address()));
        assertEquals(List.of("HotSpotTarget.spinA"), r.inlinedAt40().get(spinA.address()));
        assertTrue(r.tableRows() >= 6, "table rows " + r.tableRows());
        // Behind the seam: the compiled frames with their inlined methods, a stub by its name, and the one line.
        RuntimeFrame at40 = r.seamFrames().stream().filter(x -> "HotSpotTarget.outer".equals(x.function())
                && !x.inlined().isEmpty()).findFirst().orElse(null);
        assertNotNull(at40, "no frame of outer with its inlined methods: " + r.seamFrames());
        assertEquals(List.of("HotSpotTarget.mid", "HotSpotTarget.inner"), at40.inlined());
        assertEquals("[jit] java", at40.mapping());
        List<String> functions = r.seamFrames().stream().map(RuntimeFrame::function).distinct().toList();
        assertTrue(functions.contains("[_complete_monitor_locking_Java]"), functions.toString());
        assertTrue(functions.contains("[Interpreter]"), functions.toString());
        assertTrue(functions.contains("HotSpotTarget.spinA"), functions.toString());
        assertTrue(functions.contains("[I2C/C2I adapters]"), functions.toString());
        assertEquals(1, r.logs().size(), r.logs().toString());
        assertTrue(r.logs().getFirst().startsWith("INFO jit tables: pid " + HotSpotFuzzTarget.PID + " ("
                + (f == SyntheticJvm.Flavour.JDK25 ? "25.0.1+8-LTS-synthetic" : "17.0.16+8-synthetic") + "): 3 compiled blobs, 1 interpreter, 1 without a frame size"),
                r.logs().toString());
    }

    /** JDK 25's synthetic layout is the running JDK 25's own: field offsets and types, type sizes, constants. */
    @Test
    void theJdk25LayoutIsTheRealOne() throws Exception {
        assertEquals(25, Runtime.version().feature(), "the build runs on JDK 25");
        try (HotSpotJvm self = HotSpotJvm.open(HotSpotJvmTest.PROC, (int) ProcessHandle.current().pid()).orElseThrow()) {
            assertSameLayout(SyntheticJvm.Flavour.JDK25, self.structs());
        }
    }

    /** JDK 17's, a real JDK 17's. */
    @Test
    void theJdk17LayoutIsTheRealOne() throws Exception {
        try (TargetJvm t = TargetJvm.start(TargetJvm.JDK17, tmp, 1);
             HotSpotJvm jvm = HotSpotJvm.open(HotSpotJvmTest.PROC, t.pid()).orElseThrow()) {
            assertSameLayout(SyntheticJvm.Flavour.JDK17, jvm.structs());
        }
    }

    private static void assertSameLayout(SyntheticJvm.Flavour f, VmStructs real) {
        int compared = 0;
        for (SyntheticJvm.FieldDef d : SyntheticJvm.fields(f)) {
            VmStructs.Field r = real.field(d.type(), d.name()).orElseThrow(() -> new AssertionError("no " + d));
            assertEquals(d.isStatic(), r.isStatic(), d.toString());
            assertEquals(d.typeString(), r.typeString(), d.toString());
            if (!d.isStatic()) {
                assertEquals(d.offset(), r.offset(), d.toString());
            }
            compared++;
        }
        for (Map.Entry<String, String[]> t : SyntheticJvm.types(f).entrySet()) {
            VmStructs.Type r = real.types().get(t.getKey());
            assertNotNull(r, t.getKey());
            assertEquals(Long.parseLong(t.getValue()[1]), r.size(), t.getKey());
            assertEquals(t.getValue()[0].isEmpty() ? null : t.getValue()[0], r.superclass(), t.getKey());
            compared++;
        }
        for (Map.Entry<String, Long> c : SyntheticJvm.ints(f).entrySet()) {
            assertEquals(c.getValue(), real.intConstants().get(c.getKey()), c.getKey());
            compared++;
        }
        assertTrue(compared > 50, "compared " + compared);
    }

    /** Every input of the regression corpus (the seeds and each finding's) runs through the target clean. */
    @Test
    void theRegressionCorpusReplays() throws Exception {
        List<Path> files;
        try (Stream<Path> s = Files.list(CORPUS)) {
            files = s.filter(Files::isRegularFile).sorted().toList();
        }
        int run = 0;
        for (Path p : files) {
            try {
                HotSpotFuzzTarget.fuzzerTestOneInput(Files.readAllBytes(p));
            } catch (Throwable e) {
                throw new AssertionError(p + " fails", e);
            }
            run++;
        }
        long inDir;
        try (Stream<Path> s = Files.list(CORPUS)) {
            inDir = s.count();
        }
        assertEquals(inDir, run);
        assertTrue(run > SyntheticJvm.Flavour.values().length, "corpus of " + run);
        System.out.printf("HotSpotFuzzTest: replayed %d corpus inputs%n", run);
    }

    @Test
    void jazzerFindsNothing() throws Exception {
        int seconds = Integer.getInteger("loupe.fuzz.seconds", 8);
        String corpusProp = System.getProperty("loupe.fuzz.corpus");
        Path corpus = corpusProp != null ? Path.of(corpusProp) : tmp.resolve("corpus");
        Files.createDirectories(corpus);
        try (Stream<Path> s = Files.list(CORPUS)) {
            for (Path p : s.toList()) {
                Files.copy(p, corpus.resolve(p.getFileName()), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
        }
        Path findings = Path.of("target", "fuzz-findings-hotspot").toAbsolutePath();
        Files.createDirectories(findings);
        try (Stream<Path> old = Files.list(findings)) { // an earlier run's: kept in the corpus if they mattered
            for (Path p : old.toList()) {
                Files.delete(p);
            }
        }
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx1g", "-XX:+EnableDynamicAgentLoading", "--enable-native-access=ALL-UNNAMED", "-cp", cp,
                "com.code_intelligence.jazzer.Jazzer",
                "--target_class=" + HotSpotFuzzTarget.class.getName(),
                "--instrumentation_includes=dev.loupe.unwinder.**", "--reproducer_path=" + findings,
                "-max_total_time=" + seconds, "-timeout=10", "-max_len=65536", "-print_final_stats=1",
                "-artifact_prefix=" + findings + "/", corpus.toString()));
        Path log = tmp.resolve("jazzer.log");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!p.waitFor(seconds + 300L, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("Jazzer did not finish");
        }
        String out = Files.readString(log, StandardCharsets.ISO_8859_1);
        Matcher done = Pattern.compile("Done (\\d+) runs in (\\d+) second").matcher(out);
        String tail = out.length() > 6000 ? out.substring(out.length() - 6000) : out;
        assertEquals(0, p.exitValue(), "Jazzer reported a finding:\n" + tail);
        assertTrue(done.find(), tail);
        long runs = Long.parseLong(done.group(1));
        Matcher cov = Pattern.compile("cov: (\\d+) ft: (\\d+)").matcher(out);
        String coverage = "";
        while (cov.find()) {
            coverage = cov.group();
        }
        System.out.printf("HotSpotFuzzTest: %d executions in %s s (%.0f/s), %s, corpus %d inputs%n", runs, done.group(2),
                runs / Math.max(1.0, Double.parseDouble(done.group(2))), coverage, count(corpus));
        assertTrue(runs > 200, "too few executions: " + runs);
        try (Stream<Path> s = Files.list(findings)) {
            assertEquals(List.of(), s.map(Path::toString).toList(), "finding inputs");
        }
    }

    private static long count(Path dir) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.count();
        }
    }
}
