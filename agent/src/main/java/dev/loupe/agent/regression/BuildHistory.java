package dev.loupe.agent.regression;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * One build's calls by time: the window's slots and, behind them, the trailing slots, with a running total of
 * each so a verdict reads two histograms instead of merging slots. Slots move and expire in {@link #advance}.
 */
final class BuildHistory {
    private final Deque<Slot> window = new ArrayDeque<>(); // oldest first; only the newest is live
    private final Deque<Slot> trailing = new ArrayDeque<>(); // oldest first, all sealed
    private FineHistogram windowSum = new FineHistogram();
    private FineHistogram trailingSum = new FineHistogram();

    /** Restores one from its slots (as persisted), recomputing the totals. */
    static BuildHistory of(List<Slot> windowSlots, List<Slot> trailingSlots) {
        BuildHistory h = new BuildHistory();
        for (Slot s : windowSlots) {
            s.seal();
            h.window.addLast(s);
            h.windowSum.merge(s.histogram());
        }
        for (Slot s : trailingSlots) {
            s.seal();
            h.trailing.addLast(s);
            h.trailingSum.merge(s.histogram());
        }
        return h;
    }

    /** The slot that calls at {@code now} go to; the newest one if the clock went back. */
    Slot slotAt(long now, SlotTiming t) {
        long start = t.slotStart(now);
        Slot newest = window.peekLast();
        if (newest != null && start <= newest.start) {
            return newest;
        }
        if (newest != null) {
            newest.seal();
        }
        Slot s = new Slot(start, start + t.slotMillis());
        window.addLast(s);
        return s;
    }

    void add(FineHistogram calls, long now, SlotTiming t) {
        slotAt(now, t).add(calls);
        windowSum.merge(calls);
    }

    /**
     * Moves the slots that have left the window at {@code now} into the trailing history and drops trailing
     * slots older than the trailing span before {@code lastCall}'s window. True when anything moved or expired.
     */
    boolean advance(long now, long lastCall, SlotTiming t) {
        boolean changed = false;
        long windowStart = t.windowStart(now);
        while (!window.isEmpty() && window.peekFirst().start < windowStart) {
            Slot s = window.pollFirst();
            FineHistogram calls = s.histogram();
            windowSum = windowSum.minus(calls);
            trailingSum.merge(calls);
            long start = t.trailingSlotStart(s.start);
            Slot last = trailing.peekLast();
            if (last == null || start > last.start) {
                last = new Slot(start, start + t.trailingSlotMillis());
                trailing.addLast(last);
            }
            last.absorb(s); // a slot older than the newest trailing one (the clock went back) joins it
            last.seal();
            changed = true;
        }
        long cutoff = t.trailingCutoff(Math.min(now, lastCall));
        while (!trailing.isEmpty() && trailing.peekFirst().end <= cutoff) {
            trailingSum = trailingSum.minus(trailing.pollFirst().histogram());
            changed = true;
        }
        return changed;
    }

    FineHistogram windowSum() {
        return windowSum;
    }

    FineHistogram trailingSum() {
        return trailingSum;
    }

    List<Slot> windowSlots() {
        return List.copyOf(window);
    }

    List<Slot> trailingSlots() {
        return List.copyOf(trailing);
    }

    boolean isEmpty() {
        return window.isEmpty() && trailing.isEmpty();
    }

    /** Everything held, window and trailing, as one live slot spanning them (the previous build's baseline). */
    Slot collapse() {
        List<Slot> all = new ArrayList<>(trailing);
        all.addAll(window);
        if (all.isEmpty()) {
            return null;
        }
        Slot merged = new Slot(all.get(0).start, all.get(0).end);
        for (Slot s : all) {
            merged.absorb(s);
        }
        return merged;
    }

    /** Profile samples held, for the cap's accounting. */
    long sampleCount() {
        long n = 0;
        for (Slot s : window) {
            n += s.samples.size();
        }
        for (Slot s : trailing) {
            n += s.samples.size();
        }
        return n;
    }
}
