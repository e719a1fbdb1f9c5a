package dev.loupe.pprof;

/**
 * A sample label: either a string value ({@code str != null}) or a number with an optional unit.
 * Numeric labels let {@code go tool pprof -tagfocus=pid=123} match exactly; string labels match as a
 * regexp.
 *
 * <p>pprof cannot encode two label values: an empty string and, without a unit, the number 0 (both are
 * the proto3 default, so go tool pprof and Parca drop such labels on read). {@link ProfileBuilder}
 * therefore leaves them out; see {@link #isEncodable()}.
 */
public record Label(String key, String str, long num, String unit) {
    public Label {
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("label key must not be empty");
        }
        if (unit != null && unit.isEmpty()) {
            unit = null; // "" is string index 0, i.e. no unit; one spelling keeps equals() honest
        }
        if (str != null && (num != 0 || unit != null)) {
            throw new IllegalArgumentException("label " + key + " is either a string or a number, not both");
        }
    }

    /** A string label; a null value is treated as "". */
    public static Label str(String key, String value) {
        return new Label(key, value == null ? "" : value, 0, null);
    }

    public static Label num(String key, long value) {
        return new Label(key, null, value, null);
    }

    /** A numeric label with a unit such as "bytes" or "nanoseconds" (null or "" = none). */
    public static Label num(String key, long value, String unit) {
        return new Label(key, null, value, unit);
    }

    public boolean isNumeric() {
        return str == null;
    }

    /** False for labels pprof readers would silently drop: "" strings and unitless zeros. */
    public boolean isEncodable() {
        return isNumeric() ? num != 0 || unit != null : !str.isEmpty();
    }

    // Written out: every sample's label list is hashed and compared, and the records' generated versions
    // (invokedynamic through ObjectMethods) are not inlined by C1, which the agent runs with.
    @Override
    public boolean equals(Object o) {
        return o instanceof Label l && num == l.num && key.equals(l.key) && java.util.Objects.equals(str, l.str)
                && java.util.Objects.equals(unit, l.unit);
    }

    @Override
    public int hashCode() {
        int h = key.hashCode();
        h = 31 * h + (str == null ? 0 : str.hashCode());
        h = 31 * h + Long.hashCode(num);
        return 31 * h + (unit == null ? 0 : unit.hashCode());
    }
}
