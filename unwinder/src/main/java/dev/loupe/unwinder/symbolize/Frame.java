package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.lines.SourceLine;

import java.util.List;

/**
 * One symbolized frame. {@code address} is the runtime address looked up (return addresses already
 * moved back into the call instruction). {@code mapping} is null when no mapping is known and
 * {@code function} is null when no symbol covers the address: such frames are kept, never dropped.
 * {@code inlined}: the functions a compiler inlined into {@code function} at this address, innermost first (pprof
 * puts them as the location's first lines, {@code function} last); empty where none are known. {@code file} and
 * {@code line}: the source position a runtime gave for the frame (null and 0 where unknown). {@code sourceLines}: the
 * binary's line table at this address (issue 28), innermost first, the last one the function the others were inlined
 * into; when not empty it is the whole story (pprof's lines of the location), else empty. A runtime's frame that knows
 * its function's first line has both: its file and line, and the one source line that adds the start line.
 */
public record Frame(long address, MappingRef mapping, String function, boolean kernel, List<String> inlined, String file,
                    int line, List<SourceLine> sourceLines) {
    public Frame {
        inlined = List.copyOf(inlined);
        sourceLines = List.copyOf(sourceLines);
    }

    public Frame(long address, MappingRef mapping, String function, boolean kernel, List<String> inlined, String file, int line) {
        this(address, mapping, function, kernel, inlined, file, line, List.of());
    }

    public Frame(long address, MappingRef mapping, String function, boolean kernel, List<String> inlined) {
        this(address, mapping, function, kernel, inlined, null, 0);
    }

    public Frame(long address, MappingRef mapping, String function, boolean kernel) {
        this(address, mapping, function, kernel, List.of());
    }
}
