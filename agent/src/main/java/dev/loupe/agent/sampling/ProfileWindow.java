package dev.loupe.agent.sampling;

import dev.loupe.pprof.Label;
import dev.loupe.pprof.ProfileBuilder;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.unwinder.lines.SourceLine;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.MappingRef;

import java.util.List;

/** One profile being filled for a time window: the periodic file profile, or one HTTP request's. */
final class ProfileWindow {
    private final ProfileBuilder builder;
    private final long startMonotonicNanos;
    private final long startWallNanos;
    private boolean finished;

    /** A window opened at {@code startWallNanos} (written into the profile) and {@code startMonotonicNanos}. */
    ProfileWindow(long periodNanos, long startWallNanos, long startMonotonicNanos) {
        this(new ProfileBuilder(periodNanos, startWallNanos), startWallNanos, startMonotonicNanos);
    }

    private ProfileWindow(ProfileBuilder builder, long startWallNanos, long startMonotonicNanos) {
        this.builder = builder;
        this.startWallNanos = startWallNanos;
        this.startMonotonicNanos = startMonotonicNanos;
    }

    /** Off-CPU profile types: waits (each weighted 1/P) and their time in nanoseconds, the period one nanosecond. */
    static final List<ProfileBuilder.SampleType> OFF_CPU_TYPES = List.of(new ProfileBuilder.SampleType("events", "count"),
            new ProfileBuilder.SampleType("off_cpu", "nanoseconds"));

    /** A window of an off-CPU profile ({@link #OFF_CPU_TYPES}; samples added with their values). */
    static ProfileWindow offCpu(long startWallNanos, long startMonotonicNanos) {
        return new ProfileWindow(new ProfileBuilder(startWallNanos, OFF_CPU_TYPES, 1, 1), startWallNanos, startMonotonicNanos);
    }

    long startMonotonicNanos() {
        return startMonotonicNanos;
    }

    /** Adds one sample: frames leaf first (kernel frames, then user frames). */
    synchronized void add(List<Frame> frames, List<Label> labels) {
        if (finished) {
            return;
        }
        builder.addSample(locations(frames), 1, labels);
    }

    /** Adds one sample of a window with its own sample types ({@link #offCpu}): one value per type. */
    synchronized void add(List<Frame> frames, List<Label> labels, long[] values) {
        if (finished) {
            return;
        }
        builder.addSample(locations(frames), values, labels);
    }

    private long[] locations(List<Frame> frames) {
        long[] ids = new long[frames.size()];
        MappingRef previous = null; // neighbouring frames mostly share a mapping (one MappingRef instance each)
        long mappingId = 0;
        for (int i = 0; i < ids.length; i++) {
            Frame f = frames.get(i);
            MappingRef m = f.mapping();
            if (m == null) {
                mappingId = 0;
            } else if (m != previous) {
                mappingId = builder.mapping(m.start(), m.limit(), m.fileOffset(), m.path(), m.buildId(), m.hasFunctions());
            }
            previous = m;
            // Within one window an address in a mapping names one function: the first name seen is kept.
            if (!f.sourceLines().isEmpty()) { // the binary's line table: file, line and inlined calls
                long known = builder.existingLocation(mappingId, f.address());
                ids[i] = known != 0 ? known : builder.locationWithLines(mappingId, f.address(), pprofLines(f.sourceLines()));
            } else if (f.file() != null || f.line() > 0) { // a runtime's frame with its source position
                ids[i] = builder.locationAt(mappingId, f.address(), f.function(), f.inlined(), f.file(), f.line());
            } else {
                ids[i] = f.inlined().isEmpty() ? builder.locationAt(mappingId, f.address(), f.function())
                        : builder.locationAt(mappingId, f.address(), f.function(), f.inlined());
            }
        }
        return ids;
    }

    /** The symbolizer's lines as pprof's (made once per new location). */
    static List<ProfileBuilder.SourceLine> pprofLines(List<SourceLine> lines) {
        List<ProfileBuilder.SourceLine> out = new java.util.ArrayList<>(lines.size());
        for (SourceLine l : lines) {
            out.add(new ProfileBuilder.SourceLine(l.function(), l.file(), l.line(), l.startLine()));
        }
        return out;
    }

    /** Ends the window at {@code endMonotonicNanos}: its duration is monotonic, whatever the wall clock did. */
    synchronized Profile finish(long endMonotonicNanos) {
        finished = true;
        return builder.build(startWallNanos + Math.max(1, endMonotonicNanos - startMonotonicNanos));
    }
}
