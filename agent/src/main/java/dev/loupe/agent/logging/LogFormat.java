package dev.loupe.agent.logging;

import java.util.Map;

/** One line per log record (journald and terminals), set before java.util.logging initializes. */
public final class LogFormat {
    /** A terminal or file: each line carries its own time. */
    static final String WITH_TIME = "%1$tFT%1$tT.%1$tL%1$tz %4$s %3$s: %5$s%6$s%n";
    /** The journal stamps every line itself (systemd sets $JOURNAL_STREAM for a service's stdout/stderr). */
    static final String FOR_JOURNAL = "%4$s %3$s: %5$s%6$s%n";

    private LogFormat() {}

    public static void install() {
        if (System.getProperty("java.util.logging.SimpleFormatter.format") == null) {
            System.setProperty("java.util.logging.SimpleFormatter.format", format(System.getenv()));
        }
    }

    /** The root logger's level and its handlers': what {@code log-level} sets, at start and on reload. */
    public static void level(java.util.logging.Level level) {
        java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
        root.setLevel(level);
        for (java.util.logging.Handler h : root.getHandlers()) {
            h.setLevel(level);
        }
    }

    static String format(Map<String, String> environment) {
        String stream = environment.get("JOURNAL_STREAM");
        return stream == null || stream.isEmpty() ? WITH_TIME : FOR_JOURNAL;
    }
}
