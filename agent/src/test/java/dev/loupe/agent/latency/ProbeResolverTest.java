package dev.loupe.agent.latency;

import dev.loupe.bpf.ProbeSpec;
import dev.loupe.config.ProbeConfig;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Planning against real binaries; the kernel is not involved. */
class ProbeResolverTest {
    @TempDir
    static Path dir;
    static Path c;
    static Path go;

    @BeforeAll
    static void build() throws Exception {
        c = TestBinaries.buildC(dir);
        go = TestBinaries.buildGo(dir);
    }

    private static ProbeResolver.Plan plan(int max, ProbeConfig... configs) {
        return new ProbeResolver(max, Path.of("/proc"), 0).plan(List.of(configs));
    }

    @Test
    void goFunctionsGetEntryAndEveryRetNeverAUretprobe() {
        ProbeResolver.Plan p = plan(1000, ProbeConfig.ofBinary(go, List.of("main.work", "main.other"), false));
        assertEquals(List.of(), p.problems());
        assertEquals(2, p.functions().size());
        ProbedFunction work = p.functions().get(0);
        assertEquals("main.work", work.function());
        assertEquals(go.toString(), work.binary());
        ProbeSpec s = work.spec();
        assertEquals(ProbeSpec.Kind.GO, s.kind());
        assertTrue(s.retOffsets().size() >= 2, "two return paths: " + s.retOffsets());
        assertEquals(ProbeSpec.GSource.R14, s.gSource(), "Go 1.19: register ABI");
        assertEquals(152, s.goidOffset());
        assertEquals(-1, s.pid(), "a binary path covers every process, later ones too");
        assertEquals(1, p.functions().get(1).id(), "ids are handed out in order");
        assertTrue(p.notes().get(0).contains("Go go1.19"), p.notes().toString());
    }

    @Test
    void cFunctionsGetAUretprobeEvenWhenTheyOnlyTailCall() {
        ProbeResolver.Plan p = plan(1000, ProbeConfig.ofBinary(c, List.of("work", "tail"), false));
        assertEquals(List.of(), p.problems());
        assertEquals(List.of(ProbeSpec.Kind.NATIVE, ProbeSpec.Kind.NATIVE), p.functions().stream().map(f -> f.spec().kind()).toList());
    }

    @Test
    void aGoFunctionWithoutRetIsRefusedWithTheReason() {
        ProbeResolver.Plan p = plan(1000, ProbeConfig.ofBinary(go, List.of("runtime.goexit.abi0"), false));
        assertEquals(List.of(), p.functions());
        assertEquals(1, p.problems().size());
        String line = p.problems().get(0);
        assertTrue(line.startsWith("probe " + go + ": runtime.goexit.abi0 cannot be probed safely: "), line);
    }

    @Test
    void globsMatchingNothingOrTooMuchAreOneLineNamingTheCount() {
        ProbeResolver.Plan none = plan(1000, ProbeConfig.ofBinary(go, List.of("nomatch.*"), false));
        assertEquals(List.of(), none.functions());
        assertTrue(none.problems().get(0).matches("probe " + java.util.regex.Pattern.quote(go.toString())
                + ": .*no function matches 'nomatch\\.\\*' \\(\\d+ functions from SYMTAB\\)"), none.problems().toString());

        ProbeResolver.Plan many = plan(10, ProbeConfig.ofBinary(go, List.of("runtime.*"), false));
        assertEquals(List.of(), many.functions());
        assertTrue(many.problems().get(0).matches(".*'runtime\\.\\*' matches \\d+ functions, more than the limit of 10.*"),
                many.problems().toString());
    }

    @Test
    void theCapAlsoBoundsAllPatternsTogether() {
        ProbeResolver.Plan p = plan(2, ProbeConfig.ofBinary(go, List.of("main.work", "main.other"), false),
                ProbeConfig.ofBinary(c, List.of("work"), false));
        assertEquals(2, p.functions().size());
        assertEquals(List.of("probe " + c + ": 'work' matches 1 more functions, but 2 are already probed and the limit is 2"
                + " (probes-max-functions); none of them attached"), p.problems());
    }

    @Test
    void missingBinaryAndProcessAreProblemsNotCrashes() {
        ProbeResolver.Plan p = plan(1000, ProbeConfig.ofBinary(dir.resolve("nope"), List.of("f"), false),
                ProbeConfig.ofPid(Integer.MAX_VALUE - 1, List.of("f"), false));
        assertEquals(List.of(), p.functions());
        assertEquals(2, p.problems().size());
        assertTrue(p.problems().get(0).contains("no such file"), p.problems().toString());
        assertTrue(p.problems().get(1).startsWith("probe pid=" + (Integer.MAX_VALUE - 1) + ": no such process"), p.problems().toString());
    }

    @Test
    void pidProbesUseTheProcessExecutable() throws Exception {
        Process target = new ProcessBuilder(c.toString(), "1", "5").start();
        try {
            ProbeResolver.Plan p = plan(1000, ProbeConfig.ofPid((int) target.pid(), List.of("work"), false));
            assertEquals(List.of(), p.problems());
            assertEquals(c.toString(), p.functions().get(0).binary(), "labelled with the executable's path");
            assertEquals((int) target.pid(), p.functions().get(0).spec().pid());
        } finally {
            target.destroyForcibly().waitFor();
        }
    }

    @Test
    void theSameFunctionTwiceIsProbedOnce() {
        ProbeResolver.Plan p = plan(1000, ProbeConfig.ofBinary(go, List.of("main.work", "main.w*k"), false));
        assertEquals(1, p.functions().size());
        assertEquals(List.of(), p.problems());
    }
}
