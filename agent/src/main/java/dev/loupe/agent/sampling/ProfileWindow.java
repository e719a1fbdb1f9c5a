package dev.loupe.agent.sampling;

import dev.loupe.pprof.Label;
import dev.loupe.pprof.ProfileBuilder;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.MappingRef;

import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/** One profile being filled for a time window: the periodic file profile, or one HTTP request's. */
final class ProfileWindow {
    private final ProfileBuilder builder;
    private final long startMonotonicNanos;
    private final long startWallNanos;
    // Per-frame fast paths: the symbolizer hands out one MappingRef instance per mapping.
    private final Map<MappingRef, Long> mappingIds = new IdentityHashMap<>();
    private final LocationIds locationIds = new LocationIds();
    private boolean finished;

    /** A window opened at {@code startWallNanos} (written into the profile) and {@code startMonotonicNanos}. */
    ProfileWindow(long periodNanos, long startWallNanos, long startMonotonicNanos) {
        this.builder = new ProfileBuilder(periodNanos, startWallNanos);
        this.startWallNanos = startWallNanos;
        this.startMonotonicNanos = startMonotonicNanos;
    }

    long startMonotonicNanos() {
        return startMonotonicNanos;
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
            long mappingId = 0;
            if (m != null) {
                Long known = mappingIds.get(m);
                if (known == null) {
                    known = builder.mapping(m.start(), m.limit(), m.fileOffset(), m.path(), m.buildId(), m.hasFunctions());
                    mappingIds.put(m, known);
                }
                mappingId = known;
            }
            long id = locationIds.get(mappingId, f.address());
            if (id == 0) {
                id = builder.location(mappingId, f.address(), f.function(), null);
                locationIds.put(mappingId, f.address(), id);
            }
            ids[i] = id;
        }
        builder.addSample(ids, 1, labels);
    }

    /** Ends the window at {@code endMonotonicNanos}: its duration is monotonic, whatever the wall clock did. */
    synchronized Profile finish(long endMonotonicNanos) {
        finished = true;
        return builder.build(startWallNanos + Math.max(1, endMonotonicNanos - startMonotonicNanos));
    }
}
