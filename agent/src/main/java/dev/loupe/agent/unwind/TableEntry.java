package dev.loupe.agent.unwind;

import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.elf.LoadSegment;

import java.util.List;

/**
 * One binary's unwind table: built (or the reason it has none) by the {@link TableCache}, placed in the
 * kernel's arrays and counted by the {@link KernelTableSpace}. Touched on the uploader's thread only.
 */
final class TableEntry {
    /** Where a loaded table's header and contents sit in the kernel's arrays. */
    record Slots(int id, int pageStart, int rowStart, int ruleStart) {}

    final Object key;
    final String name;
    // The table's shape, from its last build.
    long pcBase;
    int pages;
    int rows;
    int rules;
    List<LoadSegment> segments;
    UnwindTable retained; // only for images that cannot be re-read from a file (the vdso)
    StopReason failure; // it has no table: this is why
    long lastUsed;
    // In the kernel: null when not loaded (never, evicted, or it could not be built).
    Slots slots;
    int refs; // registered processes whose mappings name it

    TableEntry(Object key, String name) {
        this.key = key;
        this.name = name;
    }

    boolean loaded() {
        return slots != null;
    }

    /** The table id the kernel knows it by (loaded tables only). */
    int id() {
        return slots.id();
    }

    long bytes() {
        return UnwindTable.HEADER_BYTES + pages * 8L + rows * 4L + rules * 8L;
    }
}
