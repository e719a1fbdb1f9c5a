package dev.loupe.agent.regression;

/**
 * The calls of one span of wall time [start, end): their histogram and their profile samples. The slot being
 * written keeps a live histogram (about 2 KB); a sealed one keeps it as {@link HistogramBytes} (a few bytes per
 * non-empty bucket), since most slots are only read again when they move or expire.
 */
final class Slot {
    final long start;
    long end;
    private FineHistogram live;
    private byte[] sealed;
    final ProfileSamples samples;

    Slot(long start, long end) {
        this(start, end, new FineHistogram(), new ProfileSamples());
    }

    Slot(long start, long end, FineHistogram histogram, ProfileSamples samples) {
        this.start = start;
        this.end = end;
        this.live = histogram;
        this.samples = samples;
    }

    /** The calls (a copy when sealed: the caller may keep it). */
    FineHistogram histogram() {
        return live != null ? live : HistogramBytes.decode(sealed);
    }

    long calls() {
        return histogram().totalCount();
    }

    void add(FineHistogram calls) {
        unseal();
        live.merge(calls);
    }

    /** Adds {@code other}'s calls and samples; {@code other} is not used again. */
    void absorb(Slot other) {
        add(other.histogram());
        samples.absorb(other.samples);
        end = Math.max(end, other.end);
    }

    void seal() {
        if (live != null) {
            sealed = HistogramBytes.encode(live);
            live = null;
        }
    }

    private void unseal() {
        if (live == null) {
            live = HistogramBytes.decode(sealed);
            sealed = null;
        }
    }
}
