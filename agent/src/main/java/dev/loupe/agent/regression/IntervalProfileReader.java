package dev.loupe.agent.regression;

import dev.loupe.pprof.Label;
import dev.loupe.pprof.proto.Function;
import dev.loupe.pprof.proto.Line;
import dev.loupe.pprof.proto.Location;
import dev.loupe.pprof.proto.Mapping;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import dev.loupe.pprof.proto.ValueType;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads an interval latency profile's samples as the baselines keep them: per function (labels {@code binary},
 * {@code function}) and build ({@code build_id}), the stack by {@link StackFrame} (inlined lines as frames of
 * their own, leaf first, as pprof orders them) and only the labels {@code le_us} and {@code le_ns}: {@code pid},
 * {@code goid}, {@code comm} and any other per-process label are dropped, so calls of all processes of a build
 * merge.
 */
final class IntervalProfileReader {
    static final String CALLS = "calls";
    static final String COUNT = "count";
    static final String LATENCY = "latency";
    static final String NANOSECONDS = "nanoseconds";
    /** The labels a baseline sample keeps besides its function's, in this order. */
    static final List<String> KEPT_LABELS = List.of("le_us", "le_ns");

    interface SampleSink {
        /** @param buildId null when the sample has no {@code build_id} label */
        void accept(FunctionKey function, String buildId, SampleKey key, long calls, long nanos);
    }

    private IntervalProfileReader() {
    }

    /** True when {@code p} has the latency profile's sample types, calls/count then latency/nanoseconds. */
    static boolean isLatencyProfile(Profile p) {
        return p.getSampleTypeCount() == 2 && is(p, p.getSampleType(0), CALLS, COUNT)
                && is(p, p.getSampleType(1), LATENCY, NANOSECONDS);
    }

    private static boolean is(Profile p, ValueType t, String type, String unit) {
        return string(p, t.getType()).equals(type) && string(p, t.getUnit()).equals(unit);
    }

    /** Feeds every sample of a latency profile (see {@link #isLatencyProfile}) with a function to {@code sink}. */
    static void read(Profile p, Interner<Object> interner, SampleSink sink) {
        Map<Long, String> mappingFiles = new HashMap<>();
        for (Mapping m : p.getMappingList()) {
            mappingFiles.put(m.getId(), string(p, m.getFilename()));
        }
        Map<Long, Function> functions = new HashMap<>();
        for (Function f : p.getFunctionList()) {
            functions.put(f.getId(), f);
        }
        Map<Long, List<StackFrame>> frames = new HashMap<>();
        for (Location l : p.getLocationList()) {
            String mapping = mappingFiles.getOrDefault(l.getMappingId(), "");
            List<StackFrame> fs = new ArrayList<>(Math.max(1, l.getLineCount()));
            for (Line line : l.getLineList()) {
                Function f = functions.get(line.getFunctionId());
                String name = f == null ? null : string(p, f.getName());
                String file = f == null ? "" : string(p, f.getFilename());
                fs.add(frame(interner, mapping, name, file, line.getLine(), l.getAddress()));
            }
            if (fs.isEmpty()) {
                fs.add(frame(interner, mapping, null, "", 0, l.getAddress()));
            }
            frames.put(l.getId(), fs);
        }
        List<StackFrame> stack = new ArrayList<>();
        Label[] kept = new Label[KEPT_LABELS.size()];
        for (Sample s : p.getSampleList()) {
            if (s.getValueCount() != 2) {
                continue;
            }
            String binary = null;
            String function = null;
            String buildId = null;
            java.util.Arrays.fill(kept, null);
            for (dev.loupe.pprof.proto.Label l : s.getLabelList()) {
                String key = string(p, l.getKey());
                switch (key) {
                    case "binary" -> binary = string(p, l.getStr());
                    case "function" -> function = string(p, l.getStr());
                    case "build_id" -> buildId = string(p, l.getStr());
                    default -> {
                        int i = KEPT_LABELS.indexOf(key);
                        if (i >= 0) {
                            kept[i] = l.getStr() != 0 ? Label.str(key, string(p, l.getStr()))
                                    : Label.num(key, l.getNum(), string(p, l.getNumUnit()));
                        }
                    }
                }
            }
            if (binary == null || function == null) {
                continue;
            }
            stack.clear();
            for (long id : s.getLocationIdList()) {
                stack.addAll(frames.getOrDefault(id, List.of()));
            }
            List<Label> labels = new ArrayList<>(kept.length);
            for (Label l : kept) {
                if (l != null) {
                    labels.add(l);
                }
            }
            SampleKey key = (SampleKey) interner.intern(new SampleKey(stack.toArray(StackFrame[]::new), labels));
            sink.accept(new FunctionKey(binary, function), buildId == null || buildId.isEmpty() ? null : buildId,
                    key, Math.max(0, s.getValue(0)), Math.max(0, s.getValue(1)));
        }
    }

    private static StackFrame frame(Interner<Object> interner, String mapping, String function, String file, long line,
                                    long address) {
        return (StackFrame) interner.intern(new StackFrame(mapping, function, file, line, function == null ? address : 0));
    }

    private static String string(Profile p, long index) {
        return index >= 0 && index < p.getStringTableCount() ? p.getStringTable((int) index) : "";
    }
}
