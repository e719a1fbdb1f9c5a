package dev.loupe.agent.latency;

import dev.loupe.agent.regression.FineHistogram;
import dev.loupe.bpf.LatencyHistogram;
import dev.loupe.pprof.Label;
import dev.loupe.pprof.ProfileBuilder;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.MappingRef;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The latency profile of one window, from the groups the kernel summed at each return: sample types
 * {@code calls/count} and {@code latency/nanoseconds}, one sample per (function, process, goroutine, caller
 * stack, bucket, fine bucket) with the calls and their exact total duration.
 *
 * <p>Locations: the probed function is the leaf, one location per function (in a mapping named after its
 * binary, at its link-time entry address); with {@code stacks: true} its callers follow, symbolized like the
 * CPU profile's frames ({@code [stack unavailable]} when the kernel's stack table was full). Labels:
 * {@code function}, {@code binary}, {@code pid} (numeric; {@code pid_namespace=outside} instead for processes
 * outside the agent's PID namespace), {@code comm}, {@code goid} (numeric, Go only), {@code build_id} (the
 * binary's GNU or Go build id, where it has one), {@code systemd_unit}, {@code systemd_user_unit} and
 * {@code container_id} (from the process's cgroup, where it says them),
 * {@code le_us}: the bucket's upper bound in microseconds (2^k), {@value #INF_LE_US} ({@code Long.MAX_VALUE})
 * for the +Inf bucket — numeric so that {@code -tagfocus=le_us=1024:} selects calls slower than 512 µs — and
 * {@code le_ns}: the fine bucket's upper bound in nanoseconds, exclusive (the sample's calls took less), as
 * {@code FineHistogram.upperBound} gives it, {@value #INF_LE_US} for the fine overflow bucket (from 2^42 ns).
 */
final class LatencyProfile {
    /** le_us of the +Inf bucket: no upper bound. */
    static final long INF_LE_US = Long.MAX_VALUE;
    static final String LOST_STACK = "[stack unavailable]";
    /** In place of {@code pid} for processes outside the agent's PID namespace (the kernel reports them as pid 0). */
    static final Label PID_OUTSIDE = Label.str("pid_namespace", "outside");
    private static final List<ProfileBuilder.SampleType> TYPES = List.of(
            new ProfileBuilder.SampleType("calls", "count"), new ProfileBuilder.SampleType("latency", "nanoseconds"));

    private LatencyProfile() {}

    static Profile build(List<ProbedFunction> functions, LatencyGroups groups, long timeNanos, long durationNanos) {
        ProfileBuilder b = new ProfileBuilder(timeNanos, TYPES, 0, 1);
        b.comment("one sample per function, process, goroutine (goid, Go only), caller stack, bucket and fine bucket"
                + " (le_us: upper bound in microseconds; " + INF_LE_US + " = +Inf; le_ns: fine bucket, calls shorter than it in"
                + " nanoseconds; " + INF_LE_US + " = none)");
        if (groups.droppedCalls() > 0) {
            b.comment(groups.droppedCalls() + " calls left out: too many groups in this window (/metrics is exact)");
        }
        Map<Integer, ProbedFunction> byId = new HashMap<>();
        Map<String, Long> limit = new HashMap<>();
        for (ProbedFunction f : functions) {
            byId.put(f.id(), f);
            limit.merge(f.binary(), f.entryAddress() + 1, Math::max);
        }
        List<Long> stack = new ArrayList<>();
        for (var e : groups.entries()) {
            LatencyGroups.Key k = e.getKey();
            LatencyGroups.Sums s = e.getValue();
            ProbedFunction f = byId.get(k.probe());
            if (f == null || s.calls == 0 && s.nanos == 0) {
                continue;
            }
            stack.clear();
            // The probed function: one location per function, in a mapping named after its binary.
            long binary = b.mapping(0, limit.get(f.binary()), 0, f.binary(), null, true);
            stack.add(b.location(binary, f.entryAddress(), f.function(), null));
            for (Frame fr : k.callers()) {
                MappingRef m = fr.mapping();
                long mapping = m == null ? 0 : b.mapping(m.start(), m.limit(), m.fileOffset(), m.path(), m.buildId(),
                        m.hasFunctions());
                if (fr.sourceLines().isEmpty()) {
                    stack.add(b.location(mapping, fr.address(), fr.function(), null));
                } else { // the binary's line table: file, line and inlined calls
                    long known = b.existingLocation(mapping, fr.address());
                    stack.add(known != 0 ? known : b.locationWithLines(mapping, fr.address(), fr.sourceLines().stream()
                            .map(l -> new ProfileBuilder.SourceLine(l.function(), l.file(), l.line(), l.startLine())).toList()));
                }
            }
            if (k.stackLost()) {
                stack.add(b.location(0, 0, LOST_STACK, null));
            }
            long le = k.bucket() < LatencyHistogram.FINITE_BUCKETS ? 1L << k.bucket() : INF_LE_US;
            List<Label> labels = new ArrayList<>(6);
            labels.add(Label.str("function", f.function()));
            labels.add(Label.str("binary", f.binary()));
            labels.add(k.pid() != 0 ? Label.num("pid", k.pid()) : PID_OUTSIDE); // 0: outside the agent's PID namespace
            labels.add(Label.str("comm", s.comm)); // left out when empty (not encodable)
            labels.add(Label.str("build_id", f.buildId())); // left out when empty
            for (var c : s.cgroup.asMap().entrySet()) {
                labels.add(Label.str(c.getKey(), c.getValue())); // systemd_unit, systemd_user_unit, container_id where known
            }
            if (f.spec().kind() == dev.loupe.bpf.ProbeSpec.Kind.GO) {
                labels.add(Label.num("goid", k.goid())); // left out when 0 (not encodable)
            }
            labels.add(Label.num("le_us", le, "microseconds"));
            labels.add(Label.num("le_ns", FineHistogram.upperBound(k.fineBucket()), "nanoseconds"));
            b.addSample(stack.stream().mapToLong(Long::longValue).toArray(), new long[] {s.calls, s.nanos}, labels);
        }
        return b.build(timeNanos + Math.max(1, durationNanos));
    }
}
