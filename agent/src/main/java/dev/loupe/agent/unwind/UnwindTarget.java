package dev.loupe.agent.unwind;

import java.util.List;

/**
 * Where unwind tables and process mappings go: the kernel's maps ({@link KernelUnwindTarget}) or a fake in
 * tests. Mirrors dev.loupe.bpf.UnwindMaps so the uploader's logic runs without BPF.
 */
interface UnwindTarget {
    int KIND_FRAME_POINTERS = 0;
    int KIND_TABLE = 1;
    int KIND_STOP = 2;

    /** Capacities of the shared arrays, in elements. */
    record Capacity(int tables, int pages, int rows, int rules, int mappings, int processes) {}

    record Mapping(long start, long end, long bias, int kind, int tableOrReason) {}

    Capacity capacity();

    void writeTable(int tableId, long pcBase, int pageStart, int[] pageWords, int rowStart, int[] rowWords, int ruleStart,
                    long[] ruleWords) throws Exception;

    void clearTable(int tableId) throws Exception;

    void writeMappings(int first, List<Mapping> sorted) throws Exception;

    void setProcess(int tgid, long startTicks, int first, int count) throws Exception;

    void removeProcess(int tgid) throws Exception;
}
