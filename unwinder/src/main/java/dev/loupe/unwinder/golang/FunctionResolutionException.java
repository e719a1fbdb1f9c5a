package dev.loupe.unwinder.golang;

/** A function pattern that names nothing probeable, or too much; the message names the binary and the count. */
public final class FunctionResolutionException extends Exception {
    /** Why the pattern was refused. */
    public enum Reason {
        NO_SYMBOLS,
        NO_MATCH,
        TOO_MANY
    }

    private final Reason reason;
    private final int matches;

    public FunctionResolutionException(Reason reason, int matches, String message) {
        super(message);
        this.reason = reason;
        this.matches = matches;
    }

    public Reason reason() {
        return reason;
    }

    /** How many functions matched (for {@link Reason#TOO_MANY}). */
    public int matches() {
        return matches;
    }
}
