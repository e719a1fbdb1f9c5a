package dev.loupe.agent.logging;

/** One line per log record (journald and terminals), set before java.util.logging initializes. */
public final class LogFormat {
    private LogFormat() {}

    public static void install() {
        if (System.getProperty("java.util.logging.SimpleFormatter.format") == null) {
            System.setProperty("java.util.logging.SimpleFormatter.format",
                    "%1$tFT%1$tT.%1$tL%1$tz %4$s %3$s: %5$s%6$s%n");
        }
    }
}
