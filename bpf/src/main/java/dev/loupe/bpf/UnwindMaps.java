package dev.loupe.bpf;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The profiler's unwind maps, written from Java: unwind tables (pages, rows, rules: plain arrays built by
 * the unwinder) in slices of shared arrays, and each process's sorted executable mappings. Which slice a
 * table or process gets is the caller's allocation; this class only writes. Writes publish last: a table's
 * header after its rows, a process's entry after its mappings, so the kernel never sees half a table.
 */
public final class UnwindMaps {
    /** How each executable mapping is unwound (exec_mapping.kind). */
    public static final int KIND_FRAME_POINTERS = 0;
    public static final int KIND_TABLE = 1;
    public static final int KIND_STOP = 2;
    /** Steps of the walker's binary search of a process's mappings (loupe_abi.h's MAPPING_SEARCH_STEPS). */
    public static final int MAPPING_SEARCH_STEPS = 12;
    /** file_table.flags: a process mapping this file needs its own registration (a runtime's file). */
    public static final int FILE_NEEDS_PROCESS = 1;
    /** The vdso's key in the file tables (no file has device 0 and inode 0). */
    public static final long VDSO_DEVICE = 0;
    public static final long VDSO_INODE = 0;
    private static final int BATCH = 1 << 14;

    /**
     * Map sizes, fixed at load. Bytes: tables 24, pages 8, rows 4, rules 8, mappings 32, files 56 each.
     */
    public record Capacity(int tables, int pages, int rows, int rules, int mappings, int processes, int files) {
        public Capacity {
            if (tables < 1 || pages < 1 || rows < 1 || rules < 1 || mappings < 1 || processes < 1 || files < 1) {
                throw new IllegalArgumentException("unwind map capacities must be positive: " + this);
            }
        }

        /**
         * Capacities for a budget of kernel memory in bytes: three quarters for rows (4 B each, the bulk of
         * every table), the rest split between pages, rules and per-process mappings.
         */
        public static Capacity forBudget(long bytes) {
            if (bytes < (1 << 20)) {
                throw new IllegalArgumentException("unwind table budget must be at least 1 MiB, got " + bytes);
            }
            long rows = bytes * 3 / 4 / 4;
            long rest = bytes - rows * 4;
            return new Capacity(4096, (int) Math.max(1024, rest / 4 / 8), (int) Math.min(Integer.MAX_VALUE - 8, rows),
                    (int) Math.max(1024, rest / 4 / 8), (int) Math.max(1024, rest / 4 / 32), 1 << 14, 1 << 13);
        }

        public long bytes() {
            return tables * 24L + pages * 8L + rows * 4L + rules * 8L + mappings * 32L + processes * 24L + files * 56L;
        }
    }

    /** One executable mapping; {@code tableOrReason} is the table id (KIND_TABLE) or stop reason (KIND_STOP). */
    public record ExecMapping(long start, long end, long bias, int kind, int tableOrReason) {}

    private final BpfMap tables;
    private final BpfMap pages;
    private final BpfMap rows;
    private final BpfMap rules;
    private final BpfMap mappings;
    private final BpfMap procs;
    private final BpfMap files;
    private final Capacity capacity;

    UnwindMaps(BpfObject object, Capacity capacity) throws BpfException {
        this.tables = object.map("unwind_tables");
        this.pages = object.map("unwind_pages");
        this.rows = object.map("unwind_rows");
        this.rules = object.map("unwind_rules");
        this.mappings = object.map("mappings");
        this.procs = object.map("procs");
        this.files = object.map("file_tables");
        this.capacity = capacity;
    }

    static void resize(BpfObject object, Capacity c) throws BpfException {
        object.resizeMap("unwind_tables", c.tables());
        object.resizeMap("unwind_pages", c.pages());
        object.resizeMap("unwind_rows", c.rows());
        object.resizeMap("unwind_rules", c.rules());
        object.resizeMap("mappings", c.mappings());
        object.resizeMap("procs", c.processes());
        object.resizeMap("file_tables", c.files());
    }

    /** A device as the kernel encodes it in a super block ({@code MAJOR << 20 | MINOR}), from a maps line's numbers. */
    public static long kernelDevice(int major, int minor) {
        return (Integer.toUnsignedLong(major) << 20) | (minor & 0xfffffL);
    }

    /**
     * What the walker uses for every mapping of the file {@code device} (kernel encoding) and {@code inode} whose size
     * and modification time are these: the table {@code tableOrReason} (KIND_TABLE) or the stop reason (KIND_STOP).
     * {@code vaddrDelta} turns an offset in the file into the vaddr the table is keyed by (the executable segments'
     * p_vaddr - p_offset).
     */
    public synchronized void setFile(long device, long inode, long size, long mtimeNanos, int kind, int tableOrReason,
                                     int flags, long vaddrDelta) throws BpfException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(KernelAbi.FILE_TABLE);
            v.set(JAVA_LONG, KernelAbi.offset(KernelAbi.FILE_TABLE, "size"), size);
            v.set(JAVA_LONG, KernelAbi.offset(KernelAbi.FILE_TABLE, "mtime_sec"), Math.floorDiv(mtimeNanos, 1_000_000_000L));
            v.set(JAVA_INT, KernelAbi.offset(KernelAbi.FILE_TABLE, "mtime_nsec"), (int) Math.floorMod(mtimeNanos, 1_000_000_000L));
            v.set(JAVA_INT, KernelAbi.offset(KernelAbi.FILE_TABLE, "kind"), kind);
            v.set(JAVA_INT, KernelAbi.offset(KernelAbi.FILE_TABLE, "table_id"), tableOrReason);
            v.set(JAVA_INT, KernelAbi.offset(KernelAbi.FILE_TABLE, "flags"), flags);
            v.set(JAVA_LONG, KernelAbi.offset(KernelAbi.FILE_TABLE, "vaddr_delta"), vaddrDelta);
            files.update(fileKey(a, device, inode), v, BpfMap.BPF_ANY);
        }
    }

    /** Takes a file's entry out (its table was evicted); false if it had none. */
    public synchronized boolean removeFile(long device, long inode) throws BpfException {
        try (Arena a = Arena.ofConfined()) {
            return files.delete(fileKey(a, device, inode));
        }
    }

    private static MemorySegment fileKey(Arena a, long device, long inode) {
        MemorySegment k = a.allocate(KernelAbi.FILE_KEY);
        k.set(JAVA_LONG, KernelAbi.offset(KernelAbi.FILE_KEY, "dev"), device);
        k.set(JAVA_LONG, KernelAbi.offset(KernelAbi.FILE_KEY, "ino"), inode);
        return k;
    }

    public Capacity capacity() {
        return capacity;
    }

    /**
     * Writes a table into its slices and then publishes its header. {@code pageWords} holds
     * {first_row, row_count} pairs with table-local row numbers, {@code rowWords} pc_low | rule << 16.
     */
    public synchronized void writeTable(int tableId, long pcBase, int pageStart, int[] pageWords, int rowStart, int[] rowWords,
                                        int ruleStart, long[] ruleWords) throws BpfException {
        check("table", tableId, 1, capacity.tables());
        check("page", pageStart, pageWords.length / 2, capacity.pages());
        check("row", rowStart, rowWords.length, capacity.rows());
        check("rule", ruleStart, ruleWords.length, capacity.rules());
        writeInts(pages, pageStart, pageWords, 2);
        writeInts(rows, rowStart, rowWords, 1);
        try (Arena a = Arena.ofConfined()) {
            for (int off = 0; off < ruleWords.length; off += BATCH) {
                int n = Math.min(BATCH, ruleWords.length - off);
                MemorySegment keys = a.allocate(4L * n, 4);
                MemorySegment values = a.allocate(8L * n, 8);
                for (int i = 0; i < n; i++) {
                    keys.setAtIndex(JAVA_INT, i, ruleStart + off + i);
                    values.setAtIndex(JAVA_LONG, i, ruleWords[off + i]);
                }
                rules.updateBatch(keys, values, n, BpfMap.BPF_ANY);
            }
            tables.update(tableId, header(a, pcBase, pageStart, pageWords.length / 2, rowStart, ruleStart), BpfMap.BPF_ANY);
        }
    }

    /** Unpublishes a table (evicted): lookups in it find nothing until it is written again. */
    public synchronized void clearTable(int tableId) throws BpfException {
        check("table", tableId, 1, capacity.tables());
        try (Arena a = Arena.ofConfined()) {
            tables.update(tableId, header(a, 0, 0, 0, 0, 0), BpfMap.BPF_ANY);
        }
    }

    /** Writes a process's mappings, sorted by start, into slots [first, first + size). */
    public synchronized void writeMappings(int first, List<ExecMapping> sorted) throws BpfException {
        check("mapping", first, sorted.size(), capacity.mappings());
        if (sorted.isEmpty()) {
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            long size = KernelAbi.EXEC_MAPPING.byteSize();
            MemorySegment keys = a.allocate(4L * sorted.size(), 4);
            MemorySegment values = a.allocate(size * sorted.size(), 8);
            long prevStart = Long.MIN_VALUE;
            for (int i = 0; i < sorted.size(); i++) {
                ExecMapping m = sorted.get(i);
                if (m.start() < prevStart || Long.compareUnsigned(m.end(), m.start()) <= 0) {
                    throw new IllegalArgumentException("mappings must be sorted and non-empty: " + m);
                }
                prevStart = m.start();
                keys.setAtIndex(JAVA_INT, i, first + i);
                MemorySegment v = values.asSlice(i * size, size);
                v.set(JAVA_LONG, KernelAbi.offset(KernelAbi.EXEC_MAPPING, "start"), m.start());
                v.set(JAVA_LONG, KernelAbi.offset(KernelAbi.EXEC_MAPPING, "end"), m.end());
                v.set(JAVA_LONG, KernelAbi.offset(KernelAbi.EXEC_MAPPING, "bias"), m.bias());
                v.set(JAVA_INT, KernelAbi.offset(KernelAbi.EXEC_MAPPING, "kind"), m.kind());
                v.set(JAVA_INT, KernelAbi.offset(KernelAbi.EXEC_MAPPING, "table_id"), m.tableOrReason());
            }
            mappings.updateBatch(keys, values, sorted.size(), BpfMap.BPF_ANY);
        }
    }

    /**
     * Publishes a process's mappings slice, valid for samples of this process start only: {@code startTicks}
     * is /proc/PID/stat's starttime (clock ticks since boot).
     */
    public synchronized void setProcess(int tgid, long startTicks, int first, int count) throws BpfException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(KernelAbi.PROC_UNWIND);
            v.set(JAVA_LONG, KernelAbi.offset(KernelAbi.PROC_UNWIND, "start_ticks"), startTicks);
            v.set(JAVA_INT, KernelAbi.offset(KernelAbi.PROC_UNWIND, "first"), first);
            v.set(JAVA_INT, KernelAbi.offset(KernelAbi.PROC_UNWIND, "count"), count);
            procs.update(a.allocateFrom(JAVA_INT, tgid), v, BpfMap.BPF_ANY);
        }
    }

    /** Forgets a process (exited); false if it was not registered. */
    public synchronized boolean removeProcess(int tgid) throws BpfException {
        try (Arena a = Arena.ofConfined()) {
            return procs.delete(a.allocateFrom(JAVA_INT, tgid));
        }
    }

    private static MemorySegment header(Arena a, long pcBase, int pageStart, int pageCount, int rowStart, int ruleStart) {
        MemorySegment h = a.allocate(KernelAbi.UNWIND_TABLE);
        h.set(JAVA_LONG, KernelAbi.offset(KernelAbi.UNWIND_TABLE, "pc_base"), pcBase);
        h.set(JAVA_INT, KernelAbi.offset(KernelAbi.UNWIND_TABLE, "page_start"), pageStart);
        h.set(JAVA_INT, KernelAbi.offset(KernelAbi.UNWIND_TABLE, "page_count"), pageCount);
        h.set(JAVA_INT, KernelAbi.offset(KernelAbi.UNWIND_TABLE, "row_start"), rowStart);
        h.set(JAVA_INT, KernelAbi.offset(KernelAbi.UNWIND_TABLE, "rule_start"), ruleStart);
        return h;
    }

    /** Writes elements of {@code perElement} u32 words each at [start, start + words/perElement). */
    private static void writeInts(BpfMap map, int start, int[] words, int perElement) throws BpfException {
        int elements = words.length / perElement;
        try (Arena a = Arena.ofConfined()) {
            for (int off = 0; off < elements; off += BATCH) {
                int n = Math.min(BATCH, elements - off);
                MemorySegment keys = a.allocate(4L * n, 4);
                MemorySegment values = a.allocate(4L * perElement * n, 8);
                for (int i = 0; i < n; i++) {
                    keys.setAtIndex(JAVA_INT, i, start + off + i);
                }
                MemorySegment.copy(words, off * perElement, values, JAVA_INT, 0, n * perElement);
                map.updateBatch(keys, values, n, BpfMap.BPF_ANY);
            }
        }
    }

    private static void check(String what, int start, int count, int capacity) {
        if (start < 0 || count < 0 || (long) start + count > capacity) {
            throw new IllegalArgumentException(what + " slice [" + start + ", +" + count + ") exceeds capacity " + capacity);
        }
    }
}
