package dev.loupe.config;

/** A configuration problem, already worded for the user: {@code FILE:LINE: what is wrong} or {@code --flag: ...}. */
public final class ConfigException extends Exception {
    private final String source;
    private final int line;

    ConfigException(String source, int line, String problem) {
        super(line > 0 ? source + ":" + line + ": " + problem : source + ": " + problem);
        this.source = source;
        this.line = line;
    }

    /** The file (or flag) the problem is in. */
    public String source() {
        return source;
    }

    /** 1-based line, 0 when not from a file. */
    public int line() {
        return line;
    }
}
