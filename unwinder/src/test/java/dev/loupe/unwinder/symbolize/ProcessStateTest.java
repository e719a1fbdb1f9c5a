package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.symbolize.ProcessState.Lookup;
import dev.loupe.unwinder.symbolize.ProcessState.Phase;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The re-read cycle of one process's state, at injected times (ns). */
class ProcessStateTest {
    static final long T = 1_000_000_000_000L;
    static final long MS = 1_000_000L;
    static final MapEntry APP = new MapEntry(0x401000, 0x402000, "r-xp", 0x1000, 8, 1, 777, "/opt/app", false);
    static final MapEntry LIB = new MapEntry(0x7f0000001000L, 0x7f0000002000L, "r-xp", 0x1000, 8, 1, 778, "/opt/lib.so", false);
    static final MapEntry VSYSCALL = new MapEntry(0xffffffffff600000L, 0xffffffffff601000L, "--xp", 0, 0, 0, 0, "[vsyscall]", false);

    @Test
    void readProcessIsUsedUntilRefreshAndNotForAnotherStartTime() {
        ProcessState p = ProcessState.read(500, List.of(APP), T, null, false);
        assertEquals(Phase.READ, p.phase());
        assertEquals(Lookup.USE, p.lookup(T + 14_999 * MS, 500));
        assertEquals(Lookup.USE, p.lookup(T + 14_999 * MS, -1), "start time unknown");
        assertEquals(Lookup.READ, p.lookup(T + 15_000 * MS, 500), "refresh due");
        assertEquals(Lookup.READ, p.lookup(T + MS, 501), "another process: read at once");
        p.mismatched(T + MS);
        assertEquals(Lookup.NONE, p.lookup(T + 2_000 * MS, 501), "read lately and still not that process");
        assertEquals(Lookup.READ, p.lookup(T + 2_001 * MS, 501));
        assertTrue(p.isOf(500) && p.isOf(-1) && !p.isOf(501));
    }

    @Test
    void missesRereadOnceEarlyThenEveryTwoSeconds() {
        ProcessState p = ProcessState.read(500, List.of(APP), T, null, false);
        assertFalse(p.takeMissReread(T + 99 * MS), "not within 100 ms of the read");
        assertEquals(Phase.READ, p.phase());
        assertTrue(p.takeMissReread(T + 100 * MS), "the one quick re-read");
        assertEquals(Phase.SETTLED, p.phase());
        assertFalse(p.takeMissReread(T + 2_099 * MS));
        assertTrue(p.takeMissReread(T + 2_100 * MS));
        assertFalse(p.takeMissReread(T + 2_200 * MS));

        ProcessState settled = ProcessState.read(500, List.of(APP), T, null, true);
        assertEquals(Phase.SETTLED, settled.phase(), "read on a miss: no quick re-read after it");
        assertFalse(settled.takeMissReread(T + 100 * MS));
        assertTrue(settled.takeMissReread(T + 2_000 * MS));
    }

    @Test
    void unreadableProcessIsRetriedEveryTwoSecondsAndLoggedOnce() {
        ProcessState p = ProcessState.unreadable(T);
        assertEquals(Phase.UNREADABLE, p.phase());
        assertFalse(p.readable());
        assertEquals(Lookup.NONE, p.lookup(T + 1_999 * MS, 500));
        assertEquals(Lookup.READ, p.lookup(T + 2_000 * MS, 500));
        assertEquals(-1, p.find(0x401000));
        assertFalse(p.firstFailure(), "its failure was logged when it was made");

        ProcessState read = ProcessState.read(500, List.of(APP), T, null, false);
        assertTrue(read.firstFailure());
        assertFalse(read.firstFailure());
        read.keptAfterFailedRefresh(T + 16_000 * MS);
        assertEquals(Lookup.USE, read.lookup(T + 30_000 * MS, 500), "an exited process keeps its mappings until the next refresh");
    }

    @Test
    void refreshOfTheSameProcessKeepsResolvedMappings() {
        ProcessState first = ProcessState.read(500, List.of(LIB, APP), T, null, false);
        MappingRef appRef = new MappingRef(APP.start(), APP.end(), APP.offset(), APP.path(), null, true);
        Binary app = new Binary.Failed("stands for a parsed binary");
        first.resolved(first.find(0x401800), app, appRef);
        first.resolved(first.find(0x7f0000001800L), Binary.UNREADABLE, new MappingRef(0, 0, 0, "", null, false));

        ProcessState refreshed = ProcessState.read(500, List.of(APP, LIB), T + 15_000 * MS, first, false);
        int i = refreshed.find(0x401800);
        assertSame(app, refreshed.binary(i));
        assertSame(appRef, refreshed.ref(i), "one MappingRef instance across the refresh");
        assertNull(refreshed.binary(refreshed.find(0x7f0000001800L)), "an unreadable file is tried again");

        ProcessState reused = ProcessState.read(600, List.of(APP), T + 15_000 * MS, first, false);
        assertNull(reused.binary(reused.find(0x401800)), "another process (pid reuse): nothing carried over");
        ProcessState moved = ProcessState.read(500, List.of(new MapEntry(0x401000, 0x403000, "r-xp", 0x1000, 8, 1, 777, "/opt/app", false)),
                T + 15_000 * MS, first, false);
        assertNull(moved.binary(0), "a changed mapping is resolved again");
    }

    @Test
    void findSortsMappingsAndComparesUnsigned() {
        ProcessState p = ProcessState.read(500, List.of(VSYSCALL, LIB, APP), T, null, false);
        assertEquals(APP, p.mapping(p.find(0x401000)));
        assertEquals(APP, p.mapping(p.find(0x401fff)));
        assertEquals(-1, p.find(0x402000));
        assertEquals(LIB, p.mapping(p.find(0x7f0000001234L)));
        assertEquals(VSYSCALL, p.mapping(p.find(0xffffffffff600400L)), "above every signed-positive address");
        assertEquals(-1, p.find(0x400fff));
        assertEquals(-1, p.find(-1L));
    }
}
