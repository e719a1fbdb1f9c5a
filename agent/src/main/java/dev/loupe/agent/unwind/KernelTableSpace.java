package dev.loupe.agent.unwind;

import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The kernel's unwind arrays as a bounded space: slices of table ids, pages, rows, rules and process
 * mappings handed out first-fit, loaded tables evicted least recently used (unreferenced ones first) when
 * a new one does not fit, and how many registered processes reference each table. Used on the uploader's
 * thread; the sizes are also read by /metrics.
 */
final class KernelTableSpace {
    /** How {@link #load} went. */
    enum Load { LOADED, LARGER_THAN_BUDGET, NO_ROOM }

    /** The registered processes whose mappings name a table. */
    interface Users {
        /**
         * Takes the processes using {@code table} out of the kernel (they are walked with frame pointers, marked,
         * until registered again); true if there were any.
         */
        boolean unpublish(TableEntry table) throws Exception;
    }

    private final UnwindTarget target;
    private final UnwindTarget.Capacity capacity;
    private final Users users;
    private final RangeAllocator tableIds;
    private final RangeAllocator pageSlots;
    private final RangeAllocator rowSlots;
    private final RangeAllocator ruleSlots;
    private final RangeAllocator mappingSlots;
    private final Set<TableEntry> loaded = new LinkedHashSet<>(); // in load order: the older of two equally recent goes first
    /** Which table each file's kernel entry names (a file rewritten in place has a new entry under the same key). */
    private final Map<TableEntry.FileTableKey, TableEntry> files = new HashMap<>();
    private volatile long filesPublished;
    private final AtomicLong evictions = new AtomicLong();
    private volatile long tablesLoaded;
    private volatile long rowsLoaded;
    private volatile long bytesLoaded;
    private volatile long mappingsInUse;
    private final AtomicLong mappingsAllocated = new AtomicLong();

    KernelTableSpace(UnwindTarget target, Users users) {
        this.target = target;
        this.users = users;
        this.capacity = target.capacity();
        this.tableIds = new RangeAllocator(capacity.tables());
        this.pageSlots = new RangeAllocator(capacity.pages());
        this.rowSlots = new RangeAllocator(capacity.rows());
        this.ruleSlots = new RangeAllocator(capacity.rules());
        this.mappingSlots = new RangeAllocator(capacity.mappings());
    }

    /**
     * Writes a built table into free slices, evicting least recently used tables (never one in {@code pinned})
     * until it fits. A table larger than the whole space is not loaded; nor is one that fits only if pinned
     * tables went.
     */
    Load load(TableEntry t, TableWords words, Set<TableEntry> pinned) throws Exception {
        if (t.pages > capacity.pages() || t.rows > capacity.rows() || t.rules > capacity.rules()) {
            return Load.LARGER_THAN_BUDGET;
        }
        TableEntry.Slots slots;
        while ((slots = allocate(t)) == null) {
            if (!evictOne(pinned)) {
                return Load.NO_ROOM;
            }
        }
        try {
            target.writeTable(slots.id(), t.pcBase, slots.pageStart(), words.pageWords(), slots.rowStart(), words.rowWords(),
                    slots.ruleStart(), words.ruleWords());
        } catch (Exception e) {
            release(t, slots);
            throw e;
        }
        t.slots = slots;
        loaded.add(t);
        tablesLoaded++;
        rowsLoaded += t.rows;
        bytesLoaded += t.bytes();
        return Load.LOADED;
    }

    /** All of the table's slices, or none (null). */
    private TableEntry.Slots allocate(TableEntry t) {
        int id = tableIds.allocate(1);
        int p = id < 0 ? -1 : pageSlots.allocate(t.pages);
        int r = p < 0 ? -1 : rowSlots.allocate(t.rows);
        int u = r < 0 ? -1 : ruleSlots.allocate(t.rules);
        if (u >= 0) {
            return new TableEntry.Slots(id, p, r, u);
        }
        if (r >= 0) {
            rowSlots.release(r, t.rows);
        }
        if (p >= 0) {
            pageSlots.release(p, t.pages);
        }
        if (id >= 0) {
            tableIds.release(id, 1);
        }
        return null;
    }

    private void release(TableEntry t, TableEntry.Slots s) {
        tableIds.release(s.id(), 1);
        pageSlots.release(s.pageStart(), t.pages);
        rowSlots.release(s.rowStart(), t.rows);
        ruleSlots.release(s.ruleStart(), t.rules);
    }

    /** Evicts the least recently used loaded table, unreferenced ones first; false if none can go. */
    private boolean evictOne(Set<TableEntry> pinned) throws Exception {
        TableEntry victim = null;
        for (TableEntry t : loaded) {
            if (!pinned.contains(t) && (victim == null || evictsBefore(t, victim))) {
                victim = t;
            }
        }
        if (victim == null) {
            return false;
        }
        // The processes that use it go back to frame pointers (marked) first, and so does its file's entry: they name
        // this table id, which the next upload may reuse for another binary; walked with that one stacks would be wrong.
        boolean unpublished = victim.refs > 0 && users.unpublish(victim);
        unpublished |= unpublishFile(victim);
        target.clearTable(victim.id());
        if (unpublished) {
            Thread.sleep(1); // a walk already past the process lookup on another CPU ends within microseconds
        }
        release(victim, victim.slots);
        victim.slots = null;
        loaded.remove(victim);
        tablesLoaded--;
        rowsLoaded -= victim.rows;
        bytesLoaded -= victim.bytes();
        evictions.incrementAndGet();
        return true;
    }

    /**
     * Takes a table no process names any more out of the kernel at once (a JIT table replaced by a newer one: nothing
     * else will ever use it). False, and nothing done, while a process still names it.
     */
    boolean drop(TableEntry t) throws Exception {
        if (t.refs > 0) {
            return false;
        }
        if (t.loaded()) {
            unpublishFile(t);
            target.clearTable(t.id());
            release(t, t.slots);
            t.slots = null;
            loaded.remove(t);
            tablesLoaded--;
            rowsLoaded -= t.rows;
            bytesLoaded -= t.bytes();
        }
        return true;
    }

    /**
     * Tells the walker what to do with every mapping of {@code key}'s file while it has this size and modification time:
     * use {@code t} (loaded), stop with its reason (it has no table), or, where its executable segments do not share
     * one offset-to-vaddr delta, walk it per process (registration). Nothing is written if the entry says so already;
     * nothing is published for a table not loaded now (the walker keeps frame pointers there and asks again).
     * {@code flags}: {@link UnwindTarget#FILE_NEEDS_PROCESS} for a runtime's file.
     */
    void publishFile(TableEntry t, TableEntry.FileTableKey key, long size, long mtimeNanos, int flags) throws Exception {
        TableEntry.FilePublication what;
        long delta = 0;
        Long d = t.vaddrDelta();
        if (t.failure != null) {
            what = new TableEntry.FilePublication(UnwindTarget.KIND_STOP, t.failure.code(), flags);
        } else if (!t.loaded()) {
            return;
        } else if (d == null) {
            what = new TableEntry.FilePublication(UnwindTarget.KIND_FRAME_POINTERS, 0, flags | UnwindTarget.FILE_NEEDS_PROCESS);
        } else {
            what = new TableEntry.FilePublication(UnwindTarget.KIND_TABLE, t.id(), flags);
            delta = d;
        }
        if (what.equals(t.published) && key.equals(t.fileKey) && files.get(key) == t) {
            return;
        }
        target.setFile(key.device(), key.inode(), size, mtimeNanos, what.kind(), what.tableOrReason(), what.flags(), delta);
        TableEntry before = files.put(key, t);
        if (before != null && before != t) {
            before.published = null; // its file changed in place: the entry is the new content's now
        }
        t.fileKey = key;
        t.published = what;
        filesPublished = files.size();
    }

    /** Takes a table's file entry out of the kernel, if it has one there; true if it had. */
    private boolean unpublishFile(TableEntry t) throws Exception {
        if (t.published == null) {
            return false;
        }
        t.published = null;
        if (files.get(t.fileKey) != t) {
            return false;
        }
        files.remove(t.fileKey);
        filesPublished = files.size();
        target.removeFile(t.fileKey.device(), t.fileKey.inode());
        return true;
    }

    /** Files the walker finds by their identity (read by /metrics). */
    long filesPublished() {
        return filesPublished;
    }

    private static boolean evictsBefore(TableEntry a, TableEntry b) {
        if ((a.refs == 0) != (b.refs == 0)) {
            return a.refs == 0;
        }
        return a.lastUsed < b.lastUsed;
    }

    /** The first of {@code n} consecutive mapping slots, now taken; -1 if there is no such run. */
    int allocateMappings(int n) {
        int first = mappingSlots.allocate(n);
        mappingsInUse = mappingSlots.used();
        if (first >= 0) {
            mappingsAllocated.addAndGet(n);
        }
        return first;
    }

    void releaseMappings(int first, int n) {
        mappingSlots.release(first, n);
        mappingsInUse = mappingSlots.used();
    }

    /** Mapping slots handed out since start (a churn of processes takes many times the capacity). */
    long mappingsAllocated() {
        return mappingsAllocated.get();
    }

    /** Mapping slots held by registered processes now (read by /metrics). */
    long mappingsInUse() {
        return mappingsInUse;
    }

    /** A process now names these tables (once per mapping). */
    void hold(List<TableEntry> tables) {
        for (TableEntry t : tables) {
            t.refs++;
        }
    }

    /** A process no longer names these tables; they stay loaded until evicted. */
    void release(List<TableEntry> tables) {
        for (TableEntry t : tables) {
            t.refs--;
        }
    }

    UnwindTarget.Capacity capacity() {
        return capacity;
    }

    long tablesLoaded() {
        return tablesLoaded;
    }

    long rowsLoaded() {
        return rowsLoaded;
    }

    long bytesLoaded() {
        return bytesLoaded;
    }

    long evictions() {
        return evictions.get();
    }
}
