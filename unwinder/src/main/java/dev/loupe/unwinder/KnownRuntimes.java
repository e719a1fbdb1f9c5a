package dev.loupe.unwinder;

import dev.loupe.unwinder.hotspot.HotSpotRuntime;
import dev.loupe.unwinder.perfmap.PerfMapRuntime;
import dev.loupe.unwinder.python.PythonRuntime;
import dev.loupe.unwinder.runtime.ManagedRuntime;
import dev.loupe.unwinder.v8.V8Runtime;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * The runtimes Loupe knows, in the order they are asked to name code (a JVM's own names before its perf map's): the
 * one place a runtime is listed. Adding one is a line here, its package, and its BPF step.
 */
public final class KnownRuntimes {
    private KnownRuntimes() {}

    /** Every known runtime, reading processes through {@code procRoot}, but those named in {@code off}. */
    public static List<ManagedRuntime> all(Path procRoot, LongSupplier nanoTime, Set<String> off) {
        return List.<ManagedRuntime>of(
                        HotSpotRuntime.reading(procRoot, nanoTime),
                        PerfMapRuntime.reading(procRoot),
                        PythonRuntime.reading(procRoot),
                        V8Runtime.reading(procRoot, nanoTime))
                .stream().filter(r -> !off.contains(r.name())).toList();
    }
}
