package dev.loupe.agent.relabel;

/**
 * A relabel rule that cannot be used, naming the rule (0-based index in the list) and the field, so a
 * configuration loader can point at the line it came from.
 */
public final class RelabelConfigException extends IllegalArgumentException {
    private final int ruleIndex;
    private final String field;

    RelabelConfigException(int ruleIndex, String field, String problem) {
        super("relabel rule " + ruleIndex + ", " + field + ": " + problem);
        this.ruleIndex = ruleIndex;
        this.field = field;
    }

    /** The rule's index in the list, from 0. */
    public int ruleIndex() {
        return ruleIndex;
    }

    /** The field at fault ({@code source_labels}, {@code regex}, …, or {@code action}). */
    public String field() {
        return field;
    }
}
