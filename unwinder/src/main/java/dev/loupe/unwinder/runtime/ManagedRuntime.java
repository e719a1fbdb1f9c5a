package dev.loupe.unwinder.runtime;

import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.proc.MapEntry;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * A language runtime whose code the native unwinder can neither walk nor name by itself: a JIT's code heaps, an
 * interpreter's frames. Each implementation is a package of its own ({@code hotspot}, {@code perfmap}); the agent
 * holds a list of them ({@code KnownRuntimes}) and nothing else names one. A runtime is detected from a process's
 * executable mappings and opened once per process ({@link RuntimeRegistry}); the {@link RuntimeProcess} then serves
 * both the symbolizer (names) and the unwind tables (code tables, rescans).
 *
 * <p>Implementations are thread-safe: {@link #detect} and {@link #open} are called from the sampling thread, the
 * unwind table thread and the latency stacks' symbolizer.
 */
public interface ManagedRuntime {
    /** A short name for logs ({@code hotspot}, {@code perf-map}). */
    String name();

    /** Whether the process runs this runtime, judged from its executable mappings alone (no I/O; called often). */
    boolean detect(List<MapEntry> executable);

    /**
     * Whether the file mapping {@code m} maps (readable at {@code file}) is this runtime's, judged from the file itself
     * where its name does not say (an interpreter binary renamed); called once per file whose table is built, before
     * {@link #fileTable}. A runtime that finds a file this way has {@link #detect} accept its mappings from then on.
     */
    default boolean detectFile(MapEntry m, Path file) throws IOException {
        return detect(List.of(m));
    }

    /**
     * Opens the runtime of process {@code pid}, which {@link #detect} accepted; empty when it cannot be read (the
     * runtime says why, once, in the log: its frames then stay native). {@code exe} is the basename of the process's
     * executable ({@code java}, {@code node}), for mapping names.
     *
     * @throws IOException the process is gone
     */
    Optional<RuntimeProcess> open(int pid, String exe) throws IOException;

    /**
     * As {@link #open(int, String)}, with the process's executable mappings the caller has read already (a runtime
     * that needs them overrides this rather than reading {@code /proc/PID/maps} again).
     */
    default Optional<RuntimeProcess> open(int pid, String exe, List<MapEntry> executable) throws IOException {
        return open(pid, exe);
    }

    /**
     * Whether {@link #open(int, String, List)} works from the mappings a sample's walk carried (the files it found, by
     * their identity, named by the binary cache; no anonymous memory, at most a few), so that the frames of a process
     * that exits within its first samples are named without reading its {@code /proc/PID/maps}. False (the default):
     * the runtime is opened once the process's maps are read.
     */
    default boolean opensFromSampledMappings() {
        return false;
    }

    /**
     * The table the kernel walks one of this runtime's files with, in place of the file's {@code own}, for every
     * process that maps it (an interpreter loop's rows of the runtime's kind): in the file's addresses, like
     * {@code own}, so that no process needs a table of its own for it. Empty (the default): the file's own table.
     * {@code m} is the mapping that names the file, {@code file} a readable path to it.
     *
     * @throws IOException the file cannot be read now
     */
    default Optional<UnwindTable> fileTable(MapEntry m, Path file, UnwindTable own) throws IOException {
        return Optional.empty();
    }

    /** The tagged frame types this runtime's BPF step writes (none for a runtime named from its code addresses). */
    default Set<FrameType> frameTypes() {
        return Set.of();
    }

    /** Whether any of {@code executable} passes {@code test}: what most {@link #detect}s ask. */
    static boolean anyMapping(List<MapEntry> executable, java.util.function.Predicate<MapEntry> test) {
        for (MapEntry m : executable) {
            if (test.test(m)) {
                return true;
            }
        }
        return false;
    }

    /** Counters for logs and tests (name to value since start); empty by default. */
    default java.util.Map<String, Long> counters() {
        return java.util.Map.of();
    }
}
