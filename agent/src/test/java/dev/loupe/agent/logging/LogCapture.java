package dev.loupe.agent.logging;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/** Everything logged under a logger name (all levels), formatted as the agent prints it. */
public final class LogCapture extends Handler implements AutoCloseable {
    private final Logger logger;
    private final Level previous;
    private final List<String> lines = new ArrayList<>();
    private final SimpleFormatter formatter = new SimpleFormatter();

    public LogCapture(String loggerName) {
        this.logger = Logger.getLogger(loggerName);
        this.previous = logger.getLevel();
        logger.setLevel(Level.ALL);
        setLevel(Level.ALL);
        logger.addHandler(this);
    }

    /** Captures the root logger: every library's output too. */
    public static LogCapture everything() {
        return new LogCapture("");
    }

    @Override
    public synchronized void publish(LogRecord record) {
        lines.add(formatter.format(record));
    }

    public synchronized List<String> lines() {
        return List.copyOf(lines);
    }

    public synchronized String text() {
        return String.join("", lines);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {
        logger.removeHandler(this);
        logger.setLevel(previous);
    }
}
