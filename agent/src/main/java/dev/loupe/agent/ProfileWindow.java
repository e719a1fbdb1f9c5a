package dev.loupe.agent;

import dev.loupe.pprof.Label;
import dev.loupe.pprof.ProfileBuilder;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.MappingRef;

import java.util.List;

/** One profile being filled for a time window: the periodic file profile, or one HTTP request's. */
final class ProfileWindow {
    private final ProfileBuilder builder;
    private final long startNanos;
    private boolean finished;

    ProfileWindow(long periodNanos, long startEpochNanos) {
        this.builder = new ProfileBuilder(periodNanos, startEpochNanos);
        this.startNanos = startEpochNanos;
    }

    long startNanos() {
        return startNanos;
    }

    /** Adds one sample: frames leaf first (kernel frames, then user frames). */
    synchronized void add(List<Frame> frames, List<Label> labels) {
        if (finished) {
            return;
        }
        long[] ids = new long[frames.size()];
        for (int i = 0; i < ids.length; i++) {
            Frame f = frames.get(i);
            MappingRef m = f.mapping();
            long mappingId = m == null ? 0
                    : builder.mapping(m.start(), m.limit(), m.fileOffset(), m.path(), m.buildId(), m.hasFunctions());
            ids[i] = builder.location(mappingId, f.address(), f.function(), null);
        }
        builder.addSample(ids, 1, labels);
    }

    synchronized Profile finish(long endEpochNanos) {
        finished = true;
        return builder.build(endEpochNanos);
    }
}
