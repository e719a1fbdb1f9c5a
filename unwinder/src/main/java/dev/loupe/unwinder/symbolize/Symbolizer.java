package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.proc.ProcessRegistry;
import dev.loupe.unwinder.runtime.RuntimeRegistry;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * Turns sampled addresses into frames. Stacks are leaf first: index 0 is the exact interrupted IP, the
 * rest are return addresses, looked up at address - 1. Called from one thread; {@link #stats()} from any.
 */
public interface Symbolizer extends AutoCloseable {
    /**
     * A bit of {@link #symbolizeUser}'s result: a frame lies in memory no file backs (or in no mapping) and nothing
     * named it, as code a runtime generated since it was last read does.
     */
    int UNNAMED_CODE = 1;
    /** A bit of {@link #symbolizeUser}'s result: the last frame is in code a runtime generated (its table may lag). */
    int ENDS_IN_RUNTIME_CODE = 2;

    /**
     * Appends one frame per user address of process {@code pid} (less the native frames a runtime's own frames stand
     * for). Never throws for bad processes or files.
     *
     * @param processStartNs the process's start time in ns since boot as the kernel reported it with the
     *                       sample (exact PID-reuse detection), or 0 if unknown
     * @return hints for whoever reads runtimes' code: {@link #UNNAMED_CODE}, {@link #ENDS_IN_RUNTIME_CODE}
     */
    int symbolizeUser(int pid, long processStartNs, long[] addrs, int count, List<Frame> out);

    /** As above, for a process whose start time is not known. */
    default int symbolizeUser(int pid, long[] addrs, int count, List<Frame> out) {
        return symbolizeUser(pid, 0, addrs, count, out);
    }

    /**
     * As {@link #symbolizeUser(int, long, long[], int, List)}, with the mappings the kernel's walk found for this sample
     * ({@link SampledMappings}' layout): a process nobody read {@code /proc} for (which may have exited since) is named
     * from them where their files are known, and {@code /proc} is read only for what they cannot name.
     */
    default int symbolizeUser(int pid, long processStartNs, long[] addrs, int count, long[] sampledMappings, List<Frame> out) {
        return symbolizeUser(pid, processStartNs, addrs, count, out);
    }

    /** Appends one frame per kernel address. */
    void symbolizeKernel(long[] addrs, int count, List<Frame> out);

    Stats stats();

    /** {@code --lines}: whether frames carry their binaries' source lines (on by default); may change at any time. */
    default void lines(boolean on) {}

    @Override
    void close();

    /** A symbolizer of native code only, with a process registry of its own. */
    static Symbolizer create(Options options) {
        ProcessRegistry registry = new ProcessRegistry(options.procRoot(), 1 << 16);
        return new ProcSymbolizer(options, registry, RuntimeRegistry.none(registry));
    }

    /** A symbolizer of native code only that reads processes through {@code registry}, shared with other consumers. */
    static Symbolizer create(Options options, ProcessRegistry registry) {
        return new ProcSymbolizer(options, registry, RuntimeRegistry.none(registry));
    }

    /**
     * A symbolizer that reads processes through {@code registry} and names runtimes' frames through {@code runtimes}
     * (both shared with the other consumers of /proc and of runtimes).
     */
    static Symbolizer create(Options options, ProcessRegistry registry, RuntimeRegistry runtimes) {
        return new ProcSymbolizer(options, registry, runtimes);
    }

    /**
     * @param procRoot      normally /proc (a host /proc mounted elsewhere in a container)
     * @param kallsyms      normally /proc/kallsyms
     * @param maxCacheBytes bound on cached symbol tables (weighed by their estimated heap size); a single
     *                      binary whose table would exceed it is reported and left unsymbolized
     * @param nanoTime      injected monotonic time in ns (process refresh, rate limits, cache expiry)
     */
    record Options(Path procRoot, Path kallsyms, long maxCacheBytes, LongSupplier nanoTime) {
        public Options {
            Objects.requireNonNull(procRoot, "procRoot");
            Objects.requireNonNull(kallsyms, "kallsyms");
            Objects.requireNonNull(nanoTime, "nanoTime");
            if (maxCacheBytes < (1 << 20)) {
                throw new IllegalArgumentException("maxCacheBytes must be at least 1 MiB, got " + maxCacheBytes);
            }
        }

        public static Options defaults() {
            // 32 MiB of symbol tables inside the agent's 96 MiB heap leaves room for the profile windows.
            return new Options(Path.of("/proc"), Path.of("/proc/kallsyms"), 32L << 20, System::nanoTime);
        }
    }

    /**
     * Counters since start (processes, binaries and cachedSymbolBytes are current sizes).
     *
     * @param processes          processes whose mappings are cached (including ones known unreadable)
     * @param binaries           binaries in the symbol cache (parse failures included)
     * @param binaryFailures     mapped files that are not usable ELF (each logged once)
     * @param unresolvedFrames   frames left without a function name
     * @param mapsReads          reads of /proc/PID/maps
     * @param mapsReadFailures   of those, failed (process gone, permission)
     * @param kernelSymbols      text symbols from kallsyms (0: unreadable or restricted)
     * @param frames             frames symbolized, user and kernel
     * @param cachedSymbolBytes  estimated heap held by the symbol cache
     * @param unreadableBinaries mapped files that could not be opened (process gone, permission)
     * @param malformedMapsLines lines of /proc/PID/maps that could not be parsed
     * @param pidReuses          pids found to belong to a new process
     * @param debugFiles         separate debug files (/usr/lib/debug/.build-id) used for stripped binaries
     * @param framesFromSampledMappings frames named from the mappings the kernel's walk found, without /proc
     * @param mappingsFromOwnRoot mappings of processes gone before their files could be opened through /proc, named by
     *                           the same file (device and inode) in the agent's own root
     */
    record Stats(long processes, long binaries, long binaryFailures, long unresolvedFrames, long mapsReads,
                 long mapsReadFailures, long kernelSymbols, long frames, long cachedSymbolBytes,
                 long unreadableBinaries, long malformedMapsLines, long pidReuses, long debugFiles,
                 long framesFromSampledMappings, long mappingsFromOwnRoot) {}
}
