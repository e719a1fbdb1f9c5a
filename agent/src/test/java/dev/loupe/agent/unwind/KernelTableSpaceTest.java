package dev.loupe.agent.unwind;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The space over a fake kernel that logs what is written: placement, eviction order, unpublishing, counts. */
class KernelTableSpaceTest {
    /** Logs table writes and clears (a write can be made to fail); process calls are not the space's business. */
    static final class LoggingTarget implements UnwindTarget {
        final Capacity capacity;
        final List<String> log = new ArrayList<>();
        int failWrites;

        LoggingTarget(Capacity capacity) {
            this.capacity = capacity;
        }

        @Override
        public Capacity capacity() {
            return capacity;
        }

        @Override
        public void writeTable(int id, long pcBase, int pageStart, int[] pw, int rowStart, int[] rw, int ruleStart, long[] ru)
                throws Exception {
            if (failWrites > 0) {
                failWrites--;
                throw new Exception("map update failed");
            }
            log.add("write " + id + " pages@" + pageStart + "x" + pw.length / 2 + " rows@" + rowStart + "x" + rw.length
                    + " rules@" + ruleStart + "x" + ru.length);
        }

        @Override
        public void clearTable(int id) {
            log.add("clear " + id);
        }

        @Override
        public void writeMappings(int first, List<Mapping> sorted) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void setProcess(int tgid, long startTicks, int first, int count) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void removeProcess(int tgid) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void setFile(long device, long inode, long size, long mtimeNanos, int kind, int tableOrReason, int flags,
                            long vaddrDelta) {
            log.add("file " + device + ":" + inode + " kind " + kind + " table " + tableOrReason);
        }

        @Override
        public void removeFile(long device, long inode) {
            log.add("unfile " + device + ":" + inode);
        }
    }

    /** Room for 3 tables, 100 rows, 10 pages, 10 rules, 20 mappings. */
    private final LoggingTarget target = new LoggingTarget(new UnwindTarget.Capacity(3, 10, 100, 10, 20, 8, 256));
    private final List<String> unpublished = new ArrayList<>();
    private final KernelTableSpace space = new KernelTableSpace(target, t -> {
        unpublished.add(t.name);
        target.log.add("unpublish " + t.name);
        return true;
    });

    private static TableEntry table(String name, int pages, int rows, int rules, long lastUsed) {
        TableEntry t = new TableEntry(name, name);
        t.pages = pages;
        t.rows = rows;
        t.rules = rules;
        t.lastUsed = lastUsed;
        return t;
    }

    private static TableWords words(TableEntry t) {
        return new TableWords(new int[2 * t.pages], new int[t.rows], new long[t.rules]);
    }

    private KernelTableSpace.Load load(TableEntry t, TableEntry... pinned) throws Exception {
        return space.load(t, words(t), Set.of(pinned));
    }

    /** A table loaded with nothing pinned (it must fit). */
    private TableEntry loaded(String name, int pages, int rows, int rules, long lastUsed) throws Exception {
        TableEntry t = table(name, pages, rows, rules, lastUsed);
        assertEquals(KernelTableSpace.Load.LOADED, load(t), name);
        return t;
    }

    @Test
    void tablesGetConsecutiveSlicesAndAreCounted() throws Exception {
        TableEntry a = table("a", 2, 30, 3, 1);
        TableEntry b = table("b", 1, 20, 2, 2);
        assertEquals(KernelTableSpace.Load.LOADED, load(a));
        assertEquals(KernelTableSpace.Load.LOADED, load(b));
        assertEquals(List.of("write 0 pages@0x2 rows@0x30 rules@0x3", "write 1 pages@2x1 rows@30x20 rules@3x2"), target.log);
        assertEquals(new TableEntry.Slots(1, 2, 30, 3), b.slots);
        assertEquals(2, space.tablesLoaded());
        assertEquals(50, space.rowsLoaded());
        assertEquals(a.bytes() + b.bytes(), space.bytesLoaded());
        assertEquals(16 + 2 * 8 + 30 * 4 + 3 * 8, a.bytes());
        assertEquals(0, space.evictions());
    }

    @Test
    void unreferencedTablesGoFirstThenTheLeastRecentlyUsed() throws Exception {
        TableEntry a = loaded("a", 1, 40, 1, 1);
        TableEntry b = loaded("b", 1, 40, 1, 2);
        space.hold(List.of(a)); // a process maps a
        TableEntry c = table("c", 1, 40, 1, 3);
        assertEquals(KernelTableSpace.Load.LOADED, load(c));
        assertFalse(b.loaded(), "b is newer than a but unreferenced: it goes");
        assertTrue(a.loaded());
        assertEquals(List.of(), unpublished, "an unreferenced table has no processes to unpublish");

        TableEntry d = table("d", 1, 40, 1, 4);
        load(d);
        assertFalse(c.loaded(), "c (unreferenced) before a (referenced, older)");
        space.release(List.of(a)); // its process exited
        TableEntry e = table("e", 1, 40, 1, 5);
        load(e);
        assertFalse(a.loaded(), "both unreferenced now: a is the least recently used");
        assertTrue(d.loaded());
        assertEquals(3, space.evictions());
        assertEquals(List.of("clear 1", "clear 1", "clear 0"), target.log.stream().filter(s -> s.startsWith("clear")).toList(),
                "b (id 1), c (id 1 again: the lowest free id), a (id 0)");
        assertEquals(2, space.tablesLoaded());
        assertEquals(80, space.rowsLoaded());
        assertEquals(d.bytes() + e.bytes(), space.bytesLoaded());
    }

    @Test
    void equallyRecentTablesGoInLoadOrder() throws Exception {
        TableEntry a = table("a", 1, 1, 1, 7);
        TableEntry b = table("b", 1, 1, 1, 7);
        TableEntry c = table("c", 1, 1, 1, 7);
        load(b);
        load(a);
        load(c);
        load(table("d", 1, 1, 1, 8)); // out of table ids: one goes
        assertFalse(b.loaded());
        assertTrue(a.loaded());
        assertTrue(c.loaded());
    }

    @Test
    void aReferencedVictimsProcessesLeaveTheKernelBeforeItsIdIsCleared() throws Exception {
        TableEntry a = loaded("a", 1, 60, 1, 1);
        space.hold(List.of(a, a)); // two mappings of one process, or two processes
        TableEntry b = table("b", 1, 60, 1, 2);
        target.log.clear();
        assertEquals(KernelTableSpace.Load.LOADED, load(b));
        assertEquals(List.of("unpublish a", "clear 0", "write 0 pages@0x1 rows@0x60 rules@0x1"), target.log,
                "b gets a's id and slices only after no process names the id and the header is cleared");
        assertNull(a.slots);
        assertEquals(2, a.refs, "references stay with the (stale) processes until they unregister");
    }

    @Test
    void pinnedTablesStayAndAPartialAllocationIsGivenBack() throws Exception {
        TableEntry a = loaded("a", 4, 50, 4, 1);
        TableEntry b = loaded("b", 4, 10, 4, 2);
        // Pages, rows and ids are free for c; rules are not (8 of 10 taken). Both loaded tables are pinned.
        TableEntry c = table("c", 2, 30, 3, 3);
        assertEquals(KernelTableSpace.Load.NO_ROOM, load(c, a, b));
        assertTrue(a.loaded());
        assertTrue(b.loaded());
        assertFalse(c.loaded());
        assertEquals(0, space.evictions());
        // The id, pages and rows c held while its rules were missing are free again: a table that fits takes them.
        TableEntry d = table("d", 2, 40, 2, 4);
        assertEquals(KernelTableSpace.Load.LOADED, load(d, a, b));
        assertEquals(new TableEntry.Slots(2, 8, 60, 8), d.slots);
    }

    @Test
    void aTableLargerThanTheWholeSpaceEvictsNothing() throws Exception {
        TableEntry a = loaded("a", 1, 10, 1, 1);
        assertEquals(KernelTableSpace.Load.LARGER_THAN_BUDGET, load(table("huge", 1, 101, 1, 2)));
        assertEquals(KernelTableSpace.Load.LARGER_THAN_BUDGET, load(table("many pages", 11, 1, 1, 2)));
        assertEquals(KernelTableSpace.Load.LARGER_THAN_BUDGET, load(table("many rules", 1, 1, 11, 2)));
        assertTrue(a.loaded());
        assertEquals(0, space.evictions());
    }

    @Test
    void aFailedWriteGivesItsSlicesBack() throws Exception {
        TableEntry a = table("a", 10, 100, 10, 1);
        target.failWrites = 1;
        assertThrows(Exception.class, () -> load(a));
        assertFalse(a.loaded());
        assertEquals(0, space.tablesLoaded());
        assertEquals(KernelTableSpace.Load.LOADED, load(a), "the whole space is free again");
        assertEquals(new TableEntry.Slots(0, 0, 0, 0), a.slots);
    }

    @Test
    void mappingSlicesAreAllocatedApart() {
        assertEquals(0, space.allocateMappings(8));
        assertEquals(8, space.allocateMappings(8));
        assertEquals(-1, space.allocateMappings(5), "4 left");
        space.releaseMappings(0, 8);
        assertEquals(0, space.allocateMappings(5));
    }
}
