package dev.loupe.unwinder.symbolize;

import java.nio.file.Path;
import java.time.InstantSource;
import java.util.List;

/**
 * Turns sampled addresses into frames. Stacks are leaf first: index 0 is the exact interrupted IP, the
 * rest are return addresses, looked up at address - 1. Called from one thread; {@link #stats()} from any.
 */
public interface Symbolizer extends AutoCloseable {
    /**
     * Appends one frame per user address of process {@code pid}. Never throws for bad processes or files.
     *
     * @param processStartNs the process's start time in ns since boot as the kernel reported it with the
     *                       sample (exact PID-reuse detection), or 0 if unknown
     */
    void symbolizeUser(int pid, long processStartNs, long[] addrs, int count, List<Frame> out);

    /** As above, for a process whose start time is not known. */
    default void symbolizeUser(int pid, long[] addrs, int count, List<Frame> out) {
        symbolizeUser(pid, 0, addrs, count, out);
    }

    /** Appends one frame per kernel address. */
    void symbolizeKernel(long[] addrs, int count, List<Frame> out);

    Stats stats();

    @Override
    void close();

    static Symbolizer create(Options options) {
        return new ProcSymbolizer(options);
    }

    /**
     * @param procRoot      normally /proc
     * @param kallsyms      normally /proc/kallsyms
     * @param maxCacheBytes bound on cached symbol tables (weighed by their estimated heap size)
     * @param clock         injected time (process refresh, cache expiry)
     */
    record Options(Path procRoot, Path kallsyms, long maxCacheBytes, InstantSource clock) {
        public static Options defaults() {
            // 32 MiB of symbol tables inside the agent's 96 MiB heap leaves room for the profile windows.
            return new Options(Path.of("/proc"), Path.of("/proc/kallsyms"), 32L << 20, InstantSource.system());
        }
    }

    /** Counters since start. */
    record Stats(long processes, long binaries, long binaryFailures, long unresolvedFrames, long mapsReads,
                 long mapsReadFailures, long kernelSymbols) {}
}
