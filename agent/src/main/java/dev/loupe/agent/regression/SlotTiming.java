package dev.loupe.agent.regression;

/**
 * Where calls recorded at a wall-clock time go. The window is {@value #WINDOW_SLOTS} slots of window/10 each,
 * aligned to multiples of the slot length: the current (partial) slot and the 9 before it, so between 90 % and
 * 100 % of the window. A slot leaving the window moves into a trailing slot of {@code trailingSlotMillis}: the
 * trailing span over 24, rounded down to whole window slots (at least one), 1 hour with the defaults; so the
 * trailing history is at most 25 slots however short the window.
 */
record SlotTiming(long slotMillis, long trailingSlotMillis, long windowMillis, long trailingSpanMillis, long warmupMillis) {
    static final int WINDOW_SLOTS = 10;
    static final int TRAILING_SLOTS = 24;
    /** The current build still runs (a previous build's calls are its old processes) while seen within this long. */
    private static final long MIN_HOLD_MILLIS = 60_000;

    static SlotTiming of(RegressionTracker.Settings s) {
        long window = s.window().toMillis();
        long slot = Math.max(1, window / WINDOW_SLOTS);
        long trailingSlot = Math.max(slot, s.trailingSpan().toMillis() / TRAILING_SLOTS / slot * slot);
        return new SlotTiming(slot, trailingSlot, window, s.trailingSpan().toMillis(), s.warmup().toMillis());
    }

    /** Start of the window slot holding {@code now}. */
    long slotStart(long now) {
        return Math.floorDiv(now, slotMillis) * slotMillis;
    }

    /** Slots starting before this have left the window. */
    long windowStart(long now) {
        return slotStart(now) - (WINDOW_SLOTS - 1) * slotMillis;
    }

    /** Start of the trailing slot holding {@code time}. */
    long trailingSlotStart(long time) {
        return Math.floorDiv(time, trailingSlotMillis) * trailingSlotMillis;
    }

    /**
     * Trailing slots ending at or before this are dropped: the trailing span before the window of the build's
     * last call, so an idle function keeps its last span of activity (until the next calls, or a deploy makes it
     * the previous build's baseline) instead of emptying overnight.
     */
    long trailingCutoff(long lastCall) {
        return windowStart(lastCall) - trailingSpanMillis;
    }

    /**
     * How long after its last call the current build still counts as running: the window, at least a minute
     * (longer than any interval between two records).
     */
    long holdMillis() {
        return Math.max(windowMillis, MIN_HOLD_MILLIS);
    }
}
