package dev.loupe.agent.jvm;

import java.util.ArrayList;
import java.util.List;

/**
 * The JVM options a process was started with, as far as they can be read from outside: its command line
 * ({@code /proc/PID/cmdline}) and the variables HotSpot takes options from ({@code JAVA_TOOL_OPTIONS} before the
 * command line, {@code _JAVA_OPTIONS} after it; {@code JDK_JAVA_OPTIONS} is the launcher's, prepended to its
 * arguments), from {@code /proc/PID/environ}. Options in {@code @argfiles} or {@code -XX:VMOptionsFile} are not read.
 */
final class JvmOptions {
    static final String DISABLE_ATTACH = "DisableAttachMechanism";

    private JvmOptions() {}

    /** The strings of a NUL-separated {@code /proc} file (cmdline, environ); a missing last NUL is tolerated. */
    static List<String> nulSeparated(byte[] bytes) {
        List<String> out = new ArrayList<>();
        int start = 0;
        for (int i = 0; i <= bytes.length; i++) {
            if (i == bytes.length || bytes[i] == 0) {
                if (i > start || i < bytes.length) {
                    out.add(new String(bytes, start, i - start, java.nio.charset.StandardCharsets.UTF_8));
                }
                start = i + 1;
            }
        }
        return out;
    }

    /**
     * Whether the JVM runs with {@code -XX:+DisableAttachMechanism}: the last {@code -XX:±DisableAttachMechanism}
     * in the order HotSpot reads them wins. Every command-line word counts, the application's arguments too: a word
     * that only looks like the flag makes the JVM skipped, which is the safe side.
     */
    static boolean attachDisabled(List<String> cmdline, List<String> environ) {
        List<String> words = new ArrayList<>();
        words.addAll(variableWords(environ, "JAVA_TOOL_OPTIONS"));
        words.addAll(variableWords(environ, "JDK_JAVA_OPTIONS"));
        words.addAll(cmdline);
        words.addAll(variableWords(environ, "_JAVA_OPTIONS"));
        Boolean disabled = null;
        for (String w : words) {
            if (w.equals("-XX:+" + DISABLE_ATTACH)) {
                disabled = true;
            } else if (w.equals("-XX:-" + DISABLE_ATTACH)) {
                disabled = false;
            }
        }
        return disabled != null && disabled;
    }

    private static List<String> variableWords(List<String> environ, String name) {
        String prefix = name + "=";
        for (String e : environ) {
            if (e.startsWith(prefix)) {
                String v = e.substring(prefix.length()).strip();
                return v.isEmpty() ? List.of() : List.of(v.split("\\s+"));
            }
        }
        return List.of();
    }
}
