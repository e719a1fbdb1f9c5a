package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.lines.SourceLine;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * A Java frame's source lines (issue 28): each method of its scopes (inlined ones first, the compiled or interpreted
 * method last) at the line of its bci, in its class's source file. {@code Function.start_line} is the method's
 * smallest line ({@link MethodLines.Position#startLine}), as async-profiler and JFR give it: a class file records no
 * line for a method's declaration, only for its statements.
 */
final class JavaSourceLines {
    private JavaSourceLines() {}

    /**
     * The lines of {@code names} (one a method of {@code methods}, at {@code bcis}); empty when no file or line of any
     * is known, so the frame keeps its names alone.
     */
    static List<SourceLine> of(HotSpotJvm jvm, List<String> names, long[] methods, int[] bcis) {
        List<SourceLine> out = new ArrayList<>(names.size());
        boolean any = false;
        for (int i = 0; i < names.size(); i++) {
            MethodLines.Position p;
            try {
                p = jvm.position(methods[i], bcis[i]);
            } catch (IOException | RuntimeException e) {
                p = MethodLines.Position.UNKNOWN; // gone: the frame keeps its names
            }
            any |= p.file() != null || p.line() > 0;
            out.add(new SourceLine(names.get(i), p.file(), p.line(), p.startLine()));
        }
        return any ? out : List.of();
    }
}
