package dev.loupe.bpf;

/**
 * Sampler counters since start. Drops are samples lost; read errors and truncations are samples kept
 * with a shortened user stack.
 *
 * @param samples          samples taken (not idle, passing the pid filter)
 * @param idle             samples of idle CPUs (ignored)
 * @param filtered         samples of processes outside the pid filter (ignored)
 * @param ringBufferDrops  samples lost because the ring buffer was full
 * @param userReadErrors   user stacks cut short because a frame could not be read
 * @param userTruncated    user stacks deeper than the frame limit
 * @param kernelErrors     kernel stacks that could not be taken
 * @param delivered        samples decoded and handed to the consumer
 * @param decodeErrors     records that could not be decoded (lost)
 * @param consumerErrors   samples whose consumer threw (lost; a bug in the consumer, not in the record)
 * @param fpFallback       samples with frames in files whose table was not in the kernel (yet): frame pointers
 * @param unwindStopped    user stacks that end in a marker frame naming why they stop early
 * @param tableFrames      user frames unwound with eh_frame tables
 * @param fpFrames         user frames unwound with frame pointers
 * @param pidOutside       samples of processes outside this process's PID namespace (no pid, no user stack)
 * @param fpNoFdeFrames    user frames in code a binary's table has no unwind info for (no FDE), stepped by
 *                         frame pointers after the checks passed (not counted in tableFrames or fpFrames)
 * @param processExits     exit records the kernel wrote (a process's last thread exited)
 * @param exitDrops        exit records lost to a full ring buffer (those exits are found by a /proc scan instead)
 * @param vmaLookups       mappings the walk found itself in a process's memory map (bpf_find_vma)
 * @param vmaLookupFailures pcs the walk found no executable mapping for (or the memory map was locked: the walk
 *                         keeps frame pointers for that frame)
 * @param fileTableMisses  mappings found of files whose table is not in the kernel (yet): walked with frame pointers
 */
public record SamplerStats(long samples, long idle, long filtered, long ringBufferDrops, long userReadErrors,
                           long userTruncated, long kernelErrors, long delivered, long decodeErrors,
                           long consumerErrors, long fpFallback, long unwindStopped, long tableFrames, long fpFrames,
                           long pidOutside, long fpNoFdeFrames, long processExits, long exitDrops,
                           long vmaLookups, long vmaLookupFailures, long fileTableMisses) {
    public static final SamplerStats EMPTY = new SamplerStats(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

    /** Samples lost for any reason. */
    public long dropped() {
        return ringBufferDrops + decodeErrors + consumerErrors;
    }
}
