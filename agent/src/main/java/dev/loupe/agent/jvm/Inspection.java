package dev.loupe.agent.jvm;

/** What {@link JvmInspector} found a process to be. */
sealed interface Inspection {
    /** No HotSpot JVM in it (no libjvm.so mapped): nothing to log. */
    record NotAJvm() implements Inspection {}

    /** It exited, or its pid now names another process. */
    record Gone() implements Inspection {}

    /** A JVM the agent leaves alone, and why; {@code who} names it for the log ({@code pid 7 (java 11.0.2)}). */
    record Skipped(String who, String reason) implements Inspection {}

    /** A HotSpot JVM that may be attached to. */
    record Attachable(JvmTarget target) implements Inspection {}
}
