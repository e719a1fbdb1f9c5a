package dev.loupe.unwinder.fuzz;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The harness itself: replay in the test JVM (both of Jazzer's target signatures, every file once, a failure named)
 * and a Jazzer run that finds something (the input saved, the run failed with its path and the exception).
 */
class HarnessTest {
    @TempDir
    Path dir;

    /** Records what it was given. */
    public static final class BytesTarget {
        static final List<byte[]> SEEN = new ArrayList<>();
        static final AtomicInteger INITIALIZED = new AtomicInteger();

        public static void fuzzerInitialize() {
            INITIALIZED.incrementAndGet();
        }

        public static void fuzzerTestOneInput(byte[] data) {
            if (data.length > 0 && data[0] == 'X') {
                throw new IllegalStateException("a finding");
            }
            SEEN.add(data);
        }
    }

    /** Takes its input through Jazzer's FuzzedDataProvider, as the HotSpot targets may. */
    public static final class ProviderTarget {
        static final List<byte[]> SEEN = new ArrayList<>();

        public static void fuzzerTestOneInput(FuzzedDataProvider data) {
            SEEN.add(data.consumeRemainingAsBytes());
        }
    }

    @Test
    void everyFileRunsOnceThroughEitherSignature() throws Exception {
        Files.write(dir.resolve("a"), new byte[] {1, 2, 3});
        Files.write(dir.resolve("b"), new byte[0]);
        Files.write(dir.resolve("c"), "kept".getBytes());
        BytesTarget.SEEN.clear();
        BytesTarget.INITIALIZED.set(0);
        assertEquals(3, Jazzer.replay(target(BytesTarget.class), dir));
        assertEquals(1, BytesTarget.INITIALIZED.get());
        assertArrayEquals(new byte[] {1, 2, 3}, BytesTarget.SEEN.get(0));
        assertArrayEquals("kept".getBytes(), BytesTarget.SEEN.get(2));

        ProviderTarget.SEEN.clear();
        assertEquals(3, Jazzer.replay(target(ProviderTarget.class), dir));
        assertEquals(3, ProviderTarget.SEEN.size());
        assertArrayEquals(new byte[] {1, 2, 3}, ProviderTarget.SEEN.get(0));
        assertArrayEquals("kept".getBytes(), ProviderTarget.SEEN.get(2));
    }

    @Test
    void aFailingInputIsNamed() throws Exception {
        Files.write(dir.resolve("crash-1"), "X".getBytes());
        AssertionError e = assertThrows(AssertionError.class, () -> Jazzer.replay(target(BytesTarget.class), dir));
        assertTrue(e.getMessage().contains(dir.resolve("crash-1").toString()) && e.getMessage().contains("a finding"), e.getMessage());
    }

    /** Throws on inputs that start with "LOUPE": the seed does. */
    public static final class Crashing {
        public static void fuzzerTestOneInput(byte[] data) {
            if (data.length >= 5 && new String(data, 0, 5, java.nio.charset.StandardCharsets.ISO_8859_1).equals("LOUPE")) {
                throw new ArrayIndexOutOfBoundsException("planted");
            }
        }
    }

    @Test
    void aJazzerRunThatFindsSomethingFailsWithTheInputAndTheException() throws Exception {
        Path seeds = Files.createDirectories(dir.resolve("seeds"));
        Files.write(seeds.resolve("seed"), "LOUPE fuzz".getBytes());
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        Jazzer.Run run = Jazzer.run(target(Crashing.class), 30, List.of(seeds), dir.resolve("corpus"), dir.resolve("findings"), cp);
        assertEquals(1, run.findings().size(), run.toString());
        assertTrue(run.findings().get(0).getFileName().toString().startsWith("crash-"), run.toString());
        assertArrayEquals("LOUPE fuzz".getBytes(), Files.readAllBytes(run.findings().get(0)));
        AssertionError e = assertThrows(AssertionError.class, run::assertNoFinding);
        assertTrue(e.getMessage().contains("input: " + run.findings().get(0)), e.getMessage());
        assertTrue(e.getMessage().contains("== Java Exception: java.lang.ArrayIndexOutOfBoundsException: planted"), e.getMessage());
        assertTrue(e.getMessage().contains("at " + Crashing.class.getName() + ".fuzzerTestOneInput"), e.getMessage());
    }

    private static FuzzTargets.Target target(Class<?> c) {
        return new FuzzTargets.Target(c.getName(), 64, List.of());
    }
}
