package dev.loupe.unwinder.hotspot;

/** A process maps libjvm.so but its exported layout tables, or what they describe, cannot be read: the message says what. */
public final class HotSpotException extends Exception {
    public HotSpotException(String message) {
        super(message);
    }
}
