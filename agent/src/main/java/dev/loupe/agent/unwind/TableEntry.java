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
    boolean runtimeTable; // a runtime's table for the file (an interpreter loop's rows of its kind), not its own
    long lastUsed;
    // In the kernel: null when not loaded (never, evicted, or it could not be built).
    Slots slots;
    int refs; // registered processes whose mappings name it
    // In the kernel's file tables (files and the vdso): the key the walker finds the file by, and what it was told.
    FileTableKey fileKey;
    FilePublication published; // null: no entry

    /** A file as the kernel keys it: its super block's device (kernel encoding) and inode. */
    record FileTableKey(long device, long inode) {
        /** The key of a maps line's file: the kernel encodes its device as MAJOR << 20 | MINOR. */
        static FileTableKey of(dev.loupe.unwinder.proc.MapEntry m) {
            return new FileTableKey((Integer.toUnsignedLong(m.devMajor()) << 20) | (m.devMinor() & 0xfffffL), m.inode());
        }
    }

    /** What the file's kernel entry says: a table (or stop reason), its flags. */
    record FilePublication(int kind, int tableOrReason, int flags) {}

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

    /**
     * p_vaddr - p_offset of the file's executable segments, which turns an offset in the file into the vaddr its table
     * is keyed by; null when they differ (the walker's file entry holds one: such a file is unwound per process).
     */
    Long vaddrDelta() {
        if (segments == null) {
            return null;
        }
        Long delta = null;
        for (LoadSegment s : segments) {
            if (s.executable()) {
                long d = s.vaddr() - s.offset();
                if (delta != null && delta != d) {
                    return null;
                }
                delta = d;
            }
        }
        return delta;
    }

    long bytes() {
        return UnwindTable.HEADER_BYTES + pages * 8L + rows * 4L + rules * 8L;
    }
}
