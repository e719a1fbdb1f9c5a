package dev.loupe.agent.regression;

import dev.loupe.pprof.Label;

import java.util.Arrays;
import java.util.List;

/**
 * What baseline profile samples are merged by, within one function and build: the stack (leaf first) and the
 * labels that tell calls apart besides those ({@code le_us}, {@code le_ns}, in that order); the function's
 * {@code function}, {@code binary} and {@code build_id} labels are its owner's, added when a profile is built.
 */
final class SampleKey {
    final StackFrame[] stack;
    final List<Label> labels;
    private final int hash;

    SampleKey(StackFrame[] stack, List<Label> labels) {
        this.stack = stack;
        this.labels = List.copyOf(labels);
        this.hash = 31 * Arrays.hashCode(stack) + this.labels.hashCode();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SampleKey k && k.hash == hash && Arrays.equals(k.stack, stack) && k.labels.equals(labels);
    }

    @Override
    public int hashCode() {
        return hash;
    }
}
