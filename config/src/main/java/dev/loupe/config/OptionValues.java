package dev.loupe.config;

import java.util.HashMap;
import java.util.Map;

/** Option values while layers are merged (defaults, then a file, then flags), and where in the file each was set. */
final class OptionValues {
    private final Map<Option<?>, Object> values;
    private final Map<String, Integer> lines;

    OptionValues() {
        this(new HashMap<>(), new HashMap<>());
    }

    private OptionValues(Map<Option<?>, Object> values, Map<String, Integer> lines) {
        this.values = values;
        this.lines = lines;
    }

    @SuppressWarnings("unchecked")
    <T> T get(Option<T> option) {
        return (T) values.get(option);
    }

    <T> void set(Option<T> option, T value) {
        values.put(option, value);
    }

    /** 1-based line of a key or section (e.g. {@code remote-store}) in the file layer; 0 when not from a file. */
    int line(String keyOrSection) {
        return lines.getOrDefault(keyOrSection, 0);
    }

    void line(String keyOrSection, int line) {
        lines.put(keyOrSection, line);
    }

    /** A copy with no lines: the defaults' lines are in the embedded default.yaml, never in the user's file. */
    OptionValues withoutLines() {
        return new OptionValues(new HashMap<>(values), new HashMap<>());
    }

    /** A copy for the next layer; lines of the layer below stay (a flag does not move a file's error). */
    OptionValues copy() {
        return new OptionValues(new HashMap<>(values), new HashMap<>(lines));
    }
}
