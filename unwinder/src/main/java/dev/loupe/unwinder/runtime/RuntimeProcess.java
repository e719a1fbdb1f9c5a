package dev.loupe.unwinder.runtime;

/**
 * One process's runtime, opened once and shared by everything that needs it: the symbolizers (names), the unwind
 * table uploader (code tables) and the hints from samples. Thread-safe.
 */
public interface RuntimeProcess extends AutoCloseable {
    /**
     * Names a frame the kernel's walk tagged with one of its runtime's {@link ManagedRuntime#frameTypes()}; null when
     * the value names nothing (a stale pointer, memory that cannot be read).
     */
    default RuntimeFrame taggedFrame(FrameType type, long value) {
        return null;
    }

    /**
     * Names code at {@code address} in executable memory no file backs, or null if this runtime does not know it.
     * {@code callSite}: the address is a caller's return address moved back into its call; else a sampled pc.
     * A miss may read the runtime again (each implementation bounds how often).
     */
    RuntimeFrame code(long address, boolean callSite, long nowNanos);

    /**
     * The unwind table for the runtime's generated code as of its latest scan, scanning first if there was none;
     * null when the runtime has none (its code keeps frame pointers).
     */
    default CodeTable codeTable(long nowNanos) {
        return null;
    }

    /**
     * Reads the runtime's code again if its schedule says it is due; true when {@link #codeTable} has a newer table
     * since the last call returned true (or since the first table).
     */
    default boolean refreshCode(long nowNanos) {
        return false;
    }

    /** A sample showed code of this process that nothing named or walked: read the runtime's code again soon. */
    default void unknownCode(long nowNanos) {}

    /**
     * Whether a native frame (its symbolized function) is one this runtime's frames stand for, so it is left out of
     * the stack: an interpreter loop whose frames the runtime's step reports instead. None by default.
     */
    default boolean replacesNative(String function) {
        return false;
    }

    @Override
    void close();
}
