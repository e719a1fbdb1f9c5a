package dev.loupe.unwinder.hotspot;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Processes that are not (or no longer) JVMs. */
class NotAJvmTest {
    @Test
    void aProcessWithoutLibjvmIsEmpty() throws Exception {
        Process p = new ProcessBuilder(List.of("sleep", "30")).start();
        try {
            assertTrue(HotSpotJvm.open(HotSpotJvmTest.PROC, (int) p.pid()).isEmpty());
        } finally {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aPidThatIsGoneIsAnIoException() throws Exception {
        Process p = new ProcessBuilder(List.of("true")).start();
        p.waitFor(10, TimeUnit.SECONDS);
        assertThrows(IOException.class, () -> HotSpotJvm.open(HotSpotJvmTest.PROC, (int) p.pid()));
    }

    /** Opened while alive, then the JVM exits: every read is an IOException, nothing else. */
    @Test
    void aJvmThatExitsMidWayIsAnIoException(@TempDir Path dir) throws Exception {
        TargetJvm t = TargetJvm.start(TargetJvm.JDK25, dir, 100_000);
        try (HotSpotJvm jvm = HotSpotJvm.open(HotSpotJvmTest.PROC, t.pid()).orElseThrow()) {
            CodeCache cc = jvm.codeCache();
            long method = cc.blobs().stream().filter(b -> b.kind() == CodeBlob.Kind.NMETHOD).findFirst().orElseThrow().method();
            t.close();
            assertThrows(IOException.class, jvm::codeCache);
            assertThrows(IOException.class, () -> jvm.methodName(method)); // not cached yet: read, and the process is gone
            assertThrows(IOException.class, () -> jvm.methodName(0x10000)); // unmapped in any process: still gone, not empty
        } finally {
            t.close();
        }
    }
}
