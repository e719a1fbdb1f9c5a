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
 * {@link HotSpotFuzzTarget}'s seeds are JVMs the readers accept in full, laid out as the real JVMs are. Its regression
 * corpus ({@code src/test/resources/fuzz/HotSpotFuzzTarget}: the seeds and every finding's input) and its Jazzer runs
 * are the shared harness's ({@code dev.loupe.unwinder.fuzz.FuzzTargetsTest}, {@code ./loupe fuzz}).
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
        assertTrue(functions.contains("[Interpreter]"), functions.toString()); // past its codelets
        assertTrue(functions.contains("[Interpreter: method entry point (kind = zerolocals)]"), functions.toString());
        assertTrue(functions.contains("[Interpreter: invokevirtual]"), functions.toString());
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
}
