package dev.loupe.unwinder.lines;

/**
 * One source position of a frame: {@code function} at {@code line} of {@code file}. A frame where a compiler inlined
 * calls has several, innermost first, the last one the function the others were inlined into (pprof's order).
 *
 * @param file      null when unknown
 * @param line      0 when unknown
 * @param startLine the line the function starts at, 0 when unknown
 */
public record SourceLine(String function, String file, int line, int startLine) {
    public SourceLine {
        java.util.Objects.requireNonNull(function, "function");
    }
}
