package dev.loupe.unwinder.runtime;

import dev.loupe.unwinder.lines.SourceLine;

import java.util.List;
import java.util.Objects;

/**
 * A frame as a runtime names it: its function, the source file and line where known, the functions inlined into it
 * at this point (innermost first: pprof puts them as the location's first lines), and the name of the mapping its
 * frames are shown in ({@code [jit] java}, {@code [interpreted] java}), which tells a profile's reader what kind of
 * code it was. {@code sourceLines}: where the runtime knows the position of each of those functions (a JIT's inlined
 * methods each at its own line), all of them innermost first, {@code function} last; empty otherwise (then
 * {@code file} and {@code line} are the frame's position, if any).
 *
 * @param function null when the runtime knows the frame's kind but not its name (a stale pointer, unreadable memory)
 * @param file null when unknown
 * @param line 0 when unknown
 * @param startLine the line the function starts at (pprof's {@code Function.start_line}), 0 when unknown; given for a
 *                  frame without inlined functions (an interpreter's: CPython's {@code co_firstlineno})
 */
public record RuntimeFrame(String function, String file, int line, List<String> inlined, String mapping,
                           List<SourceLine> sourceLines, int startLine) {
    public RuntimeFrame {
        Objects.requireNonNull(mapping, "mapping");
        inlined = List.copyOf(inlined);
        sourceLines = List.copyOf(sourceLines);
    }

    public RuntimeFrame(String function, String file, int line, List<String> inlined, String mapping,
                        List<SourceLine> sourceLines) {
        this(function, file, line, inlined, mapping, sourceLines, 0);
    }

    public RuntimeFrame(String function, String file, int line, List<String> inlined, String mapping) {
        this(function, file, line, inlined, mapping, List.of());
    }

    /** A function at {@code line} of {@code file}, starting at {@code startLine}, nothing inlined into it. */
    public static RuntimeFrame at(String function, String file, int line, int startLine, String mapping) {
        return new RuntimeFrame(function, file, line, List.of(), mapping, List.of(), startLine);
    }

    /** A named function without source position or inlining. */
    public static RuntimeFrame of(String function, String mapping) {
        return new RuntimeFrame(function, null, 0, List.of(), mapping);
    }
}
