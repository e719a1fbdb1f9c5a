package dev.loupe.agent.regression;

import java.util.HashMap;
import java.util.Map;
import java.util.function.BiConsumer;

/** Latency profile samples merged by {@link SampleKey}: per key the calls and their total nanoseconds. */
final class ProfileSamples {
    private final Map<SampleKey, long[]> values = new HashMap<>();

    /**
     * Adds to the key's sample; a new key takes one sample from {@code budget}, and is left out (counted there)
     * when none is left.
     */
    void add(SampleKey key, long calls, long nanos, SampleBudget budget) {
        long[] v = values.get(key);
        if (v == null) {
            if (!budget.take(calls)) {
                return;
            }
            v = new long[2];
            values.put(key, v);
        }
        v[0] += calls;
        v[1] += nanos;
    }

    /** Adds a sample read from a file (its budget was checked when it was first recorded). */
    void put(SampleKey key, long calls, long nanos) {
        long[] v = values.computeIfAbsent(key, k -> new long[2]);
        v[0] += calls;
        v[1] += nanos;
    }

    /** Moves every sample of {@code other} into this one (never more samples in all than before). */
    void absorb(ProfileSamples other) {
        other.values.forEach((k, v) -> put(k, v[0], v[1]));
    }

    int size() {
        return values.size();
    }

    void forEach(BiConsumer<SampleKey, long[]> action) {
        values.forEach(action);
    }
}
