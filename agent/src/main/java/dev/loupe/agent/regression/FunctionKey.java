package dev.loupe.agent.regression;

import java.util.Comparator;
import java.util.Objects;

/**
 * A probed function: the binary's path as probed and the function's name (a latency profile's {@code binary} and
 * {@code function} labels). Ordered by binary, then function.
 */
public record FunctionKey(String binary, String function) implements Comparable<FunctionKey> {
    private static final Comparator<FunctionKey> ORDER =
            Comparator.comparing(FunctionKey::binary).thenComparing(FunctionKey::function);

    public FunctionKey {
        Objects.requireNonNull(binary, "binary");
        Objects.requireNonNull(function, "function");
    }

    @Override
    public int compareTo(FunctionKey o) {
        return ORDER.compare(this, o);
    }
}
