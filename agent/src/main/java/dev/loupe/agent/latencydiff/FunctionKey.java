package dev.loupe.agent.latencydiff;

import java.util.Comparator;

/** A probed function as a latency profile names it: its {@code binary} and {@code function} labels. */
record FunctionKey(String binary, String function) implements Comparable<FunctionKey> {
    private static final Comparator<FunctionKey> ORDER =
            Comparator.comparing(FunctionKey::function).thenComparing(FunctionKey::binary);

    /** By function name, then binary. */
    @Override
    public int compareTo(FunctionKey other) {
        return ORDER.compare(this, other);
    }
}
