package dev.loupe.pprof;

/**
 * A sample label: a string value, or a number with an optional unit. Numeric labels let
 * {@code go tool pprof -tagfocus=pid=123} match exactly (string labels match as a regexp).
 */
public record Label(String key, String str, long num, String unit) {
    public Label {
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("label key must not be empty");
        }
    }

    public static Label str(String key, String value) {
        return new Label(key, value == null ? "" : value, 0, null);
    }

    public static Label num(String key, long value) {
        return new Label(key, null, value, null);
    }

    public static Label num(String key, long value, String unit) {
        return new Label(key, null, value, unit);
    }

    public boolean isNumeric() {
        return str == null;
    }
}
