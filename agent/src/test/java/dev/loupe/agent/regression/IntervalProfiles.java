package dev.loupe.agent.regression;

import dev.loupe.pprof.Label;
import dev.loupe.pprof.ProfileBuilder;
import dev.loupe.pprof.proto.Profile;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Interval latency profiles as the agent's LatencyProfile writes them (sample types calls/count and
 * latency/nanoseconds; the probed function as the leaf in a mapping named after its binary; callers in their
 * libraries' mappings at process-specific addresses; labels function, binary, build_id, pid, comm, goid, le_us,
 * le_ns), and a readable form of any latency profile's samples.
 */
final class IntervalProfiles {
    /** One group of calls: the probed function {@code f} called from {@code callers} (leaf first). */
    record Group(FunctionKey f, String buildId, int pid, long goid, String comm, List<String> callers, long leUs,
                 long leNs, long calls, long nanos) {}

    private IntervalProfiles() {
    }

    static Profile of(List<Group> groups) {
        ProfileBuilder b = new ProfileBuilder(1L, List.of(new ProfileBuilder.SampleType("calls", "count"),
                new ProfileBuilder.SampleType("latency", "nanoseconds")), 0, 1);
        for (Group g : groups) {
            List<Long> stack = new ArrayList<>();
            long binary = b.mapping(0, 0x500000, 0, g.f().binary(), null, true);
            stack.add(b.location(binary, 0x401000, g.f().function(), null));
            // The caller's library is loaded at a different address in each process.
            long libStart = 0x7f0000000000L + g.pid() * 0x100000L;
            long lib = b.mapping(libStart, libStart + 0x100000, 0, "/usr/lib/libserve.so", "abc", true);
            for (int i = 0; i < g.callers().size(); i++) {
                stack.add(b.location(lib, libStart + 0x1000 * (i + 1), g.callers().get(i), null));
            }
            List<Label> labels = List.of(Label.str("function", g.f().function()), Label.str("binary", g.f().binary()),
                    Label.str("build_id", g.buildId()), Label.num("pid", g.pid()), Label.str("comm", g.comm()),
                    Label.num("goid", g.goid()), Label.num("le_us", g.leUs(), "microseconds"),
                    Label.num("le_ns", g.leNs(), "nanoseconds"));
            b.addSample(stack.stream().mapToLong(Long::longValue).toArray(), new long[] {g.calls(), g.nanos()}, labels);
        }
        return b.build(10_000_000_001L);
    }

    /**
     * Each sample as {@code "leaf<caller<... [key=value ...]"} → {@code [calls, nanos]}; a frame with a mapping is
     * prefixed by the mapping's file, labels in the sample's order.
     */
    static Map<String, List<Long>> samples(Profile p) {
        Map<String, List<Long>> out = new TreeMap<>();
        for (var s : p.getSampleList()) {
            StringBuilder text = new StringBuilder();
            for (long id : s.getLocationIdList()) {
                var loc = p.getLocation((int) id - 1);
                if (text.length() > 0) {
                    text.append('<');
                }
                if (loc.getMappingId() != 0) {
                    text.append(p.getStringTable((int) p.getMapping((int) loc.getMappingId() - 1).getFilename())).append(':');
                }
                text.append(p.getStringTable((int) p.getFunction((int) loc.getLine(0).getFunctionId() - 1).getName()));
            }
            text.append(" [");
            for (var l : s.getLabelList()) {
                text.append(p.getStringTable((int) l.getKey())).append('=')
                        .append(l.getStr() != 0 ? p.getStringTable((int) l.getStr()) : Long.toString(l.getNum())).append(' ');
            }
            text.setLength(text.length() - 1);
            text.append(']');
            List<Long> before = out.put(text.toString(), List.of(s.getValue(0), s.getValue(1)));
            if (before != null) {
                throw new AssertionError("two samples " + text + ": not merged");
            }
        }
        return out;
    }
}
