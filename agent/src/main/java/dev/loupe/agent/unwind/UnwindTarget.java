package dev.loupe.agent.unwind;

import dev.loupe.bpf.UnwindMaps;

import java.util.List;

/**
 * Where unwind tables and process mappings go: the kernel's maps ({@link KernelUnwindTarget}) or a fake in
 * tests. Mirrors dev.loupe.bpf.UnwindMaps so the uploader's logic runs without BPF.
 */
interface UnwindTarget {
    /** exec_mapping.kind: UnwindMaps' values (compile-time constants, so a fake target loads no BPF class). */
    int KIND_FRAME_POINTERS = UnwindMaps.KIND_FRAME_POINTERS;
    int KIND_TABLE = UnwindMaps.KIND_TABLE;
    int KIND_STOP = UnwindMaps.KIND_STOP;
    /** file_table.flags: a process mapping the file needs its own registration (a runtime's file). */
    int FILE_NEEDS_PROCESS = UnwindMaps.FILE_NEEDS_PROCESS;
    long VDSO_DEVICE = UnwindMaps.VDSO_DEVICE;
    long VDSO_INODE = UnwindMaps.VDSO_INODE;
    /**
     * The most executable mappings of one process the walker's bounded binary search finds among (2 to the power of
     * its steps); a process with more is not registered, rather than have some of its mappings silently not found.
     */
    int MAX_MAPPINGS_PER_PROCESS = 1 << UnwindMaps.MAPPING_SEARCH_STEPS;

    /** Capacities of the shared arrays, in elements. */
    record Capacity(int tables, int pages, int rows, int rules, int mappings, int processes, int files) {}

    record Mapping(long start, long end, long bias, int kind, int tableOrReason) {}

    Capacity capacity();

    void writeTable(int tableId, long pcBase, int pageStart, int[] pageWords, int rowStart, int[] rowWords, int ruleStart,
                    long[] ruleWords) throws Exception;

    void clearTable(int tableId) throws Exception;

    void writeMappings(int first, List<Mapping> sorted) throws Exception;

    void setProcess(int tgid, long startTicks, int first, int count) throws Exception;

    void removeProcess(int tgid) throws Exception;

    /**
     * The walker's entry for a file (device in the kernel's encoding, inode), for every process that maps it: valid
     * while the file has this size and modification time; {@code kind} KIND_TABLE (a table id), KIND_STOP (a reason) or
     * KIND_FRAME_POINTERS; {@code vaddrDelta} turns a file offset into the table's vaddrs.
     */
    void setFile(long device, long inode, long size, long mtimeNanos, int kind, int tableOrReason, int flags, long vaddrDelta)
            throws Exception;

    void removeFile(long device, long inode) throws Exception;
}
