package dev.loupe.agent;

import dev.loupe.unwinder.symbolize.Symbolizer;

import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * {@code --lines}: one switch for every symbolizer the agent makes (the CPU profile's, each latency probe set's), so
 * a reload turns source lines on or off in all of them. Symbolizers are held weakly: closed ones just go.
 */
final class SourceLinesSwitch {
    private final Set<Symbolizer> symbolizers = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));
    private volatile boolean on;

    SourceLinesSwitch(boolean on) {
        this.on = on;
    }

    /** {@code s}, told the current setting and every later one. */
    Symbolizer register(Symbolizer s) {
        s.lines(on);
        symbolizers.add(s);
        return s;
    }

    void set(boolean on) {
        this.on = on;
        synchronized (symbolizers) {
            for (Symbolizer s : symbolizers) {
                s.lines(on);
            }
        }
    }
}
