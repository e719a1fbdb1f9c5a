package dev.loupe.bpf;

/**
 * Calls of one probe in one process (and goroutine, for Go), with one caller stack, that fell into one
 * histogram bucket and one fine histogram bucket, since the previous {@link LatencyProbes#drainGroups()}.
 * Summed in the kernel at return.
 *
 * @param probe    the probe id
 * @param pid      the process (tgid) as this process's {@code /proc} names it; 0 for a process outside this
 *                 process's PID namespace (all such processes share it, and their groups have no stack)
 * @param goid     Go: the goroutine id; native code: 0
 * @param bucket   histogram bucket, as {@link LatencyHistogram#bucket(int)} (k: at most 2^k µs; 31: +Inf)
 * @param fineBucket fine histogram bucket, as {@link LatencyProbes#readFineHistograms()} indexes them
 *                 (0 .. {@link LatencyProbes#FINE_BUCKETS} - 1)
 * @param count    calls
 * @param sumNanos their total duration
 * @param comm     the name of the thread the first of them returned on ({@code bpf_get_current_comm}): kept
 *                 even if the process has exited since
 * @param stack    with stacks on: runtime addresses, the probed function's entry first, then return
 *                 addresses of its callers, innermost first (symbolize with the process's mappings);
 *                 empty with stacks off or when the stack was lost ({@code stackLost})
 * @param stackLost stacks were on but this group's stack could not be stored or was no longer known
 */
public record LatencyGroup(int probe, int pid, long goid, int bucket, int fineBucket, long count, long sumNanos,
                           String comm, long[] stack, boolean stackLost) {}
