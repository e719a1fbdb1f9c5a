package dev.loupe.agent.regression;

/**
 * The cap on profile samples held in all baselines and windows together: new samples beyond it are left out,
 * and counted (the histograms, and so the verdicts, are exact whatever the cap).
 */
final class SampleBudget {
    private long left;
    private long droppedSamples;
    private long droppedCalls;

    /** Resets the room to {@code max - held}, keeping the counts of what was left out. */
    void refill(long max, long held) {
        left = max - held;
    }

    boolean take(long calls) {
        if (left > 0) {
            left--;
            return true;
        }
        droppedSamples++;
        droppedCalls += calls;
        return false;
    }

    long droppedSamples() {
        return droppedSamples;
    }

    long droppedCalls() {
        return droppedCalls;
    }
}
