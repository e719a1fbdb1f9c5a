package dev.loupe.agent.regression;

/**
 * One probed function's builds and calls: the current build's {@link BuildHistory} and the previous build's
 * baseline, and which build id is which.
 *
 * <p>The current build is the one most recently seen with calls. A call of another build id is a deploy: the
 * current build's history (its last trailing span and window) becomes the previous build's baseline, and the new
 * build starts with an empty history. The exception is the previous build while the current one still runs
 * (seen within {@link SlotTiming#holdMillis()}): those are its old processes, and their calls join the previous
 * baseline. A rollback is a deploy back to the previous id: once the current build is no longer seen, the
 * previous build's calls make it current again, and the build rolled back from becomes the previous one.
 */
final class FunctionBaselines {
    /** What a {@link #record} did. */
    enum Change { NONE, CALLS, PREVIOUS_BUILD_CALLS, DEPLOY }

    final FunctionKey key;
    private String currentBuild;
    private long currentLastCall;
    private BuildHistory history;
    private String previousBuild; // null: no deploy seen
    private Slot previous;
    /** A new build's calls before this (wall millis) are its warm-up: neither in its window nor its history. */
    private long warmupEnd = Long.MIN_VALUE;

    FunctionBaselines(FunctionKey key) {
        this.key = key;
        this.history = new BuildHistory();
    }

    /** A restored one (from its file). */
    FunctionBaselines(FunctionKey key, String currentBuild, long currentLastCall, BuildHistory history,
                      String previousBuild, Slot previous) {
        this.key = key;
        this.currentBuild = currentBuild;
        this.currentLastCall = currentLastCall;
        this.history = history;
        this.previousBuild = previousBuild;
        this.previous = previous;
    }

    Change record(String buildId, FineHistogram calls, long now, SlotTiming t) {
        if (calls.totalCount() == 0) {
            return Change.NONE;
        }
        Change change = Change.CALLS;
        if (currentBuild == null) {
            currentBuild = buildId;
        } else if (!buildId.equals(currentBuild)) {
            boolean currentRuns = now - currentLastCall < t.holdMillis();
            if (buildId.equals(previousBuild) && currentRuns) {
                previous.add(calls);
                previous.end = Math.max(previous.end, t.slotStart(now) + t.slotMillis());
                return Change.PREVIOUS_BUILD_CALLS;
            }
            deploy(buildId, now, t);
            change = Change.DEPLOY;
        }
        history.advance(now, now, t);
        if (!warmingUp(now)) {
            history.add(calls, now, t);
        }
        currentLastCall = now;
        return change;
    }

    /**
     * Whether {@code now} is in the current build's warm-up: a fresh process's first calls are slower (cold
     * caches, page faults, a JIT, connection pools, and whatever else starts with a deploy), so a verdict on them
     * would call an equally fast build slower. Not kept in the baseline file: an agent restarted within a warm-up
     * counts the rest of it.
     */
    boolean warmingUp(long now) {
        return now < warmupEnd;
    }

    private void deploy(String buildId, long now, SlotTiming t) {
        history.advance(now, currentLastCall, t);
        Slot all = history.collapse();
        previous = all != null ? all : new Slot(t.slotStart(now), t.slotStart(now));
        previousBuild = currentBuild;
        currentBuild = buildId;
        history = new BuildHistory();
        warmupEnd = now + t.warmupMillis();
    }

    /** Moves slots out of the window and expires old ones; true when anything changed. */
    boolean advance(long now, SlotTiming t) {
        return history.advance(now, currentLastCall, t);
    }

    /**
     * Where the profile samples of {@code buildId}'s calls at {@code now} go: the current window slot, or the
     * previous build's baseline; null for a build with no recorded calls (record the interval first).
     */
    ProfileSamples samplesOf(String buildId, long now, SlotTiming t) {
        if (currentBuild == null) {
            return null;
        }
        if (buildId == null || buildId.equals(currentBuild)) {
            return warmingUp(now) ? null : history.slotAt(now, t).samples;
        }
        return buildId.equals(previousBuild) ? previous.samples : null;
    }

    String currentBuild() {
        return currentBuild;
    }

    long currentLastCall() {
        return currentLastCall;
    }

    BuildHistory history() {
        return history;
    }

    /** The previous build's id, null before the first deploy. */
    String previousBuild() {
        return previousBuild;
    }

    /** The previous build's baseline, null before the first deploy. */
    Slot previous() {
        return previous;
    }

    long sampleCount() {
        return history.sampleCount() + (previous == null ? 0 : previous.samples.size());
    }
}
