package dev.loupe.agent.jvm;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which Java runtime a process runs, from its executable mappings and the {@code release} file of the runtime
 * image (JDK 9+: {@code <home>/lib/server/libjvm.so} and {@code <home>/release}; JDK 8:
 * {@code <home>/jre/lib/amd64/server/libjvm.so} and {@code release} in the JDK's or the JRE's directory).
 *
 * @param libjvm  the path of {@code libjvm.so} as the process maps it (in its own mount namespace)
 * @param version {@code JAVA_VERSION} of the release file, or what the path says; empty when unknown
 * @param feature the feature release (8, 11, 17, 25), 0 when unknown
 */
record JavaRuntime(String libjvm, String version, int feature) {
    private static final Pattern RELEASE_KEY = Pattern.compile("[A-Z_][A-Z0-9_]*");
    /** A JDK directory name: jdk-17.0.2, jdk1.8.0_202, java-11-openjdk-amd64, temurin-25-jdk, openjdk-21, jre1.8.0. */
    private static final Pattern PATH_VERSION = Pattern.compile(
            "/(?:[a-z]+-)?(?:jdk|jre|java|openjdk|temurin|zulu|corretto)[-_]?(?:1\\.(8)|(\\d{1,2}))(?:[.\\-_+][^/]*)?/");
    private static final Pattern FEATURE = Pattern.compile("^(?:1\\.(\\d+)|(\\d+))");
    private static final String DELETED = " (deleted)";

    /** How the log names it: {@code java 25.0.3}, or {@code java ?} when the version is unknown. */
    String describe() {
        return "java " + (version.isEmpty() ? "?" : version);
    }

    /** The {@code libjvm.so} among a process's executable mapping paths, if it maps one. */
    static Optional<String> libjvm(List<String> executablePaths) {
        for (String p : executablePaths) {
            String path = p.endsWith(DELETED) ? p.substring(0, p.length() - DELETED.length()) : p;
            if (path.endsWith("/libjvm.so")) {
                return Optional.of(path);
            }
        }
        return Optional.empty();
    }

    /** Whether the mappings are Eclipse OpenJ9's (its VM is {@code libj9vm*.so}; its {@code libjvm.so} only forwards). */
    static boolean openJ9(List<String> executablePaths) {
        for (String p : executablePaths) {
            int slash = p.lastIndexOf('/');
            if (p.startsWith("libj9vm", slash + 1) || p.startsWith("libj9jit", slash + 1)) {
                return true;
            }
        }
        return false;
    }

    /** The directories a {@code release} file may sit in, nearest first: up to five levels above libjvm.so's. */
    static List<String> releaseCandidates(String libjvm) {
        List<String> dirs = new java.util.ArrayList<>();
        String d = libjvm;
        for (int i = 0; i < 6; i++) {
            int slash = d.lastIndexOf('/');
            if (slash <= 0) {
                break;
            }
            d = d.substring(0, slash);
            if (i > 0) { // libjvm.so's own directory (server/) holds no release file
                dirs.add(d + "/release");
            }
        }
        return dirs;
    }

    /**
     * The {@code KEY="value"} lines of a release file: the value without trailing blanks and one pair of quotes; other
     * lines are skipped. Read a line at a time in linear time: the file is the image's, and a regular expression
     * over its lines took seconds for 64 KB of blanks (JvmProcessFuzzTarget).
     */
    static Map<String, String> parseRelease(String text) {
        Map<String, String> m = new LinkedHashMap<>();
        int from = 0;
        while (from < text.length()) {
            int nl = text.indexOf('\n', from);
            int end = nl < 0 ? text.length() : nl;
            int eq = text.indexOf('=', from);
            if (eq > from && eq < end && RELEASE_KEY.matcher(text).region(from, eq).matches()) {
                int v = eq + 1;
                int e = end;
                while (e > v && Character.isWhitespace(text.charAt(e - 1))) {
                    e--;
                }
                if (v < e && text.charAt(v) == '"') {
                    v++;
                }
                if (v < e && text.charAt(e - 1) == '"') {
                    e--;
                }
                m.put(text.substring(from, eq), text.substring(v, e));
            }
            from = end + 1;
        }
        return m;
    }

    /**
     * The feature release of a {@code java.version}: 1.8.0_392 → 8, 11.0.2 → 11, 17 → 17, 21-ea → 21; 0 if none, as
     * for a number no release has (a release file is the image's, whatever its owner wrote: not a reason to fail).
     */
    static int feature(String javaVersion) {
        Matcher m = FEATURE.matcher(javaVersion);
        if (!m.find()) {
            return 0;
        }
        try {
            return Integer.parseInt(m.group(1) != null ? m.group(1) : m.group(2));
        } catch (NumberFormatException overflow) {
            return 0;
        }
    }

    /** The feature release a JDK's install path names, e.g. {@code /usr/lib/jvm/java-11-openjdk-amd64/lib/server/libjvm.so}. */
    static OptionalInt featureFromPath(String libjvm) {
        Matcher m = PATH_VERSION.matcher(libjvm);
        if (!m.find()) {
            return OptionalInt.empty();
        }
        return OptionalInt.of(Integer.parseInt(m.group(1) != null ? m.group(1) : m.group(2)));
    }

    /** A release file's {@code JVM_VARIANT} when it names another VM than HotSpot (OpenJ9: "Openj9"); empty otherwise. */
    static Optional<String> otherVariant(Map<String, String> release) {
        String variant = release.getOrDefault("JVM_VARIANT", "");
        return variant.isEmpty() || variant.equalsIgnoreCase("hotspot") ? Optional.empty() : Optional.of(variant);
    }

    /** The runtime from its release file (empty map when none was found) or, failing that, libjvm's path. */
    static JavaRuntime of(String libjvm, Map<String, String> release) {
        String v = release.getOrDefault("JAVA_VERSION", "");
        if (!v.isEmpty() && feature(v) > 0) {
            return new JavaRuntime(libjvm, v, feature(v));
        }
        OptionalInt f = featureFromPath(libjvm);
        return new JavaRuntime(libjvm, f.isPresent() ? Integer.toString(f.getAsInt()) : "", f.orElse(0));
    }
}
