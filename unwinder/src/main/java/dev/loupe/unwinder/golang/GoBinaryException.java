package dev.loupe.unwinder.golang;

/** A binary whose Go metadata (or machine code) cannot be read; the message names the file and the problem. */
public final class GoBinaryException extends Exception {
    public GoBinaryException(String message) {
        super(message);
    }

    public GoBinaryException(String message, Throwable cause) {
        super(message, cause);
    }
}
