package dev.loupe.agent.jvm;

import dev.loupe.unwinder.fuzz.FuzzInput;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Fuzz target for what the JVM inspector reads of a process that maps a {@code libjvm.so} (any process can map a
 * file of that name, and a container's image holds any {@code release} file): {@link JavaRuntime} (the release
 * file's {@code KEY="value"} lines, the version in it or in the JDK's path, libjvm among the mapping paths),
 * {@link JvmOptions} ({@code /proc/PID/cmdline} and {@code environ}: NUL-separated, the attach flag) and
 * {@link AttachProtocol#parseReply} (what the process answers on its attach socket). The first byte picks one.
 * Only {@code parseReply} may throw, an IllegalArgumentException; anything else escaping, a negative feature
 * release, release keys or values that are not one line, or NUL-separated strings that do not join back to the
 * bytes is a finding.
 */
public final class JvmProcessFuzzTarget {
    private static final Pattern KEY = Pattern.compile("[A-Z_][A-Z0-9_]*");

    private JvmProcessFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        switch (in.u8() % 4) {
            case 0 -> release(in);
            case 1 -> paths(in);
            case 2 -> options(in);
            default -> reply(in);
        }
    }

    private static void release(FuzzInput in) {
        String libjvm = in.string(120);
        Map<String, String> release = JavaRuntime.parseRelease(new String(in.rest(), StandardCharsets.UTF_8));
        release.forEach((k, v) -> {
            if (!KEY.matcher(k).matches() || v.indexOf('\n') >= 0) {
                throw new IllegalStateException("release line " + k + "=" + v);
            }
        });
        JavaRuntime.otherVariant(release);
        JavaRuntime r = JavaRuntime.of(libjvm, release);
        if (r.feature() < 0 || r.version() == null || r.describe().isEmpty()) {
            throw new IllegalStateException("runtime " + r);
        }
    }

    private static void paths(FuzzInput in) {
        List<String> paths = new ArrayList<>();
        int n = in.intIn(0, 6);
        for (int i = 0; i < n; i++) {
            paths.add(in.string(160));
        }
        JavaRuntime.openJ9(paths);
        JavaRuntime.libjvm(paths).ifPresent(libjvm -> {
            if (!libjvm.endsWith("/libjvm.so")) {
                throw new IllegalStateException("libjvm " + libjvm);
            }
            for (String c : JavaRuntime.releaseCandidates(libjvm)) {
                if (!c.endsWith("/release") || !libjvm.startsWith(c.substring(0, c.length() - "release".length()))) {
                    throw new IllegalStateException("release candidate " + c + " for " + libjvm);
                }
            }
            JavaRuntime.featureFromPath(libjvm).ifPresent(f -> {
                if (f < 0) {
                    throw new IllegalStateException("feature " + f + " from " + libjvm);
                }
            });
            JavaRuntime r = JavaRuntime.of(libjvm, Map.of());
            if (r.feature() < 0) {
                throw new IllegalStateException("runtime " + r);
            }
        });
    }

    private static void options(FuzzInput in) {
        byte[] cmdline = in.longBytes(4096);
        byte[] environ = in.rest();
        List<String> c = JvmOptions.nulSeparated(cmdline);
        List<String> e = JvmOptions.nulSeparated(environ);
        for (byte[] b : new byte[][] {cmdline, environ}) {
            List<String> words = b == cmdline ? c : e;
            String text = new String(b, StandardCharsets.UTF_8);
            String joined = String.join("\0", words);
            if (!joined.equals(text) && !(joined + "\0").equals(text)) {
                throw new IllegalStateException("NUL-separated " + words + " do not join back to the bytes");
            }
        }
        JvmOptions.attachDisabled(c, e);
    }

    private static void reply(FuzzInput in) {
        byte[] bytes = in.rest();
        int length = bytes.length == 0 ? 0 : (bytes[0] & 0xff) % 2 == 0 ? bytes.length : bytes.length / 2;
        AttachProtocol.Reply r;
        try {
            r = AttachProtocol.parseReply(bytes, length);
        } catch (IllegalArgumentException ex) {
            if (ex.getMessage() == null || ex.getMessage().isBlank()) {
                throw new IllegalStateException("an error without a message", ex);
            }
            return;
        }
        r.firstLine();
    }

    /** A JDK's release file, JDK paths of several vendors, a java command line and environment, attach replies. */
    public static void writeSeeds(Path dir) throws Exception {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.write(0);
        str(b, "/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so");
        b.writeBytes("""
                IMPLEMENTOR="Eclipse Adoptium"
                JAVA_RUNTIME_VERSION="25.0.1+8-LTS"
                JAVA_VERSION="25.0.1"
                JAVA_VERSION_DATE="2025-10-21"
                MODULES="java.base java.compiler"
                JVM_VARIANT="Hotspot"
                """.getBytes(StandardCharsets.UTF_8));
        Files.write(dir.resolve("seed-release"), b.toByteArray());
        b.reset();
        b.write(0);
        str(b, "/opt/ibm/java/jre/lib/amd64/default/libjvm.so");
        b.writeBytes("JAVA_VERSION=\"1.8.0_392\"\nJVM_VARIANT=\"Openj9\"\n".getBytes(StandardCharsets.UTF_8));
        Files.write(dir.resolve("seed-release-openj9"), b.toByteArray());
        b.reset();
        b.write(1);
        b.write(4);
        for (String p : List.of("/usr/lib/jvm/java-11-openjdk-amd64/lib/server/libjvm.so (deleted)", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                "/opt/zulu8/jre/lib/amd64/server/libjvm.so", "/opt/j9/lib/default/libj9vm29.so")) {
            str(b, p);
        }
        Files.write(dir.resolve("seed-paths"), b.toByteArray());
        b.reset();
        b.write(2);
        byte[] cmd = "java\0-Xmx1g\0-XX:+DisableAttachMechanism\0-jar\0app.jar\0".getBytes(StandardCharsets.UTF_8);
        b.write(cmd.length & 0xff);
        b.write(cmd.length >> 8);
        b.writeBytes(cmd);
        b.writeBytes("PATH=/usr/bin\0JAVA_TOOL_OPTIONS=-XX:-DisableAttachMechanism  -Xss1m\0_JAVA_OPTIONS=\0".getBytes(StandardCharsets.UTF_8));
        Files.write(dir.resolve("seed-options"), b.toByteArray());
        Files.write(dir.resolve("seed-reply-ok"), concat(3, "0\n".getBytes(StandardCharsets.US_ASCII)));
        Files.write(dir.resolve("seed-reply-error"), concat(3, "-1\njava.lang.IllegalArgumentException: Unknown diagnostic command\n"
                .getBytes(StandardCharsets.US_ASCII)));
    }

    private static byte[] concat(int mode, byte[] b) {
        byte[] out = new byte[b.length + 1];
        out[0] = (byte) mode;
        System.arraycopy(b, 0, out, 1, b.length);
        return out;
    }

    private static void str(ByteArrayOutputStream b, String s) {
        byte[] x = s.getBytes(StandardCharsets.UTF_8);
        b.write(x.length);
        b.writeBytes(x);
    }
}
