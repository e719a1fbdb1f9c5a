package dev.loupe.agent.regression;

import java.util.Optional;

/** What a function's current window is compared with. */
public enum BaselineKind {
    /** The build that ran before the current one (its last trailing span of calls, plus its old processes' since). */
    PREVIOUS_BUILD("previous_build"),
    /** The current build's own calls over the trailing span before the window. */
    TRAILING("trailing");

    private final String label;

    BaselineKind(String label) {
        this.label = label;
    }

    /** The {@code baseline} label value on /metrics and the {@code ?baseline=} of the latency endpoint. */
    public String label() {
        return label;
    }

    /** The kind with this {@link #label()}, if any (for parsing {@code ?baseline=}). */
    public static Optional<BaselineKind> ofLabel(String label) {
        for (BaselineKind k : values()) {
            if (k.label.equals(label)) {
                return Optional.of(k);
            }
        }
        return Optional.empty();
    }
}
