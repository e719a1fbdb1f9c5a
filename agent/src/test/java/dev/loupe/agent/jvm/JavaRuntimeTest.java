package dev.loupe.agent.jvm;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class JavaRuntimeTest {
    private static final String TEMURIN_25 = """
            IMPLEMENTOR="Eclipse Adoptium"
            IMPLEMENTOR_VERSION="Temurin-25.0.3+9"
            JAVA_RUNTIME_VERSION="25.0.3+9-LTS"
            JAVA_VERSION="25.0.3"
            JAVA_VERSION_DATE="2026-04-21"
            LIBC="gnu"
            MODULES="java.base java.compiler"
            OS_ARCH="x86_64"
            JVM_VARIANT="Hotspot"
            IMAGE_TYPE="JDK"
            """;
    /** Debian's openjdk-17 writes no JVM_VARIANT. */
    private static final String DEBIAN_17 = """
            IMPLEMENTOR="Debian"
            JAVA_RUNTIME_VERSION="17.0.15+6-Debian-1deb12u1"
            JAVA_VERSION="17.0.15"
            SOURCE=""
            """;
    private static final String SEMERU_17 = """
            IMPLEMENTOR="IBM Corporation"
            JAVA_VERSION="17.0.9"
            JVM_VARIANT="Openj9"
            """;

    @Test
    void releaseFilesGiveTheVersion() {
        Map<String, String> r = JavaRuntime.parseRelease(TEMURIN_25);
        assertEquals("25.0.3", r.get("JAVA_VERSION"));
        assertEquals("java.base java.compiler", r.get("MODULES"));
        JavaRuntime rt = JavaRuntime.of("/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so", r);
        assertEquals(new JavaRuntime("/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so", "25.0.3", 25), rt);
        assertEquals("java 25.0.3", rt.describe());
        assertEquals(17, JavaRuntime.of("/x/libjvm.so", JavaRuntime.parseRelease(DEBIAN_17)).feature());
        assertEquals("", JavaRuntime.parseRelease(DEBIAN_17).get("SOURCE"));
        assertEquals(Map.of("A", "x y", "B", "", "C", "\"q", "D", "unquoted"),
                JavaRuntime.parseRelease("A=\"x y\"  \r\n# comment\nB=\"\"\nlower=1\nC=\"\"q\"\nD=unquoted\t\n=E\n"));
    }

    @Test
    void featureReleases() {
        assertEquals(8, JavaRuntime.feature("1.8.0_392"));
        assertEquals(7, JavaRuntime.feature("1.7.0_80"));
        assertEquals(11, JavaRuntime.feature("11.0.2"));
        assertEquals(17, JavaRuntime.feature("17"));
        assertEquals(21, JavaRuntime.feature("21-ea"));
        assertEquals(25, JavaRuntime.feature("25.0.3"));
        assertEquals(0, JavaRuntime.feature("unknown"));
        // A release file is whatever the image's owner wrote (JvmProcessFuzzTarget found this one): unknown, no exception.
        assertEquals(0, JavaRuntime.feature("5555555555555555555555555555555555555555555555555555555555555.01_8.392"));
        assertEquals(0, JavaRuntime.feature("1.99999999999"));
    }

    @Test
    void withoutAReleaseFileThePathSaysTheVersion() {
        assertEquals(OptionalInt.of(11), JavaRuntime.featureFromPath("/usr/lib/jvm/java-11-openjdk-amd64/lib/server/libjvm.so"));
        assertEquals(OptionalInt.of(8), JavaRuntime.featureFromPath("/usr/lib/jvm/java-1.8.0-openjdk-amd64/jre/lib/amd64/server/libjvm.so"));
        assertEquals(OptionalInt.of(8), JavaRuntime.featureFromPath("/opt/jdk1.8.0_202/jre/lib/amd64/server/libjvm.so"));
        assertEquals(OptionalInt.of(17), JavaRuntime.featureFromPath("/opt/jdk-17.0.2/lib/server/libjvm.so"));
        assertEquals(OptionalInt.of(21), JavaRuntime.featureFromPath("/opt/java/openjdk-21/lib/server/libjvm.so"));
        assertEquals(OptionalInt.of(25), JavaRuntime.featureFromPath("/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so"));
        assertEquals(OptionalInt.empty(), JavaRuntime.featureFromPath("/opt/app/runtime/lib/server/libjvm.so"));
        JavaRuntime unknown = JavaRuntime.of("/opt/app/runtime/lib/server/libjvm.so", Map.of());
        assertEquals(0, unknown.feature());
        assertEquals("java ?", unknown.describe());
        assertEquals("java 11", JavaRuntime.of("/usr/lib/jvm/java-11-openjdk-amd64/lib/server/libjvm.so", Map.of()).describe());
    }

    @Test
    void releaseFilesAreLookedForAboveLibjvm() {
        assertEquals(List.of("/usr/lib/jvm/temurin-25-jdk-amd64/lib/release", "/usr/lib/jvm/temurin-25-jdk-amd64/release",
                        "/usr/lib/jvm/release", "/usr/lib/release", "/usr/release"),
                JavaRuntime.releaseCandidates("/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so"));
        // JDK 8: jre/lib/amd64/server/libjvm.so; the JRE's release first, then the JDK's.
        List<String> eight = JavaRuntime.releaseCandidates("/opt/jdk8/jre/lib/amd64/server/libjvm.so");
        assertTrue(eight.indexOf("/opt/jdk8/jre/release") < eight.indexOf("/opt/jdk8/release"), eight.toString());
    }

    @Test
    void libjvmAmongTheMappings() {
        assertEquals(Optional.of("/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so"), JavaRuntime.libjvm(List.of(
                "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                "/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so", "[vdso]")));
        // An upgraded package: the old file is deleted but still mapped.
        assertEquals(Optional.of("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"),
                JavaRuntime.libjvm(List.of("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so (deleted)")));
        assertEquals(Optional.empty(), JavaRuntime.libjvm(List.of("/usr/bin/python3.11", "/usr/lib/libjvmti-helper.so")));
    }

    @Test
    void openJ9IsNotHotSpot() {
        assertTrue(JavaRuntime.openJ9(List.of("/opt/semeru/lib/server/libjvm.so", "/opt/semeru/lib/default/libj9vm29.so")));
        assertTrue(JavaRuntime.openJ9(List.of("/opt/semeru/lib/default/libj9jit29.so")));
        assertFalse(JavaRuntime.openJ9(List.of("/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so")));
        assertEquals(Optional.of("Openj9"), JavaRuntime.otherVariant(JavaRuntime.parseRelease(SEMERU_17)));
        assertEquals(Optional.empty(), JavaRuntime.otherVariant(JavaRuntime.parseRelease(TEMURIN_25)));
        assertEquals(Optional.empty(), JavaRuntime.otherVariant(JavaRuntime.parseRelease(DEBIAN_17)));
    }

    @Test
    void credentialsHotSpotAccepts() {
        assertEquals(Optional.empty(), JvmInspector.credentialProblem(0, 0, 1000, 1000)); // root
        assertEquals(Optional.empty(), JvmInspector.credentialProblem(1000, 1000, 1000, 1000));
        assertEquals(Optional.of("loupe runs as uid 998, the JVM as uid 1000: HotSpot accepts only its own uid or root"),
                JvmInspector.credentialProblem(998, 998, 1000, 1000));
        assertEquals(Optional.of("loupe runs as gid 998, the JVM as gid 1000: HotSpot accepts only its own uid and gid, or root"),
                JvmInspector.credentialProblem(1000, 998, 1000, 1000));
    }
}
