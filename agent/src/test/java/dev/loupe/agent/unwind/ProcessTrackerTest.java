package dev.loupe.agent.unwind;

import dev.loupe.unwinder.proc.ProcessRegistry;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcessTrackerTest {
    private static final long TICK = ProcessRegistry.NANOS_PER_TICK;

    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    private static ProcessTracker.Registration registration(long startTicks, List<TableEntry> tables) {
        return new ProcessTracker.Registration(startTicks, 0, 1, tables, 0, List.of());
    }

    @Test
    void anUnregisteredProcessIsQueuedOnceUntilTaken() {
        ProcessTracker t = new ProcessTracker(pid -> true, now::get);
        t.observe(7, 100 * TICK, true, false);
        t.observe(7, 100 * TICK, true, false);
        t.request(7);
        t.observe(8, 50 * TICK, true, false);
        assertEquals(7, t.next());
        assertEquals(8, t.next());
        assertNull(t.next(), "each queued once");
        t.observe(7, 100 * TICK, true, false);
        assertEquals(7, t.next(), "taken: a later sample queues it again");
    }

    @Test
    void aRegisteredProcessIsQueuedOnlyWhenStaleOrItsPidNowNamesAnotherProcess() {
        ProcessTracker t = new ProcessTracker(pid -> true, now::get);
        t.put(7, registration(100, List.of()));
        t.observe(7, 100 * TICK + TICK / 2, true, false); // the same start tick
        assertNull(t.next(), "registered for this process: a hash lookup, nothing queued");
        t.observe(7, 101 * TICK, true, false);
        assertEquals(7, t.next(), "another process with the same pid");
        t.markStale(7);
        assertFalse(t.isRegistered(7));
        t.observe(7, 100 * TICK, true, false);
        assertEquals(7, t.next(), "a table it needs was evicted");
    }

    @Test
    void samplesRefreshLastSeenAtMostOncePerSecond() {
        ProcessTracker t = new ProcessTracker(pid -> true, now::get);
        ProcessTracker.Registration r = new ProcessTracker.Registration(100, 0, 1, List.of(), now.get(), List.of());
        t.put(7, r);
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(999));
        t.observe(7, 100 * TICK, true, false);
        assertEquals(1_000_000_000L, r.lastSeen, "within a second: no write from the sampling thread");
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(2));
        t.observe(7, 100 * TICK, true, false);
        assertEquals(now.get(), r.lastSeen);
    }

    @Test
    void onlyWantedProcessesAreQueued() {
        ProcessTracker t = new ProcessTracker(pid -> pid == 7, now::get);
        t.observe(8, 100 * TICK, true, false);
        t.request(9);
        t.appeared(new ProcessRegistry.Snapshot(10, 5, List.of(), 0));
        t.observe(0, 100 * TICK, true, false);
        t.observe(-1, 100 * TICK, true, false);
        assertNull(t.next());
        t.mappingsChanged(new ProcessRegistry.Snapshot(7, 5, List.of(), 0));
        assertEquals(7, t.next(), "the registry's reads queue wanted processes too");
    }

    @Test
    void exitsCountOnlyForTheProcessTheyName() {
        ProcessTracker t = new ProcessTracker(pid -> true, now::get);
        t.put(7, registration(100, List.of()));
        t.put(8, registration(200, List.of()));
        t.put(9, registration(300, List.of()));
        t.exited(7, 100);
        t.exited(8, 150); // an earlier process with pid 8: the registered one runs on
        t.exited(11, 400); // never registered
        List<ProcessTracker.Exit> exits = t.takeExited();
        assertEquals(List.of(new ProcessTracker.Exit(7, 100), new ProcessTracker.Exit(8, 150), new ProcessTracker.Exit(11, 400)),
                exits, "every exit, registered or not, in order");
        assertEquals(List.of(true, false, false), exits.stream().map(t::registeredAs).toList(),
                "only the first names its registered process");
        assertEquals(List.of(), t.takeExited(), "reported once");
        assertEquals(Set.of(8), Set.copyOf(t.registeredNotIn(Set.of(7, 9, 12))), "7 is still registered until unregistered");
    }

    @Test
    void usersOfATableIncludeStaleProcessesAndCountOnlyLiveOnes() {
        ProcessTracker t = new ProcessTracker(pid -> true, now::get);
        TableEntry libc = new TableEntry("libc", "libc");
        TableEntry libm = new TableEntry("libm", "libm");
        t.put(7, registration(100, List.of(libc, libm)));
        t.put(8, registration(200, List.of(libm)));
        t.put(9, registration(300, List.of(libc)));
        t.markStale(9);
        assertEquals(Set.of(7, 9), Set.copyOf(t.usersOf(libc)));
        assertEquals(2, t.registeredCount());
        t.markStale(7);
        assertEquals(1, t.registeredCount());
        assertTrue(t.isRegistered(8));
    }

    @Test
    void aFailedProcessIsRetriedAfterTwoSeconds() {
        ProcessTracker t = new ProcessTracker(pid -> true, now::get);
        long failed = now.get();
        assertTrue(t.retryDue(7, failed));
        t.failed(7, failed);
        assertFalse(t.retryDue(7, failed + TimeUnit.MILLISECONDS.toNanos(1999)));
        assertTrue(t.retryDue(7, failed + TimeUnit.SECONDS.toNanos(2)));
        assertTrue(t.retryDue(8, failed), "per process");
        t.succeeded(7);
        assertTrue(t.retryDue(7, failed));
    }
}
