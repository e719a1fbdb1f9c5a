package dev.loupe.agent.regression;

import dev.loupe.pprof.Label;
import dev.loupe.pprof.ProfileBuilder;
import dev.loupe.pprof.proto.Profile;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Builds one latency profile from baseline or window samples, with the interval latency profiles' sample types
 * (calls/count, latency/nanoseconds, period 1 call) so that {@code go tool pprof -diff_base} compares them.
 * Labels: {@code function}, {@code binary}, {@code build_id}, then the kept {@code le_us}/{@code le_ns}. Each
 * frame is a location at address 0 (its function's) in a mapping named after its file; the profile has no
 * addresses, since the processes it merges loaded the binary at different ones.
 */
final class BaselineProfiles {
    static final List<ProfileBuilder.SampleType> TYPES = List.of(
            new ProfileBuilder.SampleType(IntervalProfileReader.CALLS, IntervalProfileReader.COUNT),
            new ProfileBuilder.SampleType(IntervalProfileReader.LATENCY, IntervalProfileReader.NANOSECONDS));

    /** One function's samples of one build (several parts of one function and build add up). */
    record Part(FunctionKey function, String buildId, ProfileSamples samples) {}

    private BaselineProfiles() {
    }

    static Profile build(long startMillis, long endMillis, List<String> comments, List<Part> parts) {
        ProfileBuilder b = new ProfileBuilder(startMillis * 1_000_000L, TYPES, 0, 1);
        comments.forEach(b::comment);
        // Mapping limits cover the addresses of the unsymbolized frames in them (pprof checks that they do).
        Map<String, Long> limits = new HashMap<>();
        for (Part part : parts) {
            part.samples().forEach((k, v) -> {
                for (StackFrame f : k.stack) {
                    limits.merge(f.mappingFile(), f.address() + 1, Math::max);
                }
            });
        }
        Map<StackFrame, Long> locations = new HashMap<>();
        for (Part part : parts) {
            List<Label> owner = List.of(Label.str("function", part.function().function()),
                    Label.str("binary", part.function().binary()), Label.str("build_id", part.buildId()));
            part.samples().forEach((k, v) -> {
                long[] ids = new long[k.stack.length];
                for (int i = 0; i < ids.length; i++) {
                    ids[i] = locations.computeIfAbsent(k.stack[i], f -> location(b, f, limits));
                }
                List<Label> labels = new ArrayList<>(owner.size() + k.labels.size());
                labels.addAll(owner);
                labels.addAll(k.labels);
                b.addSample(ids, new long[] {v[0], v[1]}, labels);
            });
        }
        return b.build(Math.max(endMillis, startMillis) * 1_000_000L);
    }

    private static long location(ProfileBuilder b, StackFrame f, Map<String, Long> limits) {
        long mapping = f.mappingFile().isEmpty() ? 0
                : b.mapping(0, limits.get(f.mappingFile()), 0, f.mappingFile(), null, true);
        return b.location(mapping, f.address(), f.function(), f.file().isEmpty() ? null : f.file());
    }
}
