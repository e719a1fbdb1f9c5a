package dev.loupe.it;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Stacks as the real {@code go tool pprof -traces -sample_index=samples} prints them: one block per
 * distinct stack and label set, labels first ({@code key:  value}), then the count and the leaf frame,
 * then callers one per line.
 */
final class PprofTraces {
    record Trace(long count, List<String> frames, Map<String, String> labels) {
        /** Index of the first frame named {@code name}, or -1. */
        int indexOf(String name) {
            return frames.indexOf(name);
        }

        /** Whether the frames from {@code at} on begin with {@code chain}. */
        boolean chainAt(int at, List<String> chain) {
            return at >= 0 && frames.size() >= at + chain.size() && frames.subList(at, at + chain.size()).equals(chain);
        }

        boolean fallback() {
            return "frame_pointers".equals(labels.get("unwind"));
        }
    }

    private PprofTraces() {}

    static List<Trace> of(String... args) throws Exception {
        List<String> a = new ArrayList<>(List.of("-traces", "-sample_index=samples"));
        a.addAll(List.of(args));
        return parse(PprofTool.run(a.toArray(new String[0])));
    }

    static List<Trace> parse(String out) {
        List<Trace> traces = new ArrayList<>();
        String[] blocks = out.split("(?m)^-+\\+-+\\s*$");
        for (int b = 1; b < blocks.length; b++) {
            Map<String, String> labels = new LinkedHashMap<>();
            List<String> frames = new ArrayList<>();
            long count = -1;
            for (String line : blocks[b].split("\n")) {
                if (line.isBlank()) {
                    continue;
                }
                String t = line.strip();
                if (count < 0) {
                    int colon = t.indexOf(':');
                    if (colon > 0 && !Character.isDigit(t.charAt(0))) {
                        labels.put(t.substring(0, colon).strip(), t.substring(colon + 1).strip());
                        continue;
                    }
                    String[] parts = t.split("\\s+", 2);
                    count = Long.parseLong(parts[0]);
                    frames.add(parts.length > 1 ? parts[1].strip() : "?");
                } else {
                    frames.add(t);
                }
            }
            if (count >= 0) {
                traces.add(new Trace(count, List.copyOf(frames), Map.copyOf(labels)));
            }
        }
        return traces;
    }
}
