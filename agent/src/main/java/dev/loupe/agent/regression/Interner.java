package dev.loupe.agent.regression;

import java.util.HashMap;
import java.util.Map;

/**
 * One shared instance per equal value (frames and sample keys repeat in every interval and slot). Bounded: it
 * forgets everything when it reaches {@code max} entries, which costs only sharing, never correctness.
 */
final class Interner<T> {
    private final Map<T, T> seen = new HashMap<>();
    private final int max;

    Interner(int max) {
        this.max = max;
    }

    T intern(T value) {
        T known = seen.get(value);
        if (known != null) {
            return known;
        }
        if (seen.size() >= max) {
            seen.clear();
        }
        seen.put(value, value);
        return value;
    }
}
